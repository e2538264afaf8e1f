"""The protocol pages in Debian's Chromium: a unit of each completed with the
mouse and with the keyboard only, autosave across a reload, HTML in outputs shown as
text, and no system name on an annotator's page."""

import pytest

from annotations.models import Assignment, Campaign, JudgementBase, Membership
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ReferenceFactory,
    SystemFactory,
    UserFactory,
)
from tests.browser.conftest import browser_wait_until, built_once_per_session, log_in, next_screen, open_unit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVIL = '<script>window.__pwned = 1</script><img src="/evil.png" onerror="window.__pwned = 2"> sentence'
SYSTEMS = ("SECRETSYS-alpha", "SECRETSYS-beta", "SECRETSYS-gamma")


@pytest.fixture
def world(live_server, set_up_snapshots):
    """Seven campaigns, one per protocol, on one dataset, and their annotator "ann". About 50 tests
    in four modules ask for it: built once per session, then copied back (the same rows, ids
    included) for each test, which reads its campaigns afresh."""
    pks = built_once_per_session(set_up_snapshots, "world", _world)
    return {protocol: Campaign.objects.get(pk=pk) for protocol, pk in pks.items()}


def _world() -> dict[str, int]:
    dataset = DatasetFactory(name="browser-data")
    systems = [SystemFactory(dataset=dataset, name=name) for name in SYSTEMS]
    for i in range(4):
        item = ItemFactory(dataset=dataset, position=i, source=f"Source {i} <b>bold?</b>", external_id=f"it-{i}")
        ReferenceFactory(item=item, position=0, text=f"Reference {i}")
        for j, system in enumerate(systems):
            OutputFactory(item=item, system=system, text=f"Output {i}.{j} {EVIL} number {j}")
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    common = {"redundancy": 1, "seed": 5}
    campaigns = {
        "likert": campaign_create(
            dataset=dataset,
            name="Likert",
            protocol="likert",
            criteria=["fluency", "adequacy"],
            criteria_config=[
                {"name": "fluency", "scale_min": 1, "scale_max": 5},
                {"name": "adequacy", "scale_min": 0, "scale_max": 100},
            ],
            scale_min=1,
            scale_max=5,
            instructions="Rate **both**.",
            **common,
        ),
        "rankme": campaign_create(
            dataset=dataset, name="RankME", protocol="rankme", criteria=["quality"], tuple_size=3, **common
        ),
        "pairwise": campaign_create(
            dataset=dataset, name="Pairwise", protocol="pairwise", criteria=["quality", "fluency"], **common
        ),
        "bws": campaign_create(
            dataset=dataset, name="BWS", protocol="bws", criteria=["quality"], tuple_size=3, **common
        ),
        "esa": campaign_create(dataset=dataset, name="ESA", protocol="esa", criteria=["quality"], **common),
        "cesa": campaign_create(
            dataset=dataset, name="cESA", protocol="cesa", criteria=["quality"], tuple_size=3, **common
        ),
        "mqm": campaign_create(dataset=dataset, name="MQM", protocol="mqm", criteria=["mqm"], **common),
    }
    return {protocol: campaign.pk for protocol, campaign in campaigns.items()}


def _open(page, campaign):
    open_unit(page, campaign.pk)
    page.locator(
        "body[data-unit-ready='1']"
    ).wait_for()  # a selector: polling a JS string needs eval, which the CSP forbids
    html = page.content()
    for name in SYSTEMS:
        assert name not in html  # no system name reaches the annotator's page
    assert page.evaluate("window.__pwned") is None
    return Assignment.objects.filter(campaign=campaign, status="pending").latest("id")


def _submitted(page, assignment):
    """After the next page loaded: the unit was stored from the browser, complete."""
    assignment.refresh_from_db()
    assert assignment.status == "done"
    model = {
        "likert": "ratingjudgements",
        "rankme": "ratingjudgements",
        "pairwise": "pairwisejudgements",
        "bws": "bestworstjudgements",
        "esa": "spanjudgements",
        "cesa": "spanjudgements",
        "mqm": "spanjudgements",
    }[assignment.campaign.protocol]
    rows = list(getattr(assignment, model).all())
    assert rows and all(r.origin == JudgementBase.Origin.BROWSER and r.status == "complete" for r in rows)
    assert all(r.shown_order == assignment.shown_order for r in rows)
    # The time is the server's, the unit's own figure on every row; the page's timer is kept only
    # as a figure of its own, never above the server's.
    assert assignment.time_spent_ms is not None and all(r.time_spent_ms == assignment.time_spent_ms for r in rows)
    assert assignment.client_time_ms is None or assignment.client_time_ms <= assignment.time_spent_ms
    return rows


