"""Issue 41, context window, in Debian's Chromium at 390 px with the keyboard only: a Hebrew document
whose segments are judged one at a time with their neighbours shown above and below, marked as
context; the neighbours follow the unit when the page's script draws the next one in place; the
texts stay text, read right to left, and axe-core finds no serious violation."""

import pytest

from annotations.models import Assignment, Item, RatingJudgement
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import (
    DatasetFactory,
    MembershipFactory,
    SystemFactory,
    UserFactory,
    document_items,
)
from tests.browser.conftest import log_in, next_screen, open_unit
from tests.browser.test_accessibility import assert_accessible, audited_page, axe_script  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# A short Hebrew text (right to left), one sentence a segment; each starts with a Hebrew letter, which
# sets the direction of a dir="auto" element (the first strong character).
HEBREW = ["המוזיאון נפתח בתשע בבוקר.", "הכניסה חופשית לילדים.", "הקפה בקומה <b>השנייה</b>.", "הסיורים יוצאים כל שעה."]


@pytest.fixture
def document(live_server):
    from annotations.models import Membership

    dataset = DatasetFactory(name="hebrew-doc")
    system = SystemFactory(dataset=dataset, name="SECRETSYS-9")
    text = "English {k}: <i>sentence</i> {k}."
    document_items(dataset, [system], "museum", HEBREW, text=text, external_id="he-{k}", reverse=False)
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    return campaign_create(
        dataset=dataset,
        name="Museum in context",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        seed=5,
        units_per_batch=4,
        options={"context": "window", "context_size": 1},
    )


def _expected(assignment: Assignment) -> tuple[list[int], list[int]]:
    k = Item.objects.get(pk=assignment.item_id).doc_pos
    return [j for j in (k - 1,) if j >= 0], [j for j in (k + 1,) if j < len(HEBREW)]


def _shown(page, side: str) -> list[str]:
    return [t.strip() for t in page.locator(f".doc-context-{side} .context-source").all_inner_texts()]


def test_the_window_around_each_unit_at_390px_with_the_keyboard(
    audited_page,  # noqa: F811
    axe_script,  # noqa: F811
    document,
    screenshot_dir,
):
    campaign = document
    page = audited_page(390)
    log_in(page, "ann", "pw-123456")
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    page.evaluate("window.__samePage = 1")
    for step in range(3):  # the first unit from the server, the next ones drawn by the page's script
        assignment = Assignment.objects.filter(campaign=campaign, status="pending").latest("id")
        before, after = _expected(assignment)
        assert _shown(page, "before") == [HEBREW[j] for j in before], step
        assert _shown(page, "after") == [HEBREW[j] for j in after], step
        outputs = page.locator(".doc-context .context-output").all_inner_texts()
        assert [o.strip() for o in outputs] == [f"Output: English {j}: <i>sentence</i> {j}." for j in before + after]
        for side in ("before", "after"):
            if before if side == "before" else after:
                heading = page.locator(f".doc-context-{side} h2").inner_text()
                assert "(context, not judged)" in heading
        # Right to left where the text is Hebrew; escaped (no <b> or <i> element made of the texts).
        directions = page.locator(".doc-context .context-source").evaluate_all(
            "els => els.map(e => getComputedStyle(e).direction)"
        )
        assert directions and set(directions) == {"rtl"}
        # An output's text takes its own direction too, beside its (English) label.
        assert page.locator(".doc-context .context-output span[dir='auto']").count() == len(before + after)
        assert page.locator(".doc-context b, .doc-context i").count() == 0
        assert "SECRETSYS" not in page.content()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # Nothing in the context takes the keyboard's focus away from the unit's questions.
        assert page.locator(".doc-context input, .doc-context button, .doc-context textarea").count() == 0
        if step == 0:
            page.screenshot(path=str(screenshot_dir / "document-context-390.png"), full_page=True)
            assert_accessible(page, axe_script, "unit with document context at 390 px")
        page.keyboard.press("3")
        with next_screen(page):
            page.keyboard.press("Enter")
        assert RatingJudgement.objects.get(assignment=assignment).score == 3.0
    assert page.evaluate("window.__samePage") == 1
    assert_accessible(page, axe_script, "drawn unit with document context at 390 px")
