"""COMET through the run engine: a worker-style run resolves the checkpoint inside the model
directories, scores every output exactly once in chunks, and signs the run with the
checkpoint's hash; the run form offers COMET checkpoint directories to the COMET metrics."""

import shutil
from pathlib import Path

import pytest

from metrics.catalogue import models_by_metric
from metrics.models import MetricRun, RunStatus
from metrics.scorers import get_metric
from metrics.services import RunInputError, run_create, run_execute_sync
from tests.metrics.conftest import build_dataset

FIXTURES = Path(__file__).parent / "scorers" / "comet_fixtures"


@pytest.fixture
def comet_dirs(tmp_path, settings):
    models = tmp_path / "models"
    for name in ("comet-tiny", "kiwi-tiny", "tiny-xlmr"):
        shutil.copytree(FIXTURES / name, models / name)
    settings.WORKBENCH_MODEL_DIRS = [str(models)]
    return models


def test_a_chunked_comet_run_equals_one_call_and_names_the_checkpoint(db, comet_dirs):
    dataset = build_dataset(items=7, systems=2)
    options = {"model": "comet-tiny", "encoder": "tiny-xlmr", "device": "cpu"}
    run, _ = run_create(dataset=dataset, metric="comet", options=options, sync=True, chunk_size=4)
    run = run_execute_sync(run=run)
    assert run.status == RunStatus.DONE, run.error
    digest = __import__("hashlib").sha256((FIXTURES / "comet-tiny/checkpoints/model.ckpt").read_bytes()).hexdigest()
    assert f"ckpt:{digest[:12]}" in run.signature and "encoder:tiny-xlmr" in run.signature
    scores = list(run.scores.select_related("output__item").order_by("output__item__position", "output__system__name"))
    outputs = [s.output for s in scores]
    assert len(outputs) == 14
    whole = get_metric("comet", **options).score(
        [o.text for o in outputs],
        [[r.text for r in o.item.references.all()] for o in outputs],
        [o.item.source for o in outputs],
    )
    assert [s.score for s in scores] == pytest.approx([w.score for w in whole], abs=1e-5)
    assert MetricRun.objects.filter(pk=run.pk, status=RunStatus.DONE).exists()


def test_run_creation_refuses_a_checkpoint_of_the_other_kind(db, comet_dirs):
    dataset = build_dataset(items=2, systems=1)
    with pytest.raises(RunInputError, match="needs a unified_metric"):
        run_create(dataset=dataset, metric="cometkiwi", options={"model": "comet-tiny", "encoder": "tiny-xlmr"})


def test_the_picker_offers_comet_checkpoints_to_the_comet_metrics_only(comet_dirs):
    offered = {metric: [m["name"] for m in models] for metric, models in models_by_metric().items()}
    assert offered["comet"] == ["comet-tiny", "kiwi-tiny"] == offered["cometkiwi"]
    assert "comet-tiny" not in offered["bertscore"]


def test_a_chunked_xcomet_run_stores_the_spans_of_one_call_and_the_picker_offers_it(db, comet_dirs):
    from annotations.analysis.span_eval import predicted_spans

    shutil.copytree(FIXTURES / "xcomet-tiny", comet_dirs / "xcomet-tiny")
    dataset = build_dataset(items=5, systems=2)
    options = {"model": "xcomet-tiny", "encoder": "tiny-xlmr", "device": "cpu"}
    run, _ = run_create(dataset=dataset, metric="xcomet", options=options, sync=True, chunk_size=3)
    run = run_execute_sync(run=run)
    assert run.status == RunStatus.DONE, run.error
    scores = list(run.scores.select_related("output__item").order_by("output__item__position", "output__system__name"))
    outputs = [s.output for s in scores]
    whole = get_metric("xcomet", **options).score(
        [o.text for o in outputs],
        [[r.text for r in o.item.references.all()] for o in outputs],
        [o.item.source for o in outputs],
    )
    assert [s.score for s in scores] == pytest.approx([w.score for w in whole], abs=1e-5)
    assert [s.extra["spans"] for s in scores] == [w.extra["spans"] for w in whole]
    # The span meta-evaluation reads them as it reads the LLM judge's.
    assert [predicted_spans(s.extra, s.output.text) for s in scores] == [w.extra["spans"] for w in whole]
    assert any(w.extra["spans"] for w in whole)
    offered = {metric: [m["name"] for m in models] for metric, models in models_by_metric().items()}
    assert "xcomet-tiny" in offered["xcomet"]