def _tab_to(page, selector, limit=40, key="Tab"):
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate(f"document.activeElement.matches({selector!r})"):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_likert_with_the_mouse(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["likert"])
    # Outputs with HTML are shown as text and run nothing.
    assert EVIL in page.locator(".output-text").inner_text()
    assert page.locator(".output-card img, .task-input b").count() == 0
    page.locator("fieldset").nth(0).get_by_text("4", exact=True).click()
    page.get_by_role("button", name="Submit").click()
    assert "adequacy" in page.locator("#unit-errors").inner_text()  # the slider must be moved
    page.get_by_label("adequacy (0 to 100)").click()
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    rows = _submitted(page, assignment)
    assert sorted((r.criterion, r.score) for r in rows)[1] == ("fluency", 4.0)


def test_likert_with_the_keyboard_and_autosave_across_a_reload(page, world, new_page):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["likert"])
    page.keyboard.press("3")  # fluency = 3, then the adequacy slider has the focus
    page.keyboard.press("ArrowRight")
    # The page saves to the server a moment after the last change: wait until the draft with the moved slider is stored.
    browser_wait_until(
        page, lambda: Assignment.objects.get(pk=assignment.pk).draft.get("touched"), 15, "the server autosave"
    )
    page.reload()
    page.locator(
        "body[data-unit-ready='1']"
    ).wait_for()  # a selector: polling a JS string needs eval, which the CSP forbids
    assert page.locator('input[type=radio][value="3"]').first.is_checked()
    assert page.locator(".slider-value").inner_text() == "1"
    # A fresh browser (no local storage) gets the draft from the server.
    fresh = new_page()
    log_in(fresh, "ann", "pw-123456")
    open_unit(fresh, world["likert"].pk)
    fresh.locator("body[data-unit-ready='1']").wait_for()
    assert fresh.locator('input[type=radio][value="3"]').first.is_checked()
    fresh.context.close()
    with next_screen(page):
        page.keyboard.press("Enter")
    rows = _submitted(page, assignment)
    assert sorted((r.criterion, r.score) for r in rows) == [("adequacy", 1.0), ("fluency", 3.0)]


def test_rankme_with_the_mouse(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["rankme"])
    inputs = page.locator("input[type=number]")
    for i in range(inputs.count()):
        inputs.nth(i).click()
        inputs.nth(i).fill(["150", "80", "150", "60"][i])
    assert page.locator(".rank-badge").first.inner_text() == "rank 1 (tie)"
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    rows = _submitted(page, assignment)
    assert sorted(r.rank for r in rows)[:2] == [1, 1]


def test_rankme_with_the_keyboard(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["rankme"])
    count = page.locator("input[type=number]").count()
    # The first field has the focus on arrival: typing works at once.
    assert page.evaluate("document.activeElement.matches('input[type=number]')")
    assert page.evaluate("document.activeElement === document.querySelectorAll('input[type=number]')[0]")
    for i in range(count):
        page.keyboard.type(str(100 + 10 * i))
        if i < count - 1:
            page.keyboard.press("Tab")
    with next_screen(page):
        page.keyboard.press("Enter")
    rows = _submitted(page, assignment)
    assert len(rows) == count


def test_pairwise_with_the_mouse(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["pairwise"])
    page.locator("fieldset").nth(0).get_by_text("A is better").click()
    page.locator("fieldset").nth(1).get_by_text("Tie").click()
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    rows = _submitted(page, assignment)
    first = assignment.shown_order[0]
    quality = next(r for r in rows if r.criterion == "quality")
    assert (quality.output_a_id if quality.winner == "a" else quality.output_b_id) == first


def test_pairwise_with_the_keyboard(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["pairwise"])
    page.keyboard.press("b")
    page.keyboard.press("t")
    with next_screen(page):
        page.keyboard.press("Enter")
    rows = _submitted(page, assignment)
    assert sorted(r.winner for r in rows if r.criterion == "fluency") == ["tie"]


