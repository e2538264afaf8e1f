"""The annotator's day in Debian's Chromium (issue 20, part 5): revising earlier units of the batch,
the first control focused on arrival, "your batch n / N", the ESA slider's ticks and reachable
ends, span selection on a touch phone, the severity of missing content, right-to-left outputs
with exact character offsets, and no keyboard panel on touch screens. Screenshots of the revised
pages go to $WORKBENCH_SCREENSHOTS (docs/screenshots) when it is set."""

import pytest

from annotations.models import Assignment, Enrolment, Membership, RatingJudgement, SpanJudgement, Unit
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.browser.conftest import log_in, next_screen

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HEBREW = "התרגום הזה כמעט נכון לגמרי"  # "this translation is almost entirely right"
ARABIC = "هذه الترجمة جيدة جدا في المجمل"  # "this translation is very good overall"
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}


def _world(texts, *, protocol, criteria, units_per_batch=3, **options):
    dataset = DatasetFactory(name=f"day-{protocol}")
    system = SystemFactory(dataset=dataset, name="SECRETSYS")
    for i, text in enumerate(texts):
        item = ItemFactory(dataset=dataset, position=i, source=f"Source {i}", external_id=f"it-{i}")
        OutputFactory(item=item, system=system, text=text)
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    return campaign_create(
        dataset=dataset,
        name=f"Day {protocol}",
        protocol=protocol,
        criteria=criteria,
        redundancy=1,
        seed=3,
        units_per_batch=units_per_batch,
        **options,
    )


@pytest.fixture
def likert(live_server):
    return _world(
        [f"Output number {i}" for i in range(5)], protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5
    )


@pytest.fixture
def esa(live_server):
    return _world([f"Output {i}.0 has a few words" for i in range(4)], protocol="esa", criteria=["quality"])


def _arrive(page):
    """The unit page, through the campaign's landing page when there is one (its Start / Continue
    button, #start, hands the unit out with a POST)."""
    page.locator("body[data-unit-ready='1'], #start").first.wait_for()
    if page.locator("#start").count():
        page.locator("#start").click()
    _ready(page)


def _open(page, campaign):
    page.goto(f"/annotate/campaigns/{campaign.pk}/")
    _arrive(page)
    return Assignment.objects.filter(campaign=campaign, status="pending").latest("id")


def _ready(page):
    page.locator("body[data-unit-ready='1']").wait_for()  # a selector: polling a JS string needs eval (CSP)


def _counts(campaign):
    return (
        list(Enrolment.objects.filter(campaign=campaign).values_list("n_done", flat=True)),
        sorted(Unit.objects.filter(campaign=campaign).values_list("id", "n_done")),
    )


def _phone_shot(page, path):
    """A whole-page screenshot of a touch page: Playwright's full_page capture drops the touch
    media features ((hover: none), (pointer: coarse)), so the viewport is made as tall as the page."""
    page.evaluate("window.scrollTo(0, 0)")
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": 390, "height": height})
    page.screenshot(path=path)
    page.set_viewport_size(PHONE["viewport"])


def _focused(page, selector):
    return page.evaluate(f"document.activeElement.matches({selector!r})")


