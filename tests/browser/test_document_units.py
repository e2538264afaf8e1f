"""Campaign option context=document (issue 41) in Debian's Chromium at 390 px with the keyboard only:
a Hebrew document of three segments, cESA with its three systems side by side in every segment; the
segments in document order, read right to left, nine output cards each with its own spans and score,
no system name, no horizontal scroll, axe finds no serious violation; the scores typed are stored
per segment (the judgement's item is the segment's)."""

import pytest

from annotations.models import Assignment, Item, Membership, SpanJudgement
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
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

SYSTEMS = ("SECRETSYS-A", "SECRETSYS-B", "SECRETSYS-C")
HEBREW = ["המוזיאון נפתח בתשע בבוקר.", "הכניסה חופשית <b>לילדים</b>.", "הסיורים יוצאים כל שעה."]


@pytest.fixture
def document(live_server):
    dataset = DatasetFactory(name="hebrew-document")
    systems = [SystemFactory(dataset=dataset, name=name) for name in SYSTEMS]
    # Imported out of order (the default): doc_pos orders the segments.
    text = "Segment {k} by {s}: the museum <i>opens</i> at nine."
    document_items(dataset, systems, "museum", HEBREW, text=text, external_id="he-{k}")
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    return campaign_create(
        dataset=dataset,
        name="Museum documents",
        protocol="cesa",
        criteria=["quality"],
        redundancy=1,
        seed=3,
        units_per_batch=4,
        options={"tuple_size": 3, "context": "document"},
    )


def test_a_cesa_document_unit_at_390px_with_the_keyboard(audited_page, axe_script, document, screenshot_dir):  # noqa: F811
    campaign = document
    page = audited_page(390)
    log_in(page, "ann", "pw-123456")
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    assignment = Assignment.objects.get(campaign=campaign, status="pending")
    # The segments in document order, each source right to left, escaped.
    sources = page.locator(".doc-segment .doc-source")
    assert [t.strip() for t in sources.all_inner_texts()] == HEBREW
    assert set(sources.evaluate_all("els => els.map(e => getComputedStyle(e).direction)")) == {"rtl"}
    assert page.locator(".doc-segments b, .doc-segments i").count() == 0
    # Nine cards, segment by segment, in the order the server chose (the same system order per segment).
    cards = page.locator("[data-span-card]")
    assert cards.count() == 9
    handles = [cards.nth(p).get_attribute("data-output") for p in range(9)]
    assert handles == [output_handle(assignment.pk, o) for o in assignment.shown_order]
    html = page.content()
    assert not any(name in html for name in SYSTEMS)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(screenshot_dir / "document-unit-390.png"), full_page=True)
    assert_accessible(page, axe_script, "a cESA document unit at 390 px")

    # Keyboard only: on the first card a minor span (the first word); then every card's score from its
    # text ("s" to the slider, PageUp by 10, "t" back to the text, ArrowDown to the next card).
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("1")
    assert cards.nth(0).locator("[data-span-list] li").count() == 1
    for p in range(9):
        page.keyboard.press("s")
        for _ in range(7 + p % 3):
            page.keyboard.press("PageUp")
        page.keyboard.press("t")
        if p < 8:
            page.keyboard.press("ArrowDown")
    with next_screen(page):
        page.keyboard.press("Enter")

    stored = {j.output_id: j for j in SpanJudgement.objects.filter(assignment=assignment).select_related("output")}
    assert len(stored) == 9
    for p, output_id in enumerate(assignment.shown_order):
        j = stored[output_id]
        assert j.score == 10 * (7 + p % 3) and j.origin == "browser" and j.status == "complete"
        # Each judgement is its own segment's, shown with that segment's three outputs.
        assert j.item_id == j.output.item_id
        assert j.shown_order == list(assignment.shown_order[3 * (p // 3) : 3 * (p // 3) + 3])
        assert Item.objects.get(pk=j.item_id).doc_pos == p // 3
    first = stored[assignment.shown_order[0]]
    assert list(first.spans.values_list("start", "severity")) == [(0, "minor")]