def test_best_worst_with_the_mouse(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["bws"])
    page.locator("fieldset").nth(0).get_by_text("Output 2").click()
    page.locator("fieldset").nth(1).get_by_text("Output 2").click()
    page.get_by_role("button", name="Submit").click()
    assert "different" in page.locator("#unit-errors").inner_text()
    page.locator("fieldset").nth(1).get_by_text("Output 3").click()
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    (row,) = _submitted(page, assignment)
    assert (row.best_id, row.worst_id) == (assignment.shown_order[1], assignment.shown_order[2])


def test_best_worst_with_the_keyboard(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["bws"])
    page.keyboard.press("1")
    page.keyboard.press("3")
    with next_screen(page):
        page.keyboard.press("Enter")
    (row,) = _submitted(page, assignment)
    assert (row.best_id, row.worst_id) == (assignment.shown_order[0], assignment.shown_order[2])


def test_esa_with_the_mouse(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["esa"])
    text = page.locator("#esa-text")
    assert EVIL in text.inner_text()  # re-rendered for spans, still text only
    assert page.locator("#esa-text img").count() == 0
    words = text.locator("span")
    first, second = words.nth(0).bounding_box(), words.nth(2).bounding_box()
    page.mouse.move(first["x"] + 1, first["y"] + first["height"] / 2)
    page.mouse.down()
    page.mouse.move(second["x"] + second["width"] - 1, second["y"] + second["height"] / 2)
    page.mouse.up()
    page.get_by_role("button", name="Mark major").click()
    page.get_by_role("button", name="Missing content").first.click()
    # Missing content asks for its severity before it is added.
    assert page.locator("#span-list li").count() == 1
    page.locator("#esa-missing-ask").get_by_role("button", name="Major").click()
    assert page.locator("#span-list li").count() == 2
    assert page.get_by_label("Severity of error 2").input_value() == "major"
    slider = page.locator("input[type=range]")
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2)
    with next_screen(page):
        page.get_by_role("button", name="Submit").click()
    (row,) = _submitted(page, assignment)
    # The drag covered the first two words ("Output i.j": 10 characters).
    spans = list(row.spans.order_by("id").values_list("start", "end", "severity", "missing"))
    assert spans == [(0, 10, "major", False), (None, None, "major", True)]


def test_esa_with_the_keyboard_and_the_low_score_warning(page, world):
    log_in(page, "ann", "pw-123456")
    assignment = _open(page, world["esa"])
    page.keyboard.press("s")  # to the score slider
    page.keyboard.press("ArrowRight")  # score 1, no span yet
    page.keyboard.press("Enter")
    page.locator("#esa-warning").wait_for(state="visible")  # warned, not blocked
    _tab_to(page, "#esa-text", key="Shift+Tab")  # back from the slider to the text
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("2")  # major: the first two words
    page.keyboard.press("m")  # a missing-content marker: which severity?
    page.locator("#esa-missing-ask").wait_for(state="visible")
    page.keyboard.press("1")  # minor
    assert page.locator("#span-list li").count() == 2
    # Autosave keeps the spans across a reload.
    page.reload()
    page.locator(
        "body[data-unit-ready='1']"
    ).wait_for()  # a selector: polling a JS string needs eval, which the CSP forbids
    assert page.locator("#span-list li").count() == 2
    page.keyboard.press("s")
    page.keyboard.press("PageUp")
    with next_screen(page):
        page.keyboard.press("Enter")
    (row,) = _submitted(page, assignment)
    spans = list(row.spans.order_by("id").values_list("start", "end", "severity", "missing"))
    assert spans == [(0, 10, "major", False), (None, None, "minor", True)]  # "Output i.j"
    assert row.score == 11  # 1, restored after the reload, then +10


def test_a_phone_sized_page_has_no_horizontal_scroll(new_page, world):
    page = new_page(viewport={"width": 390, "height": 800})
    log_in(page, "ann", "pw-123456")
    for protocol, campaign in world.items():
        open_unit(page, campaign.pk)
        page.locator(
            "body[data-unit-ready='1']"
        ).wait_for()  # a selector: polling a JS string needs eval, which the CSP forbids
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, protocol


