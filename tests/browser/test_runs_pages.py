"""Issue 38's page fixes at 1280 and 390 px: the set-up form's help texts stay inside their
fields (MQM weights ran under the timeout's), the metric-run table shows Progress and Score on a
phone (one card per run), a queued run says why it waits, the judge's model picker offers causal
LMs only."""

import pytest

from annotations.models import Membership
from metrics.services import run_create, run_execute_sync
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.browser.conftest import log_in
from tests.metrics.conftest import build_dataset, judge_models  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BOXES = """() => [...document.querySelectorAll('.setup-grid > .field')].filter(f => f.offsetParent !== null)
  .map(f => { const r = f.getBoundingClientRect(); return {name: f.dataset.for, l: r.left, r: r.right, t: r.top,
    b: r.bottom, inner: [...f.children].every(c => c.getBoundingClientRect().right <= r.right + 1)}; })"""


@pytest.mark.parametrize("width", (1280, 390))
def test_setup_help_texts_stay_inside_their_fields(new_page, live_server, width, screenshot_dir):
    owner = UserFactory(username="owner")
    dataset = DatasetFactory(name="help-texts")
    MembershipFactory(project=dataset.project, user=owner, role=Membership.Role.OWNER)
    OutputFactory(item=ItemFactory(dataset=dataset, position=0), system=SystemFactory(dataset=dataset), text="x")
    page = new_page(viewport={"width": width, "height": 900})
    log_in(page, "owner", "pw-123456")
    page.goto(f"/projects/{dataset.project_id}/campaigns/new/")
    page.select_option("#id_protocol", "mqm")
    boxes = page.evaluate(BOXES)
    assert {"mqm_weights", "assignment_timeout_minutes"} <= {b["name"] for b in boxes}
    assert all(b["inner"] for b in boxes), [b["name"] for b in boxes if not b["inner"]]
    overlaps = [
        (a["name"], b["name"])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a["l"] < b["r"] - 1 and b["l"] < a["r"] - 1 and a["t"] < b["b"] - 1 and b["t"] < a["b"] - 1
    ]
    assert not overlaps
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.locator("#id_mqm_weights").scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / f"setup-mqm-{width}.png")


@pytest.mark.parametrize("width", (1280, 390))
def test_metric_run_table_shows_progress_and_score_and_why_a_run_waits(
    new_page, live_server, width, settings, judge_models, screenshot_dir, no_worker
):
    from pathlib import Path

    settings.WORKBENCH_MODEL_DIRS = [str(Path(judge_models["llama"]).parent)]
    dataset = build_dataset(name="runs-table", items=3, systems=2)
    MembershipFactory(project=dataset.project, user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER)
    done = run_execute_sync(run=run_create(dataset=dataset, metric="chrf", sync=True)[0])
    waiting, _ = run_create(dataset=dataset, metric="bleu")  # no worker takes it (no_worker): it stays queued
    page = new_page(viewport={"width": width, "height": 900})
    log_in(page, "rita", "pw-123456")
    page.goto(f"/datasets/{dataset.pk}/")
    row = page.locator(f'tr[data-run-id="{done.pk}"]')
    row.wait_for()
    for field in ("progress", "score"):
        box = row.locator(f'[data-field="{field}"]').bounding_box()
        assert box and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= width, (field, box)
    assert row.locator('[data-field="score"]').inner_text().endswith(f"{done.corpus['score']:.4f}")
    assert "(100%)" in row.locator('[data-field="percent"]').inner_text()
    queued = page.locator(f'tr[data-run-id="{waiting.pk}"] [data-field="waiting"]')
    assert queued.inner_text() == "queued: waiting for a worker of the cpu queue; 0 tasks of earlier runs ahead"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.locator("#metric-runs").screenshot(path=screenshot_dir / f"metric-runs-{width}.png")
    # The judge's model picker lists local causal LMs, never the packaged encoder.
    page.locator("#metric-select").select_option("llm-judge")
    picker = page.locator('[data-option="model"]')
    offered = picker.locator("option").all_inner_texts()
    assert not any("all-MiniLM-L6-v2" in o for o in offered) and offered[-1] == "another directory…"
    assert "llama (LlamaForCausalLM)" in offered and "gpt2 (GPT2LMHeadModel)" in offered


@pytest.mark.parametrize("width", (1280, 390))
def test_analysis_pages_show_a_progress_state_while_the_figures_load(new_page, live_server, width):
    """The meta-evaluation took ~20 s on its first load and on each filter change, with nothing
    to show meanwhile. Its response is held here until the state has been seen."""
    from annotations.services.campaigns import campaign_create

    dataset = build_dataset(name="busy", items=3, systems=2)
    MembershipFactory(project=dataset.project, user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER)
    campaign = campaign_create(
        dataset=dataset, name="busy-study", protocol="likert", criteria=["quality"], scale_min=1, scale_max=5
    )
    page = new_page(viewport={"width": width, "height": 900})
    log_in(page, "rita", "pw-123456")
    page.goto(f"/campaigns/{campaign.pk}/analysis/")
    # The navigation itself is cancelled after the page's own handlers ran (listeners on window run
    # last), so the state can be looked at for as long as needed; then the real navigation.
    page.evaluate("""() => {
        window.addEventListener('click', e => { if (window.holdNavigation && e.target.closest('a')) e.preventDefault(); });
        window.addEventListener('submit', e => { if (window.holdNavigation) e.preventDefault(); }); }""")
    for act in (
        lambda: page.locator(".analysis-nav").get_by_role("link", name="Meta-evaluation").click(),
        lambda: page.get_by_role("button", name="Apply").click(),
    ):
        page.evaluate(
            "() => { window.holdNavigation = true; const b = document.getElementById('page-busy');"
            " if (b) b.hidden = true; }"
        )
        act()
        busy = page.locator("#page-busy")
        assert busy.is_visible() and busy.get_attribute("role") == "status" and "Computing" in busy.inner_text()
        assert page.evaluate("document.body.getAttribute('aria-busy')") == "true"
    page.evaluate("() => { window.holdNavigation = false; }")
    page.locator(".analysis-nav").get_by_role("link", name="Meta-evaluation").click()
    page.locator("#meta-table").wait_for()
    assert page.locator("#page-busy").count() == 0  # the new page, with its figures
