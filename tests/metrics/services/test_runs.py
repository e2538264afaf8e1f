"""Metric runs in-process: the chunk plan, shared state, upserts, reuse, cancel, failure."""

import math

import pytest
import sacrebleu

from annotations.models import Output
from metrics.models import ChunkStatus, MetricChunk, MetricRun, OutputScore, RunStatus
from metrics.selectors import latest_done_runs, scores_by_output
from metrics.services import RunInputError, chunk_execute, run_cancel, run_create, run_execute_sync
from metrics.services.inputs import dataset_outputs

pytestmark = pytest.mark.django_db


def _plan_texts(dataset):
    outs = list(dataset_outputs(dataset=dataset).select_related("item").prefetch_related("item__references"))
    return [o.text for o in outs], [[r.text for r in o.item.references.all()] for o in outs], outs


def test_sync_run_stores_every_score_and_corpus_chrf_equals_sacrebleu(metric_dataset):
    run, reused = run_create(dataset=metric_dataset, metric="chrf", sync=True, chunk_size=5)
    assert not reused
    run = run_execute_sync(run=run)
    assert run.status == RunStatus.DONE, run.error
    hyps, refs, outs = _plan_texts(metric_dataset)
    assert run.total == run.done == len(outs) == OutputScore.objects.filter(run=run).count() == 36
    assert run.chunks.count() == 8  # ceil(36 / 5)
    expected = sacrebleu.corpus_chrf(hyps, [[r[0] for r in refs]])
    assert run.corpus["score"] == pytest.approx(expected.score, abs=1e-9)
    assert run.signature.startswith("chrf|v:1|nrefs:1|")
    # Per-output scores equal sacrebleu's sentence chrF.
    scores = scores_by_output(run=run)
    for o, hyp, ref in zip(outs, hyps, refs):
        assert scores[o.pk] == pytest.approx(sacrebleu.sentence_chrf(hyp, ref).score, abs=1e-9)
    # Per-system corpus values equal sacrebleu over each system's outputs.
    for name in ("sys-0", "sys-1"):
        sel = [k for k, o in enumerate(outs) if o.system.name == name]
        want = sacrebleu.corpus_chrf([hyps[k] for k in sel], [[refs[k][0] for k in sel]]).score
        assert run.corpus["systems"][name]["score"] == pytest.approx(want, abs=1e-9)


def test_chunk_size_does_not_change_bleu_corpus_score(metric_dataset):
    a = run_execute_sync(run=run_create(dataset=metric_dataset, metric="bleu", sync=True, chunk_size=4)[0])
    b = run_execute_sync(
        run=run_create(dataset=metric_dataset, metric="bleu", sync=True, chunk_size=1000, reuse=False)[0]
    )
    hyps, refs, _ = _plan_texts(metric_dataset)
    assert (
        a.corpus["score"]
        == b.corpus["score"]
        == pytest.approx(sacrebleu.corpus_bleu(hyps, [[r[0] for r in refs]]).score, abs=1e-9)
    )


def test_same_chunk_delivered_twice_changes_nothing(metric_dataset):
    run = run_execute_sync(run=run_create(dataset=metric_dataset, metric="chrf", sync=True, chunk_size=10)[0])
    before = sorted(OutputScore.objects.filter(run=run).values_list("output_id", "score", "stats"))
    corpus = run.corpus
    chunk = run.chunks.order_by("index").first()
    assert chunk_execute(chunk_id=chunk.pk, worker="again") == "skipped"
    # A worker died before its transaction committed: no scores of the chunk, not counted, chunk
    # still "running" when the broker re-delivers the message.
    OutputScore.objects.filter(run=run, output_id__in=chunk.output_ids).delete()
    MetricChunk.objects.filter(pk=chunk.pk).update(status=ChunkStatus.RUNNING)
    MetricRun.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, done=run.done - len(chunk.output_ids), corpus=None
    )
    assert chunk_execute(chunk_id=chunk.pk, worker="redelivered") == "done"
    # ... and the same message once more: nothing changes.
    assert chunk_execute(chunk_id=chunk.pk, worker="duplicate") == "skipped"
    run.refresh_from_db()
    after = sorted(OutputScore.objects.filter(run=run).values_list("output_id", "score", "stats"))
    assert after == before
    assert run.done == run.total == 36
    assert run.corpus == corpus


def test_reuse_of_an_identical_done_run(metric_dataset):
    first = run_execute_sync(run=run_create(dataset=metric_dataset, metric="chrf", sync=True)[0])
    again, reused = run_create(dataset=metric_dataset, metric="chrf", options={"batch_size": "1"} and {}, sync=True)
    assert reused and again.pk == first.pk
    # A score-changing option is another run.
    other, reused = run_create(dataset=metric_dataset, metric="chrf", options={"word_order": "2"}, sync=True)
    assert not reused and other.pk != first.pk
    # Changed inputs are another run.
    o = Output.objects.filter(item__dataset=metric_dataset).first()
    o.text = o.text + " changed"
    o.save()
    third, reused = run_create(dataset=metric_dataset, metric="chrf", sync=True)
    assert not reused


