"""Metric runs from the dataset page with a real worker: progress reaches
100%, scores appear on the item page; a failing run shows its message;
annotators see neither the panel nor scores."""

import pytest

from annotations.models import Membership
from metrics.models import MetricRun, RunStatus
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.browser.conftest import log_in
from tests.metrics.conftest import build_dataset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def lab(live_server):
    dataset = build_dataset(name="browser-ds", items=6, systems=2)
    MembershipFactory(project=dataset.project, user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER)
    MembershipFactory(project=dataset.project, user=UserFactory(username="anna"), role=Membership.Role.ANNOTATOR)
    return dataset


@pytest.fixture
def absent_model(monkeypatch, settings):
    """A configured model whose directory the worker lacks (set before the worker starts)."""
    monkeypatch.setenv("WORKBENCH_MODELS", '{"absent-model": "/nonexistent/absent-model"}')
    settings.WORKBENCH_MODELS = {"absent-model": "/nonexistent/absent-model"}


def test_start_run_see_progress_and_scores(page, lab, absent_model, start_celery_worker, screenshot_dir):
    start_celery_worker()  # its own: the shared worker was started without the absent model's configuration
    log_in(page, "rita", "pw-123456")
    page.goto(f"/datasets/{lab.pk}/")
    panel = page.locator("#metric-runs")
    panel.get_by_label("Metric").select_option("chrf")
    panel.get_by_label("word_order").fill("2")
    panel.get_by_role("button", name="Start run").click()
    row = panel.locator("tr[data-run-id]").first
    row.locator('[data-field="percent"]').filter(has_text="(100%)").wait_for(timeout=60_000)
    # Every output scored shows 100% while the worker still adds up the corpus score: the row turns
    # done on a later poll.
    panel.locator('tr[data-run-id][data-status="done"]').wait_for(timeout=60_000)
    run = MetricRun.objects.get()
    assert run.status == RunStatus.DONE and run.options["word_order"] == 2 and not run.sync
    assert row.locator('[data-field="score"]').inner_text() == f"{run.corpus['score']:.4f}"
    # Each system's score, as the rankings page and the card show it: sacrebleu's corpus chrF++.
    import sacrebleu

    from annotations.models import Output

    by_system = row.locator('[data-field="system-scores"]')
    by_system.locator("summary").click()
    assert (
        by_system.locator('[data-field="system-scores-label"]').inner_text().startswith("corpus chrF (signature chrf|")
    )
    for name in ("sys-0", "sys-1"):
        outputs = Output.objects.filter(system__name=name, item__dataset=lab).order_by("item__position")
        want = sacrebleu.corpus_chrf(
            [o.text for o in outputs], [[o.item.references.get().text for o in outputs]], word_order=2
        ).score
        assert by_system.locator(f'tr[data-system="{name}"] td').inner_text() == f"{want:.4f}"
    page.screenshot(path=screenshot_dir / "metric-runs.png", full_page=True)

    item = lab.items.order_by("position").first()
    page.goto(f"/items/{item.pk}/")
    scores = page.locator('.metric-score[data-metric="chrf"] dd')
    assert scores.count() == 2
    from metrics.selectors import scores_by_output

    want = {
        f"{v:.4f}"
        for oid, v in scores_by_output(run=run).items()
        if oid in set(item.outputs.values_list("pk", flat=True))
    }
    assert set(scores.all_inner_texts()) == want

    # A run whose model is missing fails with its message in the list.
    page.goto(f"/datasets/{lab.pk}/")
    panel.get_by_label("Metric").select_option("semdist")
    panel.locator('[data-option="model"]').select_option("absent-model")
    panel.get_by_role("button", name="Start run").click()
    failed = panel.locator('tr[data-status="failed"]')
    failed.wait_for(timeout=60_000)
    message = failed.locator('[data-field="error"]').inner_text()
    assert "model 'absent-model' is configured in WORKBENCH_MODELS as /nonexistent/absent-model" in message
    assert MetricRun.objects.get(status=RunStatus.FAILED).error == message


def test_bad_option_is_shown_and_annotators_see_no_scores(page, lab):
    log_in(page, "rita", "pw-123456")
    page.goto(f"/datasets/{lab.pk}/")
    panel = page.locator("#metric-runs")
    panel.get_by_label("Metric").select_option("chrf")
    panel.get_by_label("word_order").fill("two")
    panel.get_by_role("button", name="Start run").click()
    page.locator("#metric-run-error").filter(has_text="expected int").wait_for()
    assert not MetricRun.objects.exists()

    from metrics.services import run_create, run_execute_sync

    run_execute_sync(run=run_create(dataset=lab, metric="chrf", sync=True)[0])
    page.context.clear_cookies()
    log_in(page, "anna", "pw-123456")
    page.goto(f"/datasets/{lab.pk}/")
    assert page.locator("#metric-runs").count() == 0
    item = lab.items.order_by("position").first()
    page.goto(f"/items/{item.pk}/")
    assert page.locator(".metric-score").count() == 0
    assert "chrf" not in page.content()