def test_the_set_up_preview_runs_the_previewed_protocols_script(page, demo):
    log_in(page, "demo", "demo")
    project = Membership.objects.filter(user__username="demo").first().project
    page.goto(f"/projects/{project.pk}/campaigns/new/")
    page.select_option("#id_protocol", "esa")
    page.fill("#id_name", "Previewed ESA")
    page.get_by_role("button", name="Preview as an annotator").click()
    page.locator("body[data-unit-ready='1']").wait_for()  # esa.js registered and started
    page.locator("#esa-text").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("2")  # a major error on the second word
    assert page.locator("#span-list li").count() == 1
    # ESA's criterion is on its 0-100 slider (the protocol's default scale, set when ESA was chosen).
    slider = page.locator("input[type=range]")
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.7, box["y"] + box["height"] / 2)
    page.get_by_role("button", name="Try submitting (preview)").click()
    assert "Preview: 1 answer(s) would be stored" in page.locator("#unit-status").inner_text()


def test_a_protocol_script_that_does_not_load_is_reported(page, world):
    log_in(page, "ann", "pw-123456")
    page.route("**/static/js/protocols/**", lambda route: route.abort())
    open_unit(page, world["likert"].pk)
    page.locator("#unit-errors").wait_for(state="visible")
    assert "did not load" in page.locator("#unit-errors").inner_text()
    assert page.locator("body[data-unit-ready='1']").count() == 0


def test_the_set_up_form_shows_each_protocols_own_fields(page, demo):
    """The fields shown for a protocol are the ones its class declares (setup_fields)."""
    from annotations import protocols

    log_in(page, "demo", "demo")
    project = Membership.objects.filter(user__username="demo").first().project
    page.goto(f"/projects/{project.pk}/campaigns/new/")
    every = {name for p in protocols.names() for name in protocols.get(p).setup_fields}
    assert every == {
        "anchor_value",
        "tuple_size",
        "severities",
        "pair_rounds",
        "prefill_run",
        "prefill_holdout",
        "typology",
        "mqm_weights",
        # Issue 41: the options every protocol has (span_text: the span protocols').
        "unit_text",
        "text_max_length",
        "special_answers",
        "background",
        "adaptive_criterion",
        "span_text",
        # Issue 41: the document context (every protocol) and relative attention checks (the
        # protocols showing several outputs on a screen).
        "context",
        "context_size",
        "doc_max_segments",
        "relative_checks",
        "relative_damage",
    }
    for name in protocols.names():
        page.select_option("#id_protocol", name)
        for field in every:
            visible = page.locator(f'[data-for="{field}"]').first.is_visible()
            assert visible == (field in protocols.get(name).setup_fields), (name, field)


@pytest.mark.parametrize("width", [1280, 390])
def test_choosing_esa_on_the_set_up_form_gives_its_0_100_scale(new_page, demo, width):
    """Issue 38 item 6: the criterion row keeps the form's 1-5 only while the researcher typed no
    scale of their own; choosing ESA puts ESA's default 0-100 there (as the API and the command
    line give), so the unit has the 0-100 slider the keyboard help describes."""
    page = new_page(viewport={"width": width, "height": 900})
    log_in(page, "demo", "demo")
    project = Membership.objects.filter(user__username="demo").first().project
    page.goto(f"/projects/{project.pk}/campaigns/new/")
    low, high = page.locator("#id_criteria-0-scale_min"), page.locator("#id_criteria-0-scale_max")
    assert (low.input_value(), high.input_value()) == ("1", "5")  # Likert, chosen first
    page.select_option("#id_protocol", "esa")
    assert (low.input_value(), high.input_value()) == ("0", "100")
    page.select_option("#id_protocol", "likert")  # and back: the scale nobody typed follows
    assert (low.input_value(), high.input_value()) == ("1", "5")
    page.select_option("#id_protocol", "esa")
    page.fill("#id_name", "ESA from the form")
    with next_screen(page):
        page.get_by_role("button", name="Create campaign").click()
    campaign = Campaign.objects.get(name="ESA from the form")
    assert (campaign.scale_min, campaign.scale_max) == (0, 100)
    assert campaign.criteria_configs()[0]["widget"] == Campaign.Widget.SLIDER

    page.goto(f"/projects/{project.pk}/campaigns/new/")
    page.locator("#id_criteria-0-scale_max").fill("7")  # a scale the researcher typed is kept
    page.select_option("#id_protocol", "esa")
    assert (low.input_value(), high.input_value()) == ("1", "7")
