"""Learned metrics (issue 43) where metrics are shown, in Chromium: a COMET run started from the
dataset page shows progress inside its chunk before it ends (a real worker on the `gpu` queue,
CPU fallback, the tiny checkpoints of tests/metrics/scorers); comet and metricx runs are rows of
the meta-evaluation table (with their significance clusters), points of the scatter and scores on
the item page, with the figures `correlate` prints and the scores stored."""

import json
import re
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.models import Campaign, Item, Membership
from metrics.models import ChunkStatus, MetricRun, RunStatus
from metrics.scorers import get_metric
from metrics.selectors import scores_by_output
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import _likert, dataset  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.browser.conftest import log_in
from tests.browser.test_analysis import POINTS
from tests.metrics.conftest import build_dataset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCORERS = Path(__file__).resolve().parents[1] / "metrics" / "scorers"


@pytest.fixture
def learned_models(tmp_path, settings):
    """The tiny COMET checkpoint with its encoder and the tiny MetricX mT5, inside the model
    directories of the web process (the run form's picker) and of the workers started here."""
    models = tmp_path / "models"
    for name in ("comet-tiny", "tiny-xlmr"):
        shutil.copytree(SCORERS / "comet_fixtures" / name, models / name)
    shutil.copytree(SCORERS / "metricx_fixtures" / "mt5-tiny", models / "mt5-tiny")
    settings.WORKBENCH_MODEL_DIRS = [str(models)]
    return models


def test_comet_run_from_the_browser_shows_progress_inside_its_chunk(
    page, live_server, learned_models, start_celery_worker, tmp_path
):
    lab = build_dataset(name="comet-browser", items=6, systems=2)
    MembershipFactory(project=lab.project, user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER)
    release = tmp_path / "release-chunk"
    # Its own worker: the model directories, and the hook that holds a chunk once it has stored
    # progress inside it until the test has seen it (a tiny model scores 12 outputs in less than
    # one poll of the page). It consumes the `gpu` queue, where model metrics go (CPU fallback).
    start_celery_worker(WORKBENCH_MODEL_DIRS=str(learned_models), WORKBENCH_METRIC_PROGRESS_HOLD=str(release))
    page.set_default_timeout(60_000)
    try:
        log_in(page, "rita", "pw-123456")
        page.goto(f"/datasets/{lab.pk}/")
        panel = page.locator("#metric-runs")
        panel.get_by_label("Metric").select_option("comet")
        panel.locator('[data-option="model"]').select_option("comet-tiny")
        panel.get_by_label("batch_size").fill("1")  # 24 texts, one a batch: progress after each
        panel.get_by_role("button", name="Start run").click()
        row = panel.locator("tr[data-run-id]").first
        percent = row.locator('[data-field="percent"]')
        # Outputs scored inside the running chunk, none stored yet: k of 12 with 0 < k < 12.
        percent.filter(has_text=re.compile(r"\b([1-9]|1[01])/12 \(")).wait_for(timeout=240_000)
        assert row.get_attribute("data-status") == "running"
        fraction = float(row.locator("progress").get_attribute("value")) / 100
        assert 0 < fraction < 1
        run = MetricRun.objects.get()
        chunk = run.chunks.get()  # one chunk: the progress is inside it
        assert run.status == RunStatus.RUNNING and run.done == 0 and run.total == 12
        assert chunk.status == ChunkStatus.RUNNING and 0 < chunk.scored < 12
        assert f"{chunk.scored}/12" in percent.inner_text()
    finally:
        release.touch()
    panel.locator(f'tr[data-run-id="{run.pk}"][data-status="done"]').wait_for(timeout=240_000)
    assert "12/12 (100%)" in percent.inner_text()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.options["model"] == "comet-tiny" and run.options["batch_size"] == 1 and "ckpt:" in run.signature
    stored = scores_by_output(run=run)
    outputs = sorted(stored)
    scored = MetricRun.objects.get(pk=run.pk).scores.select_related("output__item").filter(output_id__in=outputs)
    by_id = {s.output_id: s.output for s in scored}
    direct = get_metric("comet", model="comet-tiny", batch_size=1, device="cpu").score(
        [by_id[o].text for o in outputs],
        [[by_id[o].item.references.get().text] for o in outputs],
        [by_id[o].item.source for o in outputs],
    )
    assert [stored[o] for o in outputs] == pytest.approx([d.score for d in direct], abs=1e-5)

    # The item page shows each output's COMET score, as stored.
    item = lab.items.order_by("position").first()
    page.goto(f"/items/{item.pk}/")
    shown = page.locator('.metric-score[data-metric="comet"] dd').all_inner_texts()
    ids = set(item.outputs.values_list("pk", flat=True))
    assert sorted(shown) == sorted(f"{v:.4f}" for o, v in stored.items() if o in ids)


