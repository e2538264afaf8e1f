"""Issue 41 parts 3 and 4 in Debian's Chromium, at 390 px and with the keyboard only: a join-link
participant answers two background questions before the first unit, then judges one unit with a
comment and answers the next with a special answer; what is stored is what was entered, every text
is escaped and no system name reaches the page."""

import pytest

from annotations.models import BackgroundAnswer, RatingJudgement, UnitNote
from annotations.services.campaigns import campaign_create
from annotations.studies.services import join_link_create
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.browser.conftest import next_screen
from tests.browser.test_accessibility import audited_page, axe_script  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PID = "60a1b2c3d4e5f60718293a99"


@pytest.fixture
def study(live_server):
    dataset = DatasetFactory(name="extras-data")
    system = SystemFactory(dataset=dataset, name="SECRETSYS-1")
    for i in range(2):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"x-{i}", source=f"Input sentence {i}.")
        OutputFactory(item=item, system=system, text=f"Output {i}: the museum opens at {9 + i}.")
    campaign = campaign_create(
        dataset=dataset,
        name="Extras study",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        seed=3,
        units_per_batch=2,
        options={
            "special_answers": ["[missing]", "cannot judge"],
            "unit_text": "Comment <i>here</i>",
            "text_max_length": 200,
            "background": [
                {
                    "name": "native",
                    "label": "Native <b>language</b>",
                    "type": "choice",
                    "choices": ["English", "German"],
                },
                {"name": "years", "label": "Years of experience", "type": "number", "min": 0, "max": 60},
            ],
        },
    )
    link = join_link_create(campaign=campaign, completion_url=f"{live_server.url}/done/?cc={{code}}")
    return {"campaign": campaign, "link": link}


def _fits(page):
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_background_comment_and_special_answer_with_the_keyboard_at_390px(new_page, study, screenshot_dir):
    campaign, link = study["campaign"], study["link"]
    page = new_page(viewport={"width": 390, "height": 844})
    page.goto(f"/join/{link.token}/?PROLIFIC_PID={PID}&STUDY_ID=s1&SESSION_ID=x1")
    assert page.evaluate("document.activeElement.id") == "start"
    with page.expect_navigation():
        page.keyboard.press("Enter")

    # The background questions come first, escaped.
    assert page.url.endswith(f"/annotate/campaigns/{campaign.pk}/background/")
    assert page.get_by_text("Native <b>language</b>").is_visible()
    _fits(page)
    page.screenshot(path=str(screenshot_dir / "background-390.png"), full_page=True)
    page.locator("input[name=native]").first.focus()
    page.keyboard.press("ArrowDown")  # English -> German
    page.keyboard.press("Tab")
    page.keyboard.type("7")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    answer = BackgroundAnswer.objects.get(campaign=campaign)
    assert answer.answers == {"native": "German", "years": 7}

    # Back on the landing page, Start (focused) hands out the first unit.
    assert page.evaluate("document.activeElement.id") == "start"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.locator("body[data-unit-ready='1']").wait_for()
    html = page.content()
    assert "SECRETSYS" not in html
    assert page.get_by_text("Comment <i>here</i>").is_visible()
    _fits(page)
    page.screenshot(path=str(screenshot_dir / "unit-extras-390.png"), full_page=True)

    # Unit 1: a score with its key, a comment, Tab to Submit, Enter.
    page.keyboard.press("4")
    page.locator("#unit-text").focus()
    page.keyboard.type("Source <b>cut</b> off")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "unit-submit"
    with next_screen(page):
        page.keyboard.press("Enter")

    # Unit 2: no score, a special answer chosen with the arrow keys instead.
    page.locator("#special-0").focus()
    page.keyboard.press("ArrowDown")  # -> [missing]
    assert page.locator("#special-0").input_value() == "[missing]"
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "unit-submit"
    with next_screen(page):
        page.keyboard.press("Enter")

    judged = list(RatingJudgement.objects.filter(campaign=campaign).values_list("score", flat=True))
    assert judged == [4.0]
    notes = sorted((n.criterion, n.special, n.text) for n in UnitNote.objects.filter(campaign=campaign))
    assert notes == [("", "", "Source <b>cut</b> off"), ("fluency", "[missing]", "")]
    assert {n.annotator_id for n in UnitNote.objects.filter(campaign=campaign)} == {answer.annotator_id}