def test_revise_an_earlier_unit_until_the_batch_is_complete(new_page, likert, screenshot_dir):
    page = new_page()
    log_in(page, "ann", "pw-123456")
    first = _open(page, likert)
    # The first control has the focus on arrival, with a visible focus ring: the number keys work at once.
    assert _focused(page, "input[type=radio]")
    assert page.evaluate("getComputedStyle(document.activeElement.nextElementSibling).outlineStyle") == "solid"
    assert page.locator("#batch-progress").inner_text() == "Your batch: 0 / 3 done"
    assert "campaign" not in page.locator(".work-progress").inner_text().lower()  # researchers only
    with next_screen(page):
        page.keyboard.press("4")
        page.keyboard.press("Enter")
    second = _open(page, likert)
    assert page.locator("#batch-progress").inner_text() == "Your batch: 1 / 3 done"
    with next_screen(page):
        page.keyboard.press("2")
        page.keyboard.press("Enter")
    third = _open(page, likert)
    assert page.locator("#batch-progress").inner_text() == "Your batch: 2 / 3 done"
    strip = page.locator(".batch-strip")
    assert strip.inner_text().split() == ["1", "2", "3", "of", "3"]
    assert [a.get_attribute("href") for a in strip.locator("a.done").all()] == [
        f"/annotate/assignments/{first.pk}/revise/",
        f"/annotate/assignments/{second.pk}/revise/",
    ]
    assert page.locator(".batch-strip [aria-current=step]").inner_text() == "3"
    before = _counts(likert)

    # Reopen unit 1: its answer is shown, changed and saved again.
    page.get_by_role("link", name="Unit 1, submitted: reopen to change your answers").click()
    _ready(page)
    assert page.locator('input[type=radio][value="4"]').is_checked()
    assert page.get_by_role("button", name="Save changes").is_visible()
    assert page.locator("#skip-unit").count() == 0
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=screenshot_dir / f"annotate-revise-{width}.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.locator("fieldset").get_by_text("5", exact=True).click()
    with next_screen(page):
        page.get_by_role("button", name="Save changes").click()
    _arrive(page)
    (row,) = RatingJudgement.objects.filter(assignment=first)
    assert (row.score, row.status, row.origin) == (5, "complete", "browser")  # replaced
    assert RatingJudgement.objects.filter(campaign=likert).count() == 2  # nothing added
    assert RatingJudgement.objects.get(assignment=second).score == 2
    assert _counts(likert) == before  # nothing counted twice
    assert Assignment.objects.get(pk=third.pk).status == "pending"  # back on the unit in progress

    # The last unit of the batch: the batch is complete and its units are locked.
    with next_screen(page):
        page.keyboard.press("3")
        page.keyboard.press("Enter")
    _arrive(page)
    assert page.locator("#batch-progress").inner_text() == "Your batch 2: 0 / 3 done"
    assert page.locator(".batch-strip a.done").count() == 0
    response = page.goto(f"/annotate/assignments/{first.pk}/revise/")
    assert response.status == 400
    assert "batch is complete" in page.locator("[role=alert]").inner_text()
    page.screenshot(path=screenshot_dir / "annotate-revise-locked-1280.png", full_page=True)
    assert RatingJudgement.objects.get(assignment=first).score == 5


def test_esa_slider_ticks_and_ends_with_mouse_keyboard_and_touch(new_page, esa):
    page = new_page()
    log_in(page, "ann", "pw-123456")
    # Keyboard only, from the untouched slider (resting at 0): Home picks 0, End 100.
    _open(page, esa)
    assert page.locator(".slider-ticks .tick").all_inner_texts() == ["0", "25", "50", "75", "100"]
    value = page.locator(".slider-value")
    page.keyboard.press("s")
    page.keyboard.press("Home")
    assert value.inner_text() == "0"
    assert not page.locator("input[type=range]").evaluate("s => s.classList.contains('untouched')")
    page.keyboard.press("End")
    assert value.inner_text() == "100"
    with next_screen(page):
        page.keyboard.press("Enter")

    # The mouse, on the next unit: a click at the resting minimum is an answer too.
    _open(page, esa)
    slider = page.locator("input[type=range]")
    box = slider.bounding_box()
    middle = box["y"] + box["height"] / 2
    page.mouse.click(box["x"] + 1, middle)
    assert value.inner_text() == "0" and slider.input_value() == "0"
    page.mouse.click(box["x"] + box["width"] - 1, middle)
    assert value.inner_text() == "100"
    # The ticks sit under the positions they name (the thumb's centre at 0, 50 and 100).
    ticks = page.locator(".slider-ticks .tick")
    for index, share in ((0, 0), (2, 0.5), (4, 1)):
        tick = ticks.nth(index).bounding_box()
        centre = tick["x"] + tick["width"] / 2
        assert abs(centre - (box["x"] + 8 + share * (box["width"] - 16))) < 4, index
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()

    # Touch, on the next unit: a tap at either end.
    phone = new_page(**PHONE)
    log_in(phone, "ann", "pw-123456")
    _open(phone, esa)
    slider = phone.locator("input[type=range]")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    phone.touchscreen.tap(box["x"] + 1, box["y"] + box["height"] / 2)
    assert phone.locator(".slider-value").inner_text() == "0"
    phone.touchscreen.tap(box["x"] + box["width"] - 1, box["y"] + box["height"] / 2)
    assert phone.locator(".slider-value").inner_text() == "100"
    assert [j.score for j in SpanJudgement.objects.filter(campaign=esa)] == [100, 100]


