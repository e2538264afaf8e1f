"""MQM in Debian's Chromium: a unit annotated with the mouse and one with the keyboard only
(category picker, subcategory and severity keys), the spans and categories stored as chosen,
the score computed by the server, no system name on the page; axe at 1280 and 390 px; the set-up
form. The screenshots of docs/screenshots (annotate-mqm-1280.png, annotate-mqm-390.png) come
from the demo's MQM campaign in test_annotate_screenshots.py."""

import pytest

from annotations.models import Assignment, JudgementBase, Membership
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.browser.conftest import log_in, next_screen, open_unit
from tests.browser.test_accessibility import assert_accessible, audited_page, axe_script  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SYSTEMS = ("SECRETSYS-alpha", "SECRETSYS-beta")
TEXT = "The cat sat on teh mat <b>yesterday</b> and slept"


@pytest.fixture
def mqm(live_server):
    dataset = DatasetFactory(name="mqm-data")
    systems = [SystemFactory(dataset=dataset, name=name) for name in SYSTEMS]
    for i in range(3):
        item = ItemFactory(dataset=dataset, position=i, source=f"Die Katze saß {i} auf der Matte", external_id=f"s-{i}")
        for system in systems:
            OutputFactory(item=item, system=system, text=TEXT)
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    return campaign_create(
        dataset=dataset,
        name="MQM",
        protocol="mqm",
        criteria=["mqm"],
        redundancy=1,
        seed=3,
        instructions="Mark every **error**: its category, then its severity.",
    )


def _open(page, campaign):
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    html = page.content()
    assert not [name for name in SYSTEMS if name in html]  # blind: no system name
    assert "/api/outputs/" not in html
    return Assignment.objects.filter(campaign=campaign, status="pending").latest("id")


def _stored(assignment):
    assignment.refresh_from_db()
    assert assignment.status == "done"
    (row,) = assignment.spanjudgements.all()
    assert row.origin == JudgementBase.Origin.BROWSER and row.status == "complete"
    spans = sorted(
        ((s.start, s.end, s.severity, s.category, s.missing) for s in row.spans.all()),
        key=lambda s: (s[0] is not None, s[0] or 0),
    )
    return row, spans


def test_mqm_with_the_mouse(page, mqm):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, mqm)
    # Select "teh" (characters 15-18) with the mouse: a drag over its piece of text.
    text = page.locator("#esa-text")
    box = page.locator("#esa-text span", has_text="teh").first.bounding_box()
    page.mouse.move(box["x"] + 1, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 1, box["y"] + box["height"] / 2)
    page.mouse.up()
    page.get_by_role("button", name="Fluency F").click()
    ask = page.locator("#mqm-ask")
    ask.get_by_role("button", name="Spelling 2").click()
    ask.get_by_role("button", name="Minor 2").click()
    assert page.locator("#span-count").inner_text() == "1"
    assert "Fluency/Spelling" in page.locator("#span-list").inner_text()
    # An omission: Missing content, then Accuracy / Omission, Major.
    page.get_by_role("button", name="Missing content M").click()
    ask.get_by_role("button", name="Accuracy A").click()
    ask.get_by_role("button", name="Omission 2").click()
    ask.get_by_role("button", name="Major 3").click()
    # Change the first error's category in the list with the mouse.
    page.get_by_label("Category of error 1").select_option("Fluency/Grammar")
    assert text.locator(".err").count() >= 1
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    row, spans = _stored(assignment)
    assert spans == [(None, None, "major", "Accuracy/Omission", True), (15, 18, "minor", "Fluency/Grammar", False)]
    assert row.score == -6.0  # Major 5 + Minor 1, computed by the server (score_mqm.py's default weights)


def test_mqm_with_the_keyboard_only(page, mqm):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, mqm)
    # The text has the focus on arrival; the word cursor starts on "The".
    assert page.evaluate("document.activeElement.id") == "esa-text"
    for _ in range(4):
        page.keyboard.press("ArrowRight")  # to "teh"
    page.keyboard.press("f")  # Fluency
    assert page.locator("#mqm-ask").is_visible()
    page.keyboard.press("2")  # Spelling
    page.keyboard.press("2")  # Minor
    # "cat sat": a style error, then Escape cancels a started one.
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("s")  # Style
    page.keyboard.press("1")  # Awkward
    page.keyboard.press("1")  # Neutral
    page.keyboard.press("ArrowRight")
    page.keyboard.press("n")  # Non-translation! has no subcategory: straight to the severity
    page.keyboard.press("Escape")
    assert not page.locator("#mqm-ask").is_visible()
    page.keyboard.press("m")  # missing content: category by its letter, then severity
    page.keyboard.press("e")  # Source error
    page.keyboard.press("3")  # Major
    assert page.locator("#span-count").inner_text() == "3"
    with next_screen(page):
        page.keyboard.press("Enter")
    row, spans = _stored(assignment)
    assert spans == [
        (None, None, "major", "Source error", True),
        (4, 11, "neutral", "Style/Awkward", False),
        (15, 18, "minor", "Fluency/Spelling", False),
    ]
    assert row.score == -6.0


