"""Post-editing in Debian's Chromium: a unit post-edited and rated with the mouse, one with the
keyboard only (the text box has the focus on arrival, Ctrl+Enter sends, Esc puts the output back),
the next unit drawn with its own output in the box, the draft across a reload; the stored post-edit
and its HTER (sacrebleu's TER); no system name on the page; axe and no horizontal scroll at 1280
and 390 px."""

import pytest
from sacrebleu.metrics import TER

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


def _text(i: int, system: str) -> str:
    return f"The cat {i} sat on teh mat <b>yesterday</b> and {system[-4:]} slept"


@pytest.fixture
def world(live_server):
    dataset = DatasetFactory(name="pe-data")
    systems = [SystemFactory(dataset=dataset, name=name) for name in SYSTEMS]
    for i in range(3):
        item = ItemFactory(dataset=dataset, position=i, source=f"Die Katze {i} saß auf der Matte", external_id=f"s-{i}")
        for system in systems:
            OutputFactory(item=item, system=system, text=_text(i, system.name))
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    rated = campaign_create(
        dataset=dataset,
        name="Post-edit and rate",
        protocol="post-edit",
        criteria=["adequacy"],
        scale_min=0,
        scale_max=100,
        redundancy=1,
        seed=3,
    )
    plain = campaign_create(
        dataset=dataset, name="Post-edit", protocol="post-edit", criteria=["post-edit"], redundancy=1, seed=3
    )
    return {"rated": rated, "plain": plain}


def _open(page, campaign):
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    html = page.content()
    assert not [name for name in SYSTEMS if name in html]  # blind: no system name
    return Assignment.objects.filter(campaign=campaign, status="pending").latest("id")


def _stored(assignment):
    assignment.refresh_from_db()
    assert assignment.status == "done"
    (row,) = assignment.posteditjudgements.all()
    assert row.origin == JudgementBase.Origin.BROWSER and row.status == "complete"
    return row


def test_post_edit_and_rate_with_the_mouse(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["rated"])
    original = assignment.unit.outputs[0]
    box = page.get_by_label("Your post-edit")
    shown = box.input_value()
    assert shown == page.locator("#post-edit-original").inner_text()  # a copy of the output, markup as text
    assert "<b>yesterday</b>" in shown
    edited = shown.replace("teh", "the").replace("<b>yesterday</b> ", "")
    box.click()
    box.fill(edited)
    # No rating yet: the submit says what is missing, nothing is stored.
    page.get_by_role("button", name="Submit").click()
    assert "Still to answer: adequacy" in page.locator("#unit-errors").inner_text()
    page.locator("input[type=range]").click()  # a slider must be moved: a click on it counts
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    row = _stored(assignment)
    assert row.post_edit == edited and row.rating is not None
    from annotations.models import Output

    text = Output.objects.get(pk=original).text
    assert row.score == pytest.approx(TER().sentence_score(text, [edited]).score)
    # The next unit was drawn in place: its box holds its own output, not the one just edited.
    page.locator("body[data-unit-ready='1']").wait_for()
    nxt = Assignment.objects.filter(campaign=world["rated"], status="pending").latest("id")
    assert nxt.pk != assignment.pk
    assert page.get_by_label("Your post-edit").input_value() == Output.objects.get(pk=nxt.unit.outputs[0]).text


def test_post_edit_with_the_keyboard_only_and_a_reload(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["plain"])
    # The text box has the focus on arrival: type at once.
    assert page.evaluate("document.activeElement.tagName") == "TEXTAREA"
    page.keyboard.press("Control+End")
    page.keyboard.type(" again")
    page.keyboard.press("Escape")  # the output back as it was
    original = page.locator("#post-edit-original").inner_text()
    assert page.get_by_label("Your post-edit").input_value() == original
    page.keyboard.press("Control+Home")
    page.keyboard.press("Shift+End")
    page.keyboard.type("A cat sat on the mat.")
    page.keyboard.press("Enter")  # a new line, not a submit
    page.keyboard.type("It slept.")
    # The draft (this browser's copy, written as the text changes) keeps the edit across a reload.
    page.reload()
    page.locator("body[data-unit-ready='1']").wait_for()
    box = page.get_by_label("Your post-edit")
    assert box.input_value() == "A cat sat on the mat.\nIt slept."
    assert page.evaluate("document.activeElement.tagName") == "TEXTAREA"
    with next_screen(page):
        page.keyboard.press("Control+Enter")
    row = _stored(assignment)
    assert row.post_edit == "A cat sat on the mat.\nIt slept." and row.rating is None
    assert row.score == pytest.approx(TER().sentence_score(original, [row.post_edit]).score)


def test_an_emptied_box_is_not_sent(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["plain"])
    page.get_by_label("Your post-edit").fill("   ")
    page.keyboard.press("Control+Enter")
    assert "the post-edit (it is empty)" in page.locator("#unit-errors").inner_text()
    assignment.refresh_from_db()
    assert assignment.status == "pending"


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_post_edit_page_accessible_and_fits(audited_page, axe_script, world, width, height):  # noqa: F811
    page = audited_page(width)
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["rated"])
    assert_accessible(page, axe_script, f"post-edit unit at {width} px")
    page.set_viewport_size({"width": width, "height": height})
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    # Usable at this width: edit, rate with the keyboard (Tab from the box to the slider), send.
    page.get_by_label("Your post-edit").fill("The cat sat on the mat.")
    page.keyboard.press("Tab")
    page.keyboard.press("End")
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    row = _stored(assignment)
    assert row.post_edit == "The cat sat on the mat." and row.rating == 100.0