def test_a_span_marked_on_a_touch_phone_and_missing_content_with_its_severity(new_page, esa, screenshot_dir):
    page = new_page(**PHONE)
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, esa)
    # No keyboard panel or key hints on a touch screen.
    assert not page.locator(".shortcuts").is_visible()
    assert not page.locator("#unit-submit kbd").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    output = page.locator("#esa-text").inner_text()
    # A phone selects with its handles: the selection changes, no mouse button goes up.
    page.locator("#esa-text").evaluate(
        """(root) => {
          const pieces = root.querySelectorAll('span');
          const sel = document.getSelection();
          sel.setBaseAndExtent(pieces[2].firstChild, 0, pieces[4].firstChild, pieces[4].textContent.length);
        }"""
    )
    page.get_by_role("button", name="Mark minor").tap()
    assert page.locator("#span-list li").count() == 1
    page.get_by_role("button", name="Missing content").first.tap()
    page.locator("#esa-missing-ask").get_by_role("button", name="Major").tap()
    assert page.locator("#span-list li").count() == 2
    slider = page.locator("input[type=range]")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    _phone_shot(page, screenshot_dir / "annotate-esa-touch-390.png")
    with next_screen(page):
        page.get_by_role("button", name="Submit").tap()
    (row,) = SpanJudgement.objects.filter(assignment=assignment)
    words = output.split(" ")
    start = len(words[0]) + 1
    expected = " ".join(words[1:3])
    spans = list(row.spans.order_by("id").values_list("start", "end", "severity", "missing"))
    assert spans == [(start, start + len(expected), "minor", False), (None, None, "major", True)]
    assert output[start : start + len(expected)] == expected

    desktop = new_page()
    log_in(desktop, "ann", "pw-123456")
    _open(desktop, esa)
    assert desktop.locator(".shortcuts").is_visible()  # a pointer with hover: the panel is there


@pytest.fixture
def rtl(live_server):
    return _world(
        [HEBREW, ARABIC, HEBREW + " 2", ARABIC + " 3"], protocol="esa", criteria=["quality"], units_per_batch=4
    )


def _rtl_unit(page, campaign):
    assignment = _open(page, campaign)
    text = Assignment.objects.get(pk=assignment.pk).unit.outputs[0]
    from annotations.models import Output

    output = Output.objects.get(pk=text).text
    assert page.locator("#esa-text").evaluate("e => getComputedStyle(e).direction") == "rtl"
    return assignment, output


def _expected(output, first_word, last_word):
    """Code-point offsets of words first..last (inclusive) of the output, from Python's own split."""
    words = output.split(" ")
    start = sum(len(w) + 1 for w in words[:first_word])
    text = " ".join(words[first_word : last_word + 1])
    assert output[start : start + len(text)] == text
    return start, start + len(text)


def test_rtl_outputs_render_right_to_left_and_spans_get_exact_offsets(new_page, rtl, screenshot_dir):
    page = new_page()
    log_in(page, "ann", "pw-123456")

    # Mouse: drag from the start of the second word (its right edge) to the end of the third (its left edge).
    assignment, output = _rtl_unit(page, rtl)
    words = page.locator("#esa-text span")
    second, third = words.nth(2).bounding_box(), words.nth(4).bounding_box()
    assert second["x"] > third["x"]  # laid out right to left
    page.mouse.move(second["x"] + second["width"] - 1, second["y"] + second["height"] / 2)
    page.mouse.down()
    page.mouse.move(third["x"] + 1, third["y"] + third["height"] / 2)
    page.mouse.up()
    page.get_by_role("button", name="Mark major").click()
    page.keyboard.press("s")
    page.keyboard.press("Home")
    page.screenshot(path=screenshot_dir / "annotate-esa-rtl-1280.png", full_page=True)
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    (row,) = SpanJudgement.objects.filter(assignment=assignment)
    start, end = _expected(output, 1, 2)
    assert list(row.spans.values_list("start", "end", "severity")) == [(start, end, "major")]

    # Keyboard: in right-to-left text the next word is to the left.
    assignment, output = _rtl_unit(page, rtl)
    assert _focused(page, "#esa-text")  # the text has the focus on arrival
    page.keyboard.press("ArrowLeft")  # to the second word
    page.keyboard.press("Shift+ArrowLeft")  # and the third
    page.keyboard.press("Shift+ArrowLeft")  # and the fourth
    page.keyboard.press("1")
    page.keyboard.press("s")
    page.keyboard.press("End")
    with next_screen(page):
        page.keyboard.press("Enter")
    (row,) = SpanJudgement.objects.filter(assignment=assignment)
    start, end = _expected(output, 1, 3)
    assert list(row.spans.values_list("start", "end", "severity")) == [(start, end, "minor")]
    assert row.score == 100

    # At 390 px the right-to-left unit still fits.
    phone = new_page(**PHONE)
    log_in(phone, "ann", "pw-123456")
    _rtl_unit(phone, rtl)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    _phone_shot(phone, screenshot_dir / "annotate-esa-rtl-390.png")
