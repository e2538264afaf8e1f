"""Contrastive ESA in Debian's Chromium: a unit of three outputs done with the mouse and with the
keyboard only (moving between the outputs, marking spans, choosing severities, setting scores),
the judgements stored as sent, the page blind (no system name, outputs named by opaque handles in
the engine's counterbalanced order)."""

import pytest

from annotations.models import Output
from annotations.services.handles import output_handle
from tests.browser.conftest import log_in, next_screen
from tests.browser.test_annotate import SYSTEMS, _open, _submitted, world  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _cards(page, assignment):
    """The output cards, checked against the engine's order: card p shows shown_order[p], named by
    its handle, and no real output id or system name is in the page."""
    cards = page.locator("[data-span-card]")
    assert cards.count() == 3
    handles = [cards.nth(p).get_attribute("data-output") for p in range(3)]
    assert handles == [output_handle(assignment.pk, o) for o in assignment.shown_order]
    texts = dict(Output.objects.filter(pk__in=assignment.shown_order).values_list("pk", "text"))
    for p, output_id in enumerate(assignment.shown_order):
        assert cards.nth(p).locator("[data-esa-text]").inner_text() == texts[output_id]  # shown as text
    html = page.content()
    assert not any(name in html for name in SYSTEMS)
    assert not any(f'data-output="{o}"' in html or f'name="s-0-{o}"' in html for o in assignment.shown_order)
    assert page.locator("[data-span-card] img").count() == 0
    return cards


def _stored(rows, assignment):
    by_output = {r.output_id: r for r in rows}
    assert sorted(by_output) == sorted(assignment.shown_order)
    return [
        (by_output[o].score, list(by_output[o].spans.order_by("id").values_list("start", "end", "severity", "missing")))
        for o in assignment.shown_order
    ]


def test_cesa_with_the_mouse(page, world):  # noqa: F811
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["cesa"])
    cards = _cards(page, assignment)
    # Output 1: drag over its first two words, then "major".
    words = cards.nth(0).locator("[data-esa-text] span")
    first, second = words.nth(0).bounding_box(), words.nth(2).bounding_box()
    page.mouse.move(first["x"] + 1, first["y"] + first["height"] / 2)
    page.mouse.down()
    page.mouse.move(second["x"] + second["width"] - 1, second["y"] + second["height"] / 2)
    page.mouse.up()
    page.get_by_role("button", name="Mark major 2 in output 1").click()
    assert cards.nth(0).locator("[data-span-list] li").count() == 1
    assert cards.nth(1).locator("[data-span-list] li").count() == 0  # the other outputs keep theirs
    # Output 2: missing content, asked for its severity.
    page.get_by_role("button", name="Missing content M in output 2").click()
    cards.nth(1).locator("[data-missing-ask]").get_by_role("button", name="Major").click()
    assert cards.nth(1).locator("[data-span-list] li").count() == 1
    # Output 3: the second word, minor; then its severity changed to major in its list.
    words = cards.nth(2).locator("[data-esa-text] span")
    box = words.nth(2).bounding_box()
    page.mouse.move(box["x"] + 1, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 1, box["y"] + box["height"] / 2)
    page.mouse.up()
    page.get_by_role("button", name="Mark minor 1 in output 3").click()
    page.get_by_label("Severity of output 3, error 1").select_option("major")
    # Scores: a click on each output's slider, higher to the right.
    for p, share in enumerate((0.2, 0.5, 0.8)):
        slider = cards.nth(p).locator("input[type=range]")
        box = slider.bounding_box()
        page.mouse.click(box["x"] + box["width"] * share, box["y"] + box["height"] / 2)
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    stored = _stored(_submitted(page, assignment), assignment)
    scores = [s for s, _ in stored]
    assert scores[0] < scores[1] < scores[2] and 10 < scores[0] < 30 and 70 < scores[2] < 90
    # "Output i.j": 10 characters; the third output's second word "i.j" is characters 7-10.
    assert [spans for _, spans in stored] == [
        [(0, 10, "major", False)],
        [(None, None, "major", True)],
        [(7, 10, "major", False)],
    ]