def test_an_unfinished_error_stops_the_submit_and_no_errors_is_an_answer(page, mqm):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, mqm)
    page.keyboard.press("a")
    page.keyboard.press("Enter")
    assert "Finish the error" in page.locator("#unit-errors").inner_text()
    page.keyboard.press("Escape")
    with next_screen(page):
        page.keyboard.press("Enter")
    row, spans = _stored(assignment)
    assert spans == [] and row.score == 0.0  # no error: MQM 0


def test_mqm_errors_survive_a_reload_and_a_revision(page, mqm):
    """The draft keeps each error's category (the marker's restore refuses spans without one);
    a done unit reopens with its categories, and a changed category is stored, re-scored."""
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, mqm)
    for _ in range(4):
        page.keyboard.press("ArrowRight")  # to "teh"
    page.keyboard.press("f")
    page.keyboard.press("2")  # Spelling
    page.keyboard.press("3")  # Major
    page.keyboard.press("m")
    page.keyboard.press("o")  # Other (no subcategory)
    page.keyboard.press("2")  # Minor
    page.reload()
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.locator("#span-count").inner_text() == "2"
    assert page.locator("#esa-text .err").inner_text() == "teh"
    rows = page.locator("#span-list li")
    assert rows.nth(0).get_by_label("Category of error 1").input_value() == "Fluency/Spelling"
    assert rows.nth(1).get_by_label("Category of error 2").input_value() == "Other"
    with next_screen(page):
        page.keyboard.press("Enter")
    row, spans = _stored(assignment)
    assert spans == [(None, None, "minor", "Other", True), (15, 18, "major", "Fluency/Spelling", False)]
    assert row.score == -6.0  # Major 5 + Minor 1

    page.goto(f"/annotate/assignments/{assignment.pk}/revise/")
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.locator("#span-count").inner_text() == "2"
    page.locator("#span-list li").nth(0).get_by_label("Category of error 1").select_option("Fluency/Punctuation")
    page.locator("#span-list li").nth(0).get_by_label("Severity of error 1").select_option("minor")
    with next_screen(page):
        page.get_by_role("button", name="Save changes").click()
    row, spans = _stored(assignment)
    assert spans == [(None, None, "minor", "Other", True), (15, 18, "minor", "Fluency/Punctuation", False)]
    assert row.score == pytest.approx(-1.1)  # Minor 1 + Minor/Fluency/Punctuation 0.1 (score_mqm.py's defaults)


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_mqm_page_accessible_and_fits(audited_page, axe_script, mqm, width, height):  # noqa: F811
    page = audited_page(width)
    log_in(page, "ann", "pw-123456")
    _open(page, mqm)
    assert_accessible(page, axe_script, f"mqm unit at {width} px")
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("f")
    page.keyboard.press("2")
    page.keyboard.press("3")  # a major spelling error on "teh"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("a")  # Accuracy: the subcategory question stays open
    assert_accessible(page, axe_script, f"mqm unit with a span and the category question at {width} px")
    page.set_viewport_size({"width": width, "height": height})
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_an_mqm_campaign_set_up_in_the_browser(page, live_server):
    """The set-up form: MQM shows its typology and weights; a bad typology is refused with its
    path; the preview shows the categories; the campaign is created with them."""
    import json

    from annotations.models import Campaign
    from tests.annotations.factories import ProjectFactory

    owner = UserFactory(username="owner")
    project = ProjectFactory(name="mqm-project")
    MembershipFactory(project=project, user=owner, role=Membership.Role.OWNER)
    dataset = DatasetFactory(name="mqm-set-up", project=project)
    system = SystemFactory(dataset=dataset, name="SECRETSYS-one")
    OutputFactory(item=ItemFactory(dataset=dataset, position=0, external_id="x"), system=system, text="A short text")
    log_in(page, "owner", "pw-123456")
    page.goto(f"/projects/{project.pk}/campaigns/new/")
    page.select_option("#id_dataset", str(dataset.pk))
    page.select_option("#id_protocol", "mqm")
    assert page.locator("#id_typology").is_visible() and page.locator("#id_mqm_weights").is_visible()
    page.fill("#id_name", "Set-up MQM")
    page.locator("#id_typology").fill(json.dumps([{"name": "Meaning", "children": [{"name": "Wrong/odd"}]}]))
    page.get_by_role("button", name="Create campaign").click()
    assert "[0].children[0].name" in page.content()
    page.locator("#id_typology").fill(
        json.dumps([{"name": "Meaning", "children": [{"name": "Wrong"}]}, {"name": "Form", "key": "o"}])
    )
    page.locator("#id_mqm_weights").fill("Major:10 Minor:2 Neutral:0 Minor/Form:0.5")
    page.get_by_role("button", name="Preview as an annotator").click()
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.get_by_role("button", name="Meaning E").is_visible()
    assert page.get_by_role("button", name="Form O").is_visible()
    page.get_by_role("button", name="Create campaign").click()
    page.wait_for_url("**/campaigns/*/")
    campaign = Campaign.objects.get(name="Set-up MQM")
    assert campaign.protocol == "mqm" and campaign.options["mqm_weights"] == "Major:10 Minor:2 Neutral:0 Minor/Form:0.5"
    assert [n["name"] for n in campaign.options["typology"]] == ["Meaning", "Form"]
    assert "Minor/Form:0.5" in page.content()  # the campaign page shows the weights
