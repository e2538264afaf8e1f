"""Run reuse keyed on the content of the files a run's options name (issue 46): an spm model
changed in place is scored again; the same model at another path takes the done run's scores."""

import os
import shutil

import pytest
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers import tokenizer_spm

from metrics.models import MetricChunk, MetricRun, OutputScore, RunStatus
from metrics.selectors import scores_by_output
from metrics.services import run_create, run_execute_sync
from metrics.services.inputs import dataset_outputs
from tests.metrics.test_spbleu import train_spm

pytestmark = pytest.mark.django_db

MODEL_A = train_spm()
MODEL_B = train_spm("zebra quokka aardvark pangolin narwhal axolotl okapi platypus wombat")


@pytest.fixture
def data_dir(tmp_path, settings):
    data = tmp_path / "data"
    data.mkdir()
    settings.WORKBENCH_DATA_DIRS = [str(data)]
    return data


def _sacrebleu_corpus(dataset, model: bytes, tmp_path, monkeypatch) -> float:
    """sacrebleu's own flores200 BLEU over the dataset's outputs, its model file set to `model`."""
    cache = tmp_path / f"sacrebleu-{len(list(tmp_path.iterdir()))}"
    (cache / "models").mkdir(parents=True)
    for entry in tokenizer_spm.SPM_MODELS.values():
        (cache / "models" / os.path.basename(entry["url"])).write_bytes(model)
    monkeypatch.setattr(tokenizer_spm, "SACREBLEU_DIR", str(cache))
    monkeypatch.setattr(tokenizer_spm, "download_file", lambda *a, **k: pytest.fail("download"))
    outs = list(dataset_outputs(dataset=dataset).select_related("item").prefetch_related("item__references"))
    refs = [[r.text for r in o.item.references.all()][0] for o in outs]
    return BLEU(tokenize="flores200").corpus_score([o.text for o in outs], [refs]).score


def test_a_model_file_changed_in_place_is_scored_again(metric_dataset, data_dir, tmp_path, monkeypatch):
    path = data_dir / "flores.spm"
    path.write_bytes(MODEL_A)
    options = {"tokenize": "flores200", "spm": str(path)}
    first = run_execute_sync(run=run_create(dataset=metric_dataset, metric="bleu", options=options, sync=True)[0])
    assert first.status == RunStatus.DONE, first.error
    assert first.corpus["score"] == pytest.approx(_sacrebleu_corpus(metric_dataset, MODEL_A, tmp_path, monkeypatch))

    path.write_bytes(MODEL_B)  # same path, other bytes
    run, reused = run_create(dataset=metric_dataset, metric="bleu", options=options, sync=True)
    assert not reused and run.pk != first.pk
    second = run_execute_sync(run=run)
    assert second.status == RunStatus.DONE, second.error
    expected_b = _sacrebleu_corpus(metric_dataset, MODEL_B, tmp_path, monkeypatch)
    assert second.corpus["score"] == pytest.approx(expected_b)
    assert second.corpus["score"] != pytest.approx(first.corpus["score"])
    assert second.signature != first.signature
    assert not MetricChunk.objects.filter(run=second, worker__startswith="reused").exists()


def test_the_same_model_at_another_path_takes_the_done_runs_scores(metric_dataset, data_dir):
    path = data_dir / "flores.spm"
    path.write_bytes(MODEL_A)
    first = run_execute_sync(
        run=run_create(dataset=metric_dataset, metric="bleu", options={"tokenize": "flores200", "spm": str(path)})[0]
    )
    assert first.status == RunStatus.DONE, first.error
    copy = data_dir / "copy-of-flores.spm"
    shutil.copyfile(path, copy)
    run, reused = run_create(dataset=metric_dataset, metric="bleu", options={"tokenize": "flores200", "spm": str(copy)})
    assert not reused  # the web process never opens the file: the worker matches on content
    second = run_execute_sync(run=run)
    assert second.status == RunStatus.DONE and second.pk != first.pk
    assert second.signature == first.signature and second.reuse_key == first.reuse_key
    assert second.corpus == first.corpus and second.done == second.total == first.total
    assert scores_by_output(run=second) == scores_by_output(run=first)
    assert MetricChunk.objects.filter(run=second, worker=f"reused from run {first.pk}").count() == first.chunks.count()

    # A rerun is always scored, never served a done run's scores.
    fresh = run_execute_sync(
        run=run_create(
            dataset=metric_dataset, metric="bleu", options={"tokenize": "flores200", "spm": str(copy)}, reuse=False
        )[0]
    )
    assert fresh.status == RunStatus.DONE and not fresh.chunks.filter(worker__startswith="reused").exists()
    assert OutputScore.objects.filter(run=fresh).count() == fresh.total
    assert MetricRun.objects.filter(reuse_key=first.reuse_key, status=RunStatus.DONE).count() == 3