def test_cesa_with_the_keyboard_and_the_low_score_warning(page, world):  # noqa: F811
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["cesa"])
    cards = _cards(page, assignment)
    # The first output's text has the focus on arrival.
    assert page.evaluate("document.activeElement.matches('[data-span-card]:nth-child(1) [data-esa-text]')")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("2")  # output 1: a major error over its first two words
    page.keyboard.press("s")  # to output 1's score
    for _ in range(3):
        page.keyboard.press("PageUp")  # 30
    page.keyboard.press("t")  # back to output 1's text
    page.keyboard.press("ArrowDown")  # output 2
    assert "Output 2 of 3" in page.locator("#unit-status").inner_text()
    page.keyboard.press("m")
    cards.nth(1).locator("[data-missing-ask]").wait_for(state="visible")
    page.keyboard.press("1")  # a minor missing-content marker in output 2
    page.keyboard.press("s")
    page.keyboard.press("End")  # 100
    page.keyboard.press("t")
    page.keyboard.press("ArrowDown")  # output 3
    page.keyboard.press("s")
    for _ in range(5):
        page.keyboard.press("PageUp")  # 50, and no error marked
    page.keyboard.press("Enter")
    page.locator("#esa-warning").wait_for(state="visible")  # warned, not blocked, naming output 3
    assert page.locator("#esa-warning-outputs").inner_text() == "3"
    page.keyboard.press("t")
    page.keyboard.press("ArrowRight")  # the second word
    page.keyboard.press("1")  # minor
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")  # back to output 1
    page.keyboard.press("Delete")  # the span at the cursor (its first word) is removed...
    assert cards.nth(0).locator("[data-span-list] li").count() == 0
    page.keyboard.press("ArrowLeft")  # the cursor stayed on the second word: back to the first
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("2")  # ...and marked again
    assert [cards.nth(p).locator("[data-span-list] li").count() for p in range(3)] == [1, 1, 1]
    # Autosave keeps every output's spans across a reload.
    page.reload()
    page.locator("body[data-unit-ready='1']").wait_for()
    assert [cards.nth(p).locator("[data-span-list] li").count() for p in range(3)] == [1, 1, 1]
    with next_screen(page):
        page.keyboard.press("Enter")
    stored = _stored(_submitted(page, assignment), assignment)
    assert stored == [
        (30.0, [(0, 10, "major", False)]),
        (100.0, [(None, None, "minor", True)]),
        (50.0, [(7, 10, "minor", False)]),
    ]


def test_a_done_cesa_unit_reopens_with_every_outputs_spans_and_scores(page, world):  # noqa: F811
    from annotations.services.submissions import unit_submit

    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["cesa"])
    first, second, third = assignment.shown_order
    unit_submit(
        annotator=assignment.annotator,
        assignment_id=assignment.pk,
        shown_order=assignment.shown_order,
        judgements=[
            {
                "criterion": "quality",
                "output": first,
                "score": 40,
                "spans": [{"start": 0, "end": 6, "severity": "major"}],
            },
            {"criterion": "quality", "output": second, "score": 70, "spans": []},
            {
                "criterion": "quality",
                "output": third,
                "score": 20,
                "spans": [{"start": 0, "end": 6, "severity": "minor"}, {"missing": True, "severity": "major"}],
            },
        ],
    )
    page.goto(f"/annotate/assignments/{assignment.pk}/revise/")
    page.locator("body[data-unit-ready='1']").wait_for()
    cards = _cards(page, assignment)
    assert [cards.nth(p).locator("[data-span-list] li").count() for p in range(3)] == [1, 0, 2]
    assert [cards.nth(p).locator(".slider-value").inner_text() for p in range(3)] == ["40", "70", "20"]
    # The second output gets an error and a lower score; the others stay as they were.
    page.locator("[data-span-card]").nth(1).locator("[data-esa-text]").focus()
    page.keyboard.press("1")  # a minor error on its first word
    page.keyboard.press("s")
    page.keyboard.press("PageDown")  # 60
    with next_screen(page):
        page.get_by_role("button", name="Save changes").click()
    rows = list(assignment.spanjudgements.all())
    assert _stored(rows, assignment) == [
        (40.0, [(0, 6, "major", False)]),
        (60.0, [(0, 6, "minor", False)]),
        (20.0, [(0, 6, "minor", False), (None, None, "major", True)]),
    ]


def test_cesa_on_a_touch_phone_marks_the_span_in_the_output_selected(new_page, world):  # noqa: F811
    """A phone selects with its handles (selection changes, no mouseup): the span goes to the card
    whose text holds the selection, and the cards stack without sideways scrolling."""
    page = new_page(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["cesa"])
    cards = _cards(page, assignment)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    boxes = [cards.nth(p).bounding_box() for p in range(3)]
    assert boxes[0]["y"] + boxes[0]["height"] <= boxes[1]["y"] and boxes[1]["x"] == boxes[0]["x"]  # stacked
    cards.nth(2).locator("[data-esa-text]").evaluate(
        """(root) => {
          const pieces = root.querySelectorAll('span');
          document.getSelection().setBaseAndExtent(pieces[0].firstChild, 0, pieces[2].firstChild,
                                                   pieces[2].textContent.length);
        }"""
    )
    page.get_by_role("button", name="Mark minor in output 3").tap()
    assert [cards.nth(p).locator("[data-span-list] li").count() for p in range(3)] == [0, 0, 1]
    for p in range(3):
        slider = cards.nth(p).locator("input[type=range]")
        slider.scroll_into_view_if_needed()
        box = slider.bounding_box()
        page.touchscreen.tap(box["x"] + box["width"] - 1, box["y"] + box["height"] / 2)
    with next_screen(page):
        page.get_by_role("button", name="Submit").tap()
    stored = _stored(_submitted(page, assignment), assignment)
    assert stored == [(100.0, []), (100.0, []), (100.0, [(0, 10, "minor", False)])]
