"""ESA^AI in Debian's Chromium: a unit whose output comes with AI-suggested spans (from a done
`llm-judge` spans-mode run). The annotator accepts one suggestion, edits one, deletes one and
adds a span of their own; the stored decisions and the analysis figures follow. The page never
names the run's metric nor shows a score."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotations.models import Assignment, Membership, Output, SuggestionDecision
from annotations.services.campaigns import campaign_create
from tests.annotations.analysis.judge_runs import judge_run
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.browser.conftest import log_in, next_screen, open_unit
from tests.browser.test_accessibility import assert_accessible, axe_script  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXT = "The quick brown fox jumps over the lazy dog today"


def _span(word, severity):
    start = TEXT.index(word)
    return {"start": start, "end": start + len(word), "severity": severity}


@pytest.fixture
def esa_ai(live_server):
    dataset = DatasetFactory(name="esa-ai")
    system = SystemFactory(dataset=dataset, name="SECRETSYS")
    outputs = [
        OutputFactory(item=ItemFactory(dataset=dataset, position=i, external_id=f"x{i}"), system=system, text=TEXT)
        for i in range(2)
    ]
    # The judge's own severity "critical" maps to the campaign's most severe below it (major).
    run = judge_run(
        dataset,
        {o.pk: 0.123 for o in outputs},
        options={"mode": "spans"},
        extras={
            o.pk: {"spans": [_span("quick", "minor"), _span("fox", "critical"), _span("lazy", "minor")]}
            for o in outputs
        },
    )
    campaign = campaign_create(
        dataset=dataset, name="ESA-AI", protocol="esa", criteria=["quality"], seed=3, prefill_run=run.pk
    )
    MembershipFactory(project=dataset.project, user=UserFactory(username="ann"), role=Membership.Role.ANNOTATOR)
    MembershipFactory(project=dataset.project, user=UserFactory(username="res"), role=Membership.Role.RESEARCHER)
    return campaign


def test_accept_edit_delete_add(esa_ai, new_page, screenshot_dir, axe_script):  # noqa: F811
    page = new_page(bypass_csp=True)  # the injected axe-core engine needs it; the page's own scripts are files
    page.set_default_timeout(30_000)
    log_in(page, "ann", "pw-123456")
    open_unit(page, esa_ai.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    html = page.content()
    assert "llm-judge" not in html and "SECRETSYS" not in html and "0.123" not in html  # blind
    assert page.locator("#suggestion-list li").count() == 3
    assert page.locator("#esa-text .err.suggested").count() == 3  # marked in the text too
    # Screen readers: each suggestion is labelled as one, in its text and its buttons' names.
    assert page.locator("#suggestion-list li").first.text_content().startswith("AI suggestion")
    page.screenshot(path=str(screenshot_dir / "annotate-esa-ai-1280.png"), full_page=True)
    assert_accessible(page, axe_script, "ESA^AI unit with pending suggestions")

    # Sending with a suggestion still open is refused on the page.
    page.get_by_label("quality (0 to 100)").click()
    page.get_by_role("button", name="Submit").click()
    assert "still open" in page.locator("#esa-pending").inner_text()

    page.get_by_role("button", name="Accept AI suggestion 1").click()
    page.get_by_label("Severity of AI suggestion 2 (changing it edits the suggestion)").select_option("minor")
    page.get_by_role("button", name="Delete AI suggestion 3").click()
    assert page.locator("#suggestion-list li").count() == 0
    # Add one with the keyboard: the word cursor to "today" (the 10th word), then 2 = major.
    page.locator("#esa-text").focus()
    for _ in range(9):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("2")
    assert page.locator("#span-list li").count() == 3
    assert "AI suggestion, accepted" in page.locator("#span-list li").nth(0).text_content()
    assert "AI suggestion, edited" in page.locator("#span-list li").nth(1).text_content()
    assert_accessible(page, axe_script, "ESA^AI unit with decided suggestions")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    page.screenshot(path=str(screenshot_dir / "annotate-esa-ai-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    assignment = Assignment.objects.get(campaign=esa_ai, status="pending")
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    assignment.refresh_from_db()
    assert assignment.status == "done"

    (judgement,) = assignment.spanjudgements.all()
    spans = sorted(judgement.spans.values_list("start", "end", "severity"))
    assert spans == sorted(
        [
            tuple(_span("quick", "minor").values()),
            tuple(_span("fox", "minor").values()),
            tuple(_span("today", "major").values()),
        ]
    )
    decisions = {
        (d.decision, d.suggestion.position if d.suggestion else None, d.severity)
        for d in SuggestionDecision.objects.filter(judgement=judgement).select_related("suggestion")
    }
    assert decisions == {("accepted", 0, "minor"), ("edited", 1, "minor"), ("deleted", 2, ""), ("added", None, "major")}

    # Revised: the page starts where the unit was left (decided suggestions, the same spans), and
    # sending it again changes one severity; the decisions are recorded afresh.
    page.goto(f"/annotate/assignments/{assignment.pk}/revise/")
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.locator("#suggestion-list li").count() == 0 and page.locator("#span-list li").count() == 3
    assert "AI suggestion, accepted" in page.locator("#span-list li").nth(0).text_content()
    page.get_by_label("Severity of error 3").select_option("minor")
    with next_screen(page):
        page.get_by_role("button", name="Save changes").click()
    (judgement,) = assignment.spanjudgements.all()
    decisions = {
        (d.decision, d.suggestion.position if d.suggestion else None, d.severity)
        for d in SuggestionDecision.objects.filter(judgement=judgement).select_related("suggestion")
    }
    assert decisions == {("accepted", 0, "minor"), ("edited", 1, "minor"), ("deleted", 2, ""), ("added", None, "minor")}
    assert SuggestionDecision.objects.count() == 4  # the first answer's decisions went with its judgement

    out = StringIO()
    call_command("agreement", "--campaign", "ESA-AI", "--json", stdout=out)
    figures = json.loads(out.getvalue())["criteria"]["quality"]["suggestions"]
    assert figures["decisions"] == {"accepted": 1, "edited": 1, "deleted": 1, "added": 1}
    # Character sets: suggested quick, fox, lazy; marked quick, fox, today.
    chars = lambda words: {k for w in words for k in range(TEXT.index(w), TEXT.index(w) + len(w))}  # noqa: E731
    suggested, marked = chars(["quick", "fox", "lazy"]), chars(["quick", "fox", "today"])
    tp = len(suggested & marked)
    assert len(marked) == 13 and tp == 8
    shown = figures["agreement_with_suggestions"]["shown"]
    assert shown["precision"] == pytest.approx(tp / len(suggested))
    assert shown["recall"] == pytest.approx(tp / len(marked))
    assert shown["f1"] == pytest.approx(2 * tp / (len(suggested) + len(marked)))
    assert figures["agreement_with_suggestions"]["held_back"]["judgements"] == 0
    assert figures["automation_bias"] is None  # nothing held back

    research = new_page(bypass_csp=True)
    log_in(research, "res", "pw-123456")
    research.goto(f"/campaigns/{esa_ai.pk}/analysis/")
    for key in ("accepted", "edited", "deleted", "added"):
        assert research.locator(f"#sg-{key}").inner_text() == "1"
    assert research.locator("#suggestion-agreement tr[data-group=shown] .sg-f1").inner_text() == f"{shown['f1']:.3f}"
    assert_accessible(research, axe_script, "analysis dashboard with suggestion figures")


def test_suggestions_with_the_keyboard_only(page, esa_ai):
    page.set_default_timeout(30_000)
    log_in(page, "ann", "pw-123456")
    open_unit(page, esa_ai.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    assert "accept / edit the AI suggestion" in page.locator(".shortcuts").inner_text()
    page.locator("#esa-text").focus()
    page.keyboard.press("ArrowRight")  # "quick"
    assert "AI suggestion" in page.locator("#unit-status").inner_text()
    page.keyboard.press("a")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # "fox"
    page.keyboard.press("Delete")
    for _ in range(4):
        page.keyboard.press("ArrowRight")  # "lazy"
    page.keyboard.press("e")
    page.keyboard.press("Shift+ArrowRight")  # "lazy dog"
    page.keyboard.press("2")
    assert page.locator("#suggestion-list li").count() == 0
    page.keyboard.press("s")
    page.keyboard.press("End")
    assignment = Assignment.objects.get(campaign=esa_ai, status="pending")
    with next_screen(page):
        page.keyboard.press("Enter")
    (judgement,) = Assignment.objects.get(pk=assignment.pk).spanjudgements.all()
    start = TEXT.index("lazy")
    decisions = {
        (d.decision, d.suggestion.position if d.suggestion else None, d.start, d.end, d.severity)
        for d in SuggestionDecision.objects.filter(judgement=judgement).select_related("suggestion")
    }
    assert decisions == {
        ("accepted", 0, *_span("quick", "minor").values()),
        ("deleted", 1, None, None, ""),
        ("edited", 2, start, start + len("lazy dog"), "major"),
    }


# ---- contrastive ESA: suggestions on every output card -----------------------------------------

CESA_TEXTS = {"SYSA": "Alpha quick brown fox", "SYSB": "Beta quick brown fox", "SYSC": "Gamma quick brown fox"}


def _word(text, word, severity):
    start = text.index(word)
    return {"start": start, "end": start + len(word), "severity": severity}


@pytest.fixture
def cesa_ai(live_server):
    dataset = DatasetFactory(name="cesa-ai")
    item = ItemFactory(dataset=dataset, position=0, external_id="c0")
    outputs = {
        name: OutputFactory(item=item, system=SystemFactory(dataset=dataset, name=name), text=text)
        for name, text in CESA_TEXTS.items()
    }
    # Every output: its first word (minor) and "fox" (major) suggested.
    run = judge_run(
        dataset,
        {o.pk: -6.0 for o in outputs.values()},
        options={"mode": "spans"},
        extras={
            o.pk: {"spans": [_word(o.text, o.text.split()[0], "minor"), _word(o.text, "fox", "major")]}
            for o in outputs.values()
        },
    )
    campaign = campaign_create(
        dataset=dataset, name="cESA-AI", protocol="cesa", criteria=["quality"], seed=3, tuple_size=3, prefill_run=run.pk
    )
    MembershipFactory(project=dataset.project, user=UserFactory(username="ann"), role=Membership.Role.ANNOTATOR)
    return campaign


def test_cesa_suggestions_per_output(cesa_ai, new_page, screenshot_dir, axe_script):  # noqa: F811
    """Each cESA card lists its own output's suggestions; the mouse decides output 1's, the keyboard
    (Down to the next output, A / E / Delete at the word cursor) outputs 2 and 3; sending waits
    until all are decided; the decisions are stored per output and a revision restores them."""
    page = new_page(bypass_csp=True)
    page.set_default_timeout(30_000)
    log_in(page, "ann", "pw-123456")
    open_unit(page, cesa_ai.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    assignment = Assignment.objects.get(campaign=cesa_ai, status="pending")
    texts = [Output.objects.get(pk=o).text for o in assignment.shown_order]
    html = page.content()
    assert not any(name in html for name in CESA_TEXTS) and "llm-judge" not in html  # blind
    cards = page.locator("[data-span-card]")
    for p in range(3):
        assert cards.nth(p).locator("[data-suggestion-list] li").count() == 2
        assert cards.nth(p).locator(".err.suggested").count() == 2
        assert cards.nth(p).locator(".err.suggested").first.inner_text() == texts[p].split()[0]
    assert "accept / edit the AI suggestion" in page.locator(".shortcuts").inner_text()
    assert_accessible(page, axe_script, "cESA^AI unit with pending suggestions")
    page.screenshot(path=str(screenshot_dir / "annotate-cesa-ai-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    page.screenshot(path=str(screenshot_dir / "annotate-cesa-ai-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    for p in range(3):
        box = cards.nth(p).locator("input[type=range]").bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.85, box["y"] + box["height"] / 2)  # above 66: no warning
    page.get_by_role("button", name="Submit").click()
    assert "6 AI suggestions are still open (output 1, 2, 3)" in page.locator("#esa-pending").inner_text()

    # Output 1 with the mouse: accept the first, delete the second.
    page.get_by_role("button", name="Accept AI suggestion 1 of output 1").click()
    page.get_by_role("button", name="Delete AI suggestion 2 of output 1").click()
    assert cards.nth(0).locator("[data-suggestion-list] li").count() == 0
    assert cards.nth(1).locator("[data-suggestion-list] li").count() == 2  # the others keep theirs
    # Output 2 with the keys: accept its first word, then edit "fox" into "brown fox", minor.
    cards.nth(0).locator("[data-esa-text]").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("a")
    for _ in range(3):
        page.keyboard.press("ArrowRight")  # "fox"
    assert "AI suggestion, major error" in page.locator("#unit-status").inner_text()
    page.keyboard.press("e")
    page.keyboard.press("Shift+ArrowLeft")
    page.keyboard.press("1")
    # Output 3: delete both at the cursor.
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Delete")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Delete")
    assert page.locator("[data-suggestion-list] li").count() == 0
    assert "AI suggestion, edited" in cards.nth(1).locator("[data-span-list] li").nth(1).text_content()
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    assignment.refresh_from_db()
    assert assignment.status == "done"

    def decisions():
        by_output = {}
        for d in SuggestionDecision.objects.filter(judgement__assignment=assignment).select_related(
            "suggestion", "judgement"
        ):
            by_output.setdefault(d.judgement.output_id, set()).add(
                (d.decision, d.suggestion.position if d.suggestion else None, d.start, d.end, d.severity)
            )
        return [by_output.get(o, set()) for o in assignment.shown_order]

    first = [len(t.split()[0]) for t in texts]
    fox = [t.index("fox") for t in texts]
    brown = texts[1].index("brown")
    expected = [
        {("accepted", 0, 0, first[0], "minor"), ("deleted", 1, None, None, "")},
        {("accepted", 0, 0, first[1], "minor"), ("edited", 1, brown, fox[1] + 3, "minor")},
        {("deleted", 0, None, None, ""), ("deleted", 1, None, None, "")},
    ]
    assert decisions() == expected

    # Revised: every card starts decided, with its spans and their badges; sent again unchanged.
    page.goto(f"/annotate/assignments/{assignment.pk}/revise/")
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.locator("[data-suggestion-list] li").count() == 0
    assert [cards.nth(p).locator("[data-span-list] li").count() for p in range(3)] == [1, 2, 0]
    assert "AI suggestion, accepted" in cards.nth(0).locator("[data-span-list] li").first.text_content()
    with next_screen(page):
        page.get_by_role("button", name="Save changes").click()
    assert decisions() == expected