def _json(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


@pytest.fixture
def learned_runs(live_server, dataset, learned_models, tmp_path):  # noqa: F811
    _likert(tmp_path)
    runs = {
        "bleu": score_dataset("toy", "bleu"),
        "comet": score_dataset("toy", "comet", model="comet-tiny", device="cpu"),
        "metricx": score_dataset("toy", "metricx", model="mt5-tiny", tokenizer="mt5-tiny", device="cpu"),
    }
    assert all(r.status == RunStatus.DONE for r in runs.values()), {k: r.error for k, r in runs.items()}
    campaign = Campaign.objects.get(name="likert")
    MembershipFactory(
        project=campaign.dataset.project, user=UserFactory(username="res"), role=Membership.Role.RESEARCHER
    )
    return campaign, runs


def _f3(value) -> str:
    return f"{value:.3f}"


def test_comet_and_metricx_in_the_meta_table_scatter_and_item_pages(page, learned_runs):
    campaign, runs = learned_runs
    page.set_default_timeout(120_000)
    log_in(page, "res", "pw-123456")

    # Meta-evaluation: a row per run, segment Pearson and system SPA as `correlate` prints them;
    # metricx (lower is better) is correlated in its direction; each row has its SPA cluster.
    page.goto(f"/campaigns/{campaign.pk}/analysis/meta/")
    table = page.locator("#meta-table")
    table.locator("tbody tr[data-metric]").first.wait_for()
    headers = [h.lower() for h in table.locator("thead th").all_text_contents()[1:]]
    pearson_col = next(k for k, h in enumerate(headers) if "pearson" in h and "segment" in h)
    spa_col = next(k for k, h in enumerate(headers) if "spa" in h and "system" in h)
    compare = _json(
        *("correlate", "--campaign", "likert", "--criterion", "adequacy", "--level", "system"),
        *("--method", "spa", "--compare-all", "--resamples", "200"),  # the page's clusters: 200 resamples
    )
    ranks = {m["metric"]: m["rank"] for m in compare["metrics"]}
    for name in ("comet", "metricx"):
        run = runs[name]
        cells = table.locator(f"tbody tr[data-metric='{name}'] td")
        expected = _json("correlate", "--campaign", "likert", "--metric", f"#{run.pk}", "--criterion", "adequacy")
        assert cells.nth(pearson_col).inner_text().split()[0] == _f3(expected["pearson"])
        spa = _json(
            *("correlate", "--campaign", "likert", "--metric", f"#{run.pk}", "--criterion", "adequacy"),
            *("--level", "system", "--method", "spa"),
        )
        assert cells.nth(spa_col).inner_text().split()[0] == _f3(spa["spa"])
        cluster = cells.nth(spa_col).locator("[data-field='cluster']").inner_text()
        assert cluster == f"({ranks[name]})"

    # Scatter: one point per rated output at its stored score, r as `correlate` prints it.
    for name in ("comet", "metricx"):
        run = runs[name]
        page.goto(f"/campaigns/{campaign.pk}/analysis/scatter/?criterion=adequacy&run={run.pk}")
        page.wait_for_selector("#plot[data-rendered='true']")
        stored = scores_by_output(run=run)
        assert page.locator(POINTS).count() == 48  # one drawn point per rated output
        rows = page.locator("#points-table tbody tr")
        assert rows.count() == len(stored) == 48
        shown = sorted(float(t) for t in rows.locator("td:nth-child(3)").all_text_contents())
        assert shown == pytest.approx(sorted(round(v, 3) for v in stored.values()), abs=5e-4)
        expected = _json("correlate", "--campaign", "likert", "--metric", f"#{run.pk}", "--criterion", "adequacy")
        assert f"Pearson r {_f3(expected['pearson'])}" in page.locator("main").text_content()

    # Item page: each output's comet and metricx scores, as stored.
    item = Item.objects.get(dataset=campaign.dataset, external_id="i0")
    ids = set(item.outputs.values_list("pk", flat=True))
    page.goto(f"/items/{item.pk}/")
    for name in ("comet", "metricx"):
        stored = scores_by_output(run=runs[name])
        shown = page.locator(f'.metric-score[data-metric="{name}"] dd').all_inner_texts()
        assert sorted(shown) == sorted(f"{v:.4f}" for o, v in stored.items() if o in ids)
