"""The work page loads once: after a submit the next unit comes with the answer and the page's
script draws it in place (no new document), for every protocol. What an annotator relies on:
the texts shown are the next unit's outputs in the order the engine chose for them (so answers
land on the right outputs), still as text, still without system names; the answers of a drawn unit
are stored for that unit; autosave, the skip button and the batch strip follow the drawn unit."""

import pytest

from annotations.models import Assignment, Item, Output
from tests.browser.conftest import browser_wait_until, log_in, next_screen, open_unit
from tests.browser.test_annotate import SYSTEMS, world  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _answer(page, protocol: str, n_outputs: int) -> None:
    """Answer the unit on screen with the keyboard only, as an annotator would."""
    keys = {
        "likert": ["3", "ArrowRight"],  # fluency 3, then the adequacy slider (focused) to 1
        "pairwise": ["b", "t"],
        "bws": ["1", "3"],  # best: the first output shown, worst: the third
        "esa": ["s", "End"],  # the score to 100
        "mqm": [],  # no error marked: a valid answer
    }.get(protocol)
    if protocol == "rankme":
        for i in range(n_outputs):
            page.keyboard.type(str(100 + 10 * i))
            if i < n_outputs - 1:
                page.keyboard.press("Tab")
        return
    if protocol == "cesa":
        keys = []
        for i in range(n_outputs):
            keys += ["s", "End"] + (["t", "ArrowDown"] if i < n_outputs - 1 else [])
    for key in keys:
        page.keyboard.press(key)


def _pending(campaign) -> Assignment:
    return Assignment.objects.filter(campaign=campaign, status="pending").latest("id")


@pytest.mark.parametrize("protocol", ["likert", "rankme", "pairwise", "bws", "esa", "cesa", "mqm"])
def test_three_units_in_a_row_on_one_page(page, world, protocol):  # noqa: F811
    campaign = world[protocol]
    log_in(page, "ann", "pw-123456")
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    documents = []
    page.on("request", lambda request: documents.append(request.url) if request.resource_type == "document" else None)
    page.evaluate("window.__samePage = 1")
    done = []
    for step in range(3):
        assignment = _pending(campaign)
        assert page.locator("body").get_attribute("data-assignment") == str(assignment.pk)
        # The outputs shown are this unit's, in the order the engine recorded for it, as text.
        texts = dict(Output.objects.filter(pk__in=assignment.shown_order).values_list("id", "text"))
        shown = page.locator(".output-card[data-output] .output-text").all_inner_texts()
        assert [t.strip() for t in shown] == [texts[i] for i in assignment.shown_order], step
        assert page.locator(".output-card img, .task-input b").count() == 0
        assert page.locator(".source-text").inner_text() == Item.objects.get(pk=assignment.item_id).source
        html = page.content()
        assert not any(name in html for name in SYSTEMS)
        assert page.evaluate("window.__pwned") is None
        _answer(page, protocol, len(assignment.shown_order))
        with next_screen(page):
            page.keyboard.press("Enter")
            if protocol == "esa" and step == 0 and page.locator("#esa-warning").is_visible():
                page.keyboard.press("Enter")
        done.append(assignment)
        assignment.refresh_from_db()
        assert assignment.status == "done", step
    # No page was loaded again: one document for three units.
    assert page.evaluate("window.__samePage") == 1
    assert documents == []
    for assignment in done:
        rows = {
            "likert": assignment.ratingjudgements,
            "rankme": assignment.ratingjudgements,
            "pairwise": assignment.pairwisejudgements,
            "bws": assignment.bestworstjudgements,
            "esa": assignment.spanjudgements,
            "cesa": assignment.spanjudgements,
            "mqm": assignment.spanjudgements,
        }[protocol].all()
        rows = list(rows)
        assert rows and all(r.origin == "browser" and r.status == "complete" for r in rows)
        if protocol == "bws":
            assert [(r.best_id, r.worst_id) for r in rows] == [(assignment.shown_order[0], assignment.shown_order[2])]
        elif protocol == "pairwise":
            assert sorted(r.winner for r in rows if r.criterion == "fluency") == ["tie"]
        elif protocol != "pairwise":
            # Every output shown got its answer, under its own id (the page's handles were this unit's).
            assert {r.output_id for r in rows} == set(assignment.shown_order)
            if protocol == "likert":
                assert sorted((r.criterion, r.score) for r in rows if r.output_id) == [
                    ("adequacy", 1.0),
                    ("fluency", 3.0),
                ]


def test_a_drawn_unit_autosaves_skips_and_shows_its_batch(page, world):  # noqa: F811
    campaign = world["likert"]
    log_in(page, "ann", "pw-123456")
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    first = _pending(campaign)
    _answer(page, "likert", 1)
    with next_screen(page):
        page.keyboard.press("Enter")
    second = _pending(campaign)
    assert second.pk != first.pk
    # The strip: the first unit done (it reopens), the second open now; the progress counts one.
    assert page.locator(".batch-unit.current").inner_text() == "2"
    assert page.locator("a.batch-unit.done").get_attribute("href") == f"/annotate/assignments/{first.pk}/revise/"
    assert page.locator("#batch-progress strong").inner_text().startswith("1 / ")
    # Autosave goes to the drawn unit, on the server too.
    page.keyboard.press("4")
    browser_wait_until(
        page, lambda: Assignment.objects.get(pk=second.pk).draft.get("fields"), 15, "the drawn unit's server autosave"
    )
    assert not Assignment.objects.get(pk=first.pk).draft or Assignment.objects.get(pk=first.pk).status == "done"
    # A reload shows the same unit with its answer restored.
    page.reload()
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.locator("body").get_attribute("data-assignment") == str(second.pk)
    assert page.locator('input[type=radio][value="4"]').first.is_checked()
    # Skip releases the drawn unit (not the first one) and shows another.
    with next_screen(page):
        page.get_by_role("button", name="Skip this unit").click()
    second.refresh_from_db()
    assert second.status != "pending" and second.status != "done"
    assert _pending(campaign).pk not in (first.pk, second.pk)