def test_a_new_metric_version_is_not_served_old_scores(metric_dataset, monkeypatch):
    # A version bump says the scores changed (SARI v2 splits words as SARI.py does): a done run
    # of the previous version must be scored again, not reused.
    from metrics.scorers.sari import SARIMetric

    first = run_execute_sync(run=run_create(dataset=metric_dataset, metric="sari", sync=True)[0])
    assert first.status == RunStatus.DONE, first.error
    again, reused = run_create(dataset=metric_dataset, metric="sari", sync=True)
    assert reused and again.pk == first.pk
    monkeypatch.setattr(SARIMetric, "version", str(int(SARIMetric.version) + 1))
    newer, reused = run_create(dataset=metric_dataset, metric="sari", sync=True)
    assert not reused and newer.pk != first.pk


def test_a_run_created_with_nothing_to_reuse_is_reused_later(metric_dataset):
    # Nothing to reuse at creation: the inputs' digest is left to the scoring side, which must
    # still store it, so that the next identical request gets this run back.
    first = run_execute_sync(run=run_create(dataset=metric_dataset, metric="bleu", sync=True, reuse=False)[0])
    assert first.status == RunStatus.DONE and len(first.reuse_key) == 64
    again, reused = run_create(dataset=metric_dataset, metric="bleu", sync=True)
    assert reused and again.pk == first.pk


def test_signature_counts_references_without_reading_them(metric_dataset):
    # sacrebleu's nrefs comes from the number of references per segment: "var" when they differ.
    item = metric_dataset.items.order_by("position").first()
    item.references.create(position=1, text="a second reference")
    run = run_execute_sync(run=run_create(dataset=metric_dataset, metric="chrf", sync=True)[0])
    assert run.status == RunStatus.DONE, run.error
    assert "|nrefs:var|" in run.signature
    hyps, refs, outs = _plan_texts(metric_dataset)
    scores = scores_by_output(run=run)
    for o, hyp, ref in zip(outs, hyps, refs):  # both references count where there are two
        assert scores[o.pk] == pytest.approx(sacrebleu.sentence_chrf(hyp, ref).score, abs=1e-9)


def test_bad_metric_or_option_is_a_clear_error(metric_dataset):
    with pytest.raises(RunInputError, match="unknown metric 'nope'"):
        run_create(dataset=metric_dataset, metric="nope")
    with pytest.raises(RunInputError, match="unknown option"):
        run_create(dataset=metric_dataset, metric="chrf", options={"colour": "red"})
    with pytest.raises(RunInputError, match="expected int"):
        run_create(dataset=metric_dataset, metric="chrf", options={"word_order": "two"})
    assert not MetricRun.objects.exists()


def test_missing_model_fails_the_run_with_one_line(metric_dataset):
    run, _ = run_create(dataset=metric_dataset, metric="bertscore", options={"model": "no-such-model"}, sync=True)
    run = run_execute_sync(run=run)
    assert run.status == RunStatus.FAILED
    assert "no-such-model" in run.error and "never downloaded" in run.error
    assert "\n" not in run.error and "Traceback" not in run.error


def test_cancel_stops_remaining_chunks(metric_dataset):
    from metrics.services import run_prepare

    run, _ = run_create(dataset=metric_dataset, metric="chrf", sync=True, chunk_size=6)
    chunk_ids = run_prepare(run_id=run.pk)
    assert chunk_execute(chunk_id=chunk_ids[0], worker="w") == "done"
    assert run_cancel(run=run)
    assert run.status == RunStatus.CANCELLED
    assert chunk_execute(chunk_id=chunk_ids[1], worker="w") == "skipped"
    run.refresh_from_db()
    assert run.done == 6 and run.corpus is None
    assert set(run.chunks.values_list("status", flat=True)) == {ChunkStatus.DONE, ChunkStatus.CANCELLED}
    assert not run_cancel(run=run)  # already ended


def test_system_level_metric_is_scored_per_system(metric_dataset):
    run = run_execute_sync(run=run_create(dataset=metric_dataset, metric="distinct-n", sync=True, chunk_size=5)[0])
    assert run.status == RunStatus.DONE, run.error
    assert run.chunks.count() == 3  # one per system, whatever the chunk size
    from metrics.scorers import get_metric

    _, _, outs = _plan_texts(metric_dataset)
    metric = get_metric("distinct-n")
    for name in ("sys-0", "sys-1", "sys-2"):
        texts = [o.text for o in outs if o.system.name == name]
        want = metric.corpus_score(metric.score(texts)).score
        assert run.corpus["systems"][name]["score"] == pytest.approx(want)
    values = [run.corpus["systems"][n]["score"] for n in ("sys-0", "sys-1", "sys-2")]
    assert run.corpus["score"] == pytest.approx(sum(values) / 3)