def test_an_esa_span_carries_its_note_typed_with_the_keyboard(new_page, live_server):
    from annotations.models import ErrorSpan, Membership
    from tests.annotations.factories import MembershipFactory, UserFactory
    from tests.browser.conftest import log_in, open_unit

    dataset = DatasetFactory(name="span-notes")
    system = SystemFactory(dataset=dataset, name="SECRETSYS-2")
    item = ItemFactory(dataset=dataset, position=0, external_id="s-0", source="Quelle.")
    OutputFactory(item=item, system=system, text="Output one says <b>nothing</b> here.")
    MembershipFactory(project=dataset.project, user=UserFactory(username="ann"), role=Membership.Role.ANNOTATOR)
    campaign = campaign_create(
        dataset=dataset,
        name="ESA notes",
        protocol="esa",
        criteria=["quality"],
        redundancy=1,
        seed=1,
        options={"span_text": "Why <this>?", "text_max_length": 50},
    )
    page = new_page(viewport={"width": 390, "height": 844})
    log_in(page, "ann", "pw-123456")
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    page.locator("#esa-text").focus()
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("2")  # a major error on the first two words
    note = page.get_by_label("Why <this>? (error 1)")
    note.focus()
    page.keyboard.type("wrong <term>")
    _fits(page)
    page.locator("#esa-text").focus()
    page.keyboard.press("s")  # to the score slider
    page.keyboard.press("PageUp")
    with next_screen(page):
        page.keyboard.press("Enter")
    span = ErrorSpan.objects.get(judgement__campaign=campaign)
    assert (span.start, span.end, span.severity, span.note) == (0, 10, "major", "wrong <term>")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_background_page_and_a_unit_with_every_field_pass_axe(audited_page, axe_script, live_server, width):
    from annotations.models import Membership
    from tests.annotations.factories import MembershipFactory, UserFactory
    from tests.browser.conftest import log_in
    from tests.browser.test_accessibility import assert_accessible

    dataset = DatasetFactory(name="axe-extras")
    system = SystemFactory(dataset=dataset, name="SECRETSYS-3")
    item = ItemFactory(dataset=dataset, position=0, external_id="a-0", source="Quelle.")
    OutputFactory(item=item, system=system, text="Output one says nothing here.")
    MembershipFactory(project=dataset.project, user=UserFactory(username="ann"), role=Membership.Role.ANNOTATOR)
    campaign = campaign_create(
        dataset=dataset,
        name="Axe extras",
        protocol="esa",
        criteria=["quality"],
        redundancy=1,
        options={
            "special_answers": ["[missing]"],
            "unit_text": "Comment",
            "span_text": "Why?",
            "background": [
                {"name": "native", "label": "Native language", "type": "choice", "choices": ["en", "de"]},
                {"name": "years", "label": "Years", "type": "number"},
                {"name": "field", "label": "Field", "type": "text", "required": False},
            ],
        },
    )
    page = audited_page(width)
    log_in(page, "ann", "pw-123456")
    page.goto(f"/annotate/campaigns/{campaign.pk}/")
    with page.expect_navigation():
        page.locator("#start").click()
    assert_accessible(page, axe_script, f"background questions at {width} px")
    page.get_by_label("de").check()
    page.get_by_label("Years").fill("3")
    with page.expect_navigation():
        page.locator("#background-submit").click()
    with page.expect_navigation():
        page.locator("#start").click()
    page.locator("body[data-unit-ready='1']").wait_for()
    page.locator("#esa-text").focus()
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("1")  # a minor error: its note field appears
    page.get_by_label("Why? (error 1)").wait_for()
    assert_accessible(page, axe_script, f"unit with special answers, comment and span note at {width} px")