def test_latest_done_runs_newest_per_signature(metric_dataset):
    a = run_execute_sync(run=run_create(dataset=metric_dataset, metric="chrf", sync=True)[0])
    b = run_execute_sync(run=run_create(dataset=metric_dataset, metric="chrf", sync=True, reuse=False)[0])
    c = run_execute_sync(run=run_create(dataset=metric_dataset, metric="bleu", sync=True)[0])
    failed = run_create(dataset=metric_dataset, metric="ter", sync=True)[0]
    assert set(latest_done_runs(dataset=metric_dataset)) == {b, c}
    assert a.signature == b.signature
    assert not math.isnan(b.corpus["score"]) and failed.status == RunStatus.QUEUED


@pytest.mark.parametrize("metric", ["chrf", "bleu", "ter"])
def test_corpus_from_chunk_totals_equals_sacrebleu_and_the_full_read(metric_dataset, metric):
    """Finalise sums the chunks' integral statistics instead of reading every score:
    exactly sacrebleu's corpus score (integer sums are order-free), and exactly what
    reading every stored score gives."""
    from metrics.services.runs import corpus_result

    run = run_execute_sync(run=run_create(dataset=metric_dataset, metric=metric, sync=True, chunk_size=7)[0])
    assert run.status == RunStatus.DONE, run.error
    assert all("totals" in chunk.result for chunk in run.chunks.all())
    hyps, refs, outs = _plan_texts(metric_dataset)
    reference = {"chrf": sacrebleu.corpus_chrf, "bleu": sacrebleu.corpus_bleu, "ter": sacrebleu.corpus_ter}[metric]
    assert run.corpus["score"] == reference(hyps, [[r[0] for r in refs]]).score
    for name in ("sys-0", "sys-1"):
        sel = [k for k, o in enumerate(outs) if o.system.name == name]
        want = reference([hyps[k] for k in sel], [[refs[k][0] for k in sel]]).score
        assert run.corpus["systems"][name]["score"] == want
    MetricChunk.objects.filter(run=run).update(result=None)  # the full read of every stored score
    assert corpus_result(run=MetricRun.objects.get(pk=run.pk)) == run.corpus


def test_chunk_totals_only_for_exact_integral_statistics():
    from metrics.services.runs import stats_totals

    assert stats_totals(["a", "b", "a"], [[1, 2], [3, 4], [5, 6.0]]) == {
        "totals": {"a": {"n": 2, "sum": [6, 8.0], "abs": [6, 8.0]}, "b": {"n": 1, "sum": [3, 4], "abs": [3, 4]}}
    }
    assert stats_totals(["a"], [[0.5, 1]]) is None  # float sums depend on the order
    assert stats_totals(["a", "a"], [[1, 2], [1]]) is None
    assert stats_totals(["a"], [None]) is None
    assert stats_totals(["a"], [[2**53]]) is None


def test_chunk_scored_in_batches_stores_each_score_once_equal_to_sacrebleu(metric_dataset, monkeypatch):
    """A chunk of a metric without a model is stored batch by batch while it is scored."""
    from metrics.services import chunks

    monkeypatch.setattr(chunks, "STREAM_BATCH", 4)  # 36 outputs, one chunk: 9 batches
    run = run_execute_sync(run=run_create(dataset=metric_dataset, metric="chrf", sync=True, chunk_size=100)[0])
    assert run.status == RunStatus.DONE and run.chunks.count() == 1
    hyps, refs, outs = _plan_texts(metric_dataset)
    scores = scores_by_output(run=run)
    assert len(scores) == OutputScore.objects.filter(run=run).count() == 36
    for o, hyp, ref in zip(outs, hyps, refs):
        assert scores[o.pk] == pytest.approx(sacrebleu.sentence_chrf(hyp, ref).score, abs=1e-9)
    assert run.corpus["score"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [[r[0] for r in refs]]).score, abs=1e-9)


def test_scores_a_concurrent_delivery_stored_first_are_overwritten_not_duplicated(metric_dataset):
    """Two deliveries of one chunk scoring at once: the later one's COPY meets the unique
    (run, output) constraint and falls back to an upsert, inside its own transaction."""
    from django.db import transaction

    from metrics.scorers.base import SegmentResult
    from metrics.services.scores import scores_store

    run = run_execute_sync(run=run_create(dataset=metric_dataset, metric="chrf", sync=True, chunk_size=10)[0])
    chunk = run.chunks.order_by("index").first()
    others = dict(
        OutputScore.objects.filter(run=run).exclude(output_id__in=chunk.output_ids).values_list("output_id", "score")
    )
    segments = [SegmentResult(score=float(k), extra={"k": k}, stats=[k, 1]) for k in range(len(chunk.output_ids))]
    with transaction.atomic():
        stored = scores_store(run_id=run.pk, output_ids=chunk.output_ids, batches=[segments[:3], segments[3:]])
    assert stored == segments
    assert OutputScore.objects.filter(run=run).count() == 36
    rows = dict(OutputScore.objects.filter(run=run, output_id__in=chunk.output_ids).values_list("output_id", "score"))
    assert rows == {oid: float(k) for k, oid in enumerate(chunk.output_ids)}
    assert (
        dict(
            OutputScore.objects.filter(run=run)
            .exclude(output_id__in=chunk.output_ids)
            .values_list("output_id", "score")
        )
        == others
    )
