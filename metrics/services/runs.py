"""Metric runs: create (or reuse), prepare (shared state, signature, chunk
plan), finalise (corpus score from all stored scores), fail, cancel, re-run.

Life of a run: `run_create` (queued) → `run_prepare` on a worker of the
metric's queue, or in-process with `--sync` (running, chunks planned) →
`chunk_execute` per chunk → `run_finalise` after the last chunk (done).
Every state change is a conditional UPDATE, so a duplicated or re-delivered
task changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
from collections.abc import Callable
from typing import Any

from django.db import connections, transaction
from django.utils import timezone

from annotations.models import Dataset, Output, System
from metrics.models import ChunkStatus, MetricChunk, MetricRun, OutputScore, RunStatus, metric_queue
from metrics.scorers import MetricError, get_metric
from metrics.scorers.base import Metric, SegmentResult
from metrics.scorers.files import PATH_OPTIONS
from metrics.services.common import TRANSIENT_ERRORS, build_metric, jsonable, metric_inputs, one_line
from metrics.services.inputs import (
    dataset_plan_ids,
    dataset_plan_items,
    inputs_digest,
    load_dataset_inputs,
    missing_input,
)
from workbench.broker import celery_app
from workbench.exceptions import DomainError

logger = logging.getLogger(__name__)
# Sent by name (`metrics.tasks` registers it): the services never import the tasks, which import them.
PREPARE_TASK = "metrics.run_prepare"

ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)
MAX_CHUNK_SIZE = 100_000


def default_chunk_size(metric: Metric) -> int:
    # Chunks must finish well within the broker's visibility timeout (settings):
    # a few seconds each on a GPU, well under a minute for MiniLM on one CPU core.
    # Other metrics: 2,500 outputs, unless the metric says (sacrebleu's score thousands a
    # second), so the fixed cost of a chunk (task delivery, claim, reading, commit: ~40 ms)
    # stays small; 256 also beats one big batch for BERTScore with MiniLM on a CPU
    # (bench/bench_metric_runs.py).
    if metric.chunk_outputs:
        return metric.chunk_outputs
    return 256 if metric.uses_model else 2500


class RunInputError(DomainError, ValueError):
    """A run that cannot be started as asked (unknown metric, bad option, no outputs)."""


def _reuse_key(*, metric_name: str, version: str, options: dict[str, Any], speed: frozenset[str], digest: str) -> str:
    # The metric's version is part of the key: a version bump means its scores changed
    # (e.g. SARI v2's word splitting), so runs of the old version must not be reused.
    scored = {k: v for k, v in sorted(options.items()) if k not in speed}
    blob = json.dumps([metric_name, version, scored, digest], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def names_files(options: dict[str, Any]) -> bool:
    """Whether the run's options name files or model directories (spm model, checkpoint, prompt ...):
    the same path may hold other bytes tomorrow, so such runs are matched on content, not path."""
    return any(options.get(key) for key in PATH_OPTIONS)


def _content_key(*, signature: str, digest: str) -> str:
    # The signature names every file option by its content (sha256 of the spm model, the
    # checkpoint, the prompt...), never by its path, plus the metric's version and scored options.
    blob = json.dumps(["signature", signature, digest], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def run_create(
    *,
    dataset: Dataset,
    metric: str,
    options: dict[str, Any] | None = None,
    user=None,
    sync: bool = False,
    chunk_size: int | None = None,
    reuse: bool = True,
) -> tuple[MetricRun, bool]:
    """A queued run of `metric` over every output of `dataset`, or the done run
    it would duplicate (same metric, same score-changing options, same inputs):
    returns (run, reused). Bad names or options raise RunInputError at once.
    Runs whose options name files are never matched here (the web process does not open the
    server's files): the worker matches them on the files' content (`run_prepare`).
    Without `sync`, the run is queued to the workers when the transaction commits."""
    try:
        scorer = get_metric(metric, **(options or {}))
    except MetricError as exc:
        raise RunInputError(one_line(exc)) from None
    except ImportError as exc:  # a metric whose library is not installed
        raise RunInputError(f"metric {metric!r} cannot be loaded: {one_line(exc)}") from None
    try:
        scorer.check_resources()
    except MetricError as exc:
        raise RunInputError(one_line(exc)) from None
    if chunk_size is None:
        chunk_size = default_chunk_size(scorer)
    if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
        raise RunInputError(f"chunk size must be from 1 to {MAX_CHUNK_SIZE}")
    resolved = jsonable(scorer.options)
    # The digest of the inputs (PostgreSQL hashes every text: ~50 ms per 10,000 outputs) is
    # needed here only to find a done run to reuse. Where this dataset has no done run of the
    # metric, the worker stores the run's key while it scores (run_reuse_key_fill).
    key = ""
    if (
        reuse
        and not names_files(resolved)
        and MetricRun.objects.filter(dataset=dataset, metric=scorer.name, status=RunStatus.DONE).exists()
    ):
        n_outputs, digest = inputs_digest(dataset=dataset)
        key = _reuse_key(
            metric_name=scorer.name, version=scorer.version, options=resolved, speed=scorer.speed_options, digest=digest
        )
    else:
        n_outputs = Output.objects.filter(item__dataset=dataset).count()
    if not n_outputs:
        raise RunInputError(f"dataset {dataset.name!r} has no outputs to score")
    try:  # which inputs a metric reads may depend on its files (llm-judge: its prompt template)
        lacking = missing_input(dataset=dataset, metric=scorer)
    except MetricError as exc:
        raise RunInputError(one_line(exc)) from None
    if lacking:
        raise RunInputError(lacking)
    if key:
        previous = (
            MetricRun.objects.filter(dataset=dataset, metric=scorer.name, reuse_key=key, status=RunStatus.DONE)
            .order_by("-finished_at", "-id")
            .first()
        )
        if previous is not None:
            return previous, True
    with transaction.atomic():
        run = MetricRun(
            dataset=dataset,
            metric=scorer.name,
            options=resolved,
            higher_is_better=scorer.higher_is_better,
            created_by=user,
            sync=sync,
            total=n_outputs,
            chunk_size=chunk_size,
            reuse_key=key,
            reuse=reuse,
        )
        run.full_clean()
        run.save()
        if not sync:
            transaction.on_commit(lambda: enqueue_prepare(run))
    return run, False


def run_rerun(*, run: MetricRun, user=None) -> MetricRun:
    """A fresh run with the same dataset, metric and options (never reused)."""
    new, _ = run_create(
        dataset=run.dataset,
        metric=run.metric,
        options=run.options,
        user=user,
        sync=False,
        chunk_size=run.chunk_size or None,
        reuse=False,
    )
    return new


def run_reuse_key_fill(*, run_id: int) -> None:
    """Store the run's reuse key (metric and its version, score-changing options, digest of its
    inputs; for options naming files, its signature, which names them by content) where
    run_create left it empty; a concurrent filler writes the same."""
    run = MetricRun.objects.filter(pk=run_id, reuse_key="").first()
    if run is None:
        return
    if names_files(run.options) and not run.signature:
        return  # not prepared: the files' content is not known yet
    _, digest = inputs_digest(dataset=Dataset(pk=run.dataset_id))
    if names_files(run.options):
        key = _content_key(signature=run.signature, digest=digest)
        MetricRun.objects.filter(pk=run_id, reuse_key="").update(reuse_key=key)
        return
    metric = build_metric(run)
    key = _reuse_key(
        metric_name=run.metric, version=metric.version, options=run.options, speed=metric.speed_options, digest=digest
    )
    MetricRun.objects.filter(pk=run_id, reuse_key="").update(reuse_key=key)


# Runs prepared in this process whose reuse key is still to be stored (see reuse_key_fill_start).
_keys_to_fill: set[int] = set()


def reuse_key_fill_start() -> None:
    """Store the reuse keys of runs prepared in this process, in a thread with its own
    connection: PostgreSQL hashes the inputs on another core while this process scores.
    Called once a chunk's inputs are read (the two queries would otherwise queue behind
    each other). If the thread fails or is late, run_finalise stores the key."""
    while _keys_to_fill:
        run_id = _keys_to_fill.pop()

        def fill(run_id: int = run_id) -> None:
            try:
                run_reuse_key_fill(run_id=run_id)
            except Exception:  # noqa: BLE001 - finalise tries again; a lost key only costs a reuse
                logger.warning("metric run %s: reuse key not stored in the background", run_id, exc_info=True)
            finally:
                connections.close_all()  # this thread's connection only

        threading.Thread(target=fill, name=f"reuse-key-{run_id}", daemon=True).start()


def plan_chunks(
    *, ids: list[int], system_ids: list[int], size: int, system_level: bool, item_ids: list[int] | None = None
) -> list[list[int]]:
    """The chunk plan, deterministic in the output order: slices of `size`,
    or one chunk per system (by system name) for system-level metrics, or, with
    `item_ids` (metrics comparing the outputs of an item), whole items: a chunk
    takes the next item while it holds fewer than `size` outputs (an item larger
    than `size` is one chunk)."""
    if item_ids is not None and not system_level:
        chunks: list[list[int]] = []
        current: list[int] = []
        for k, oid in enumerate(ids):
            new_item = k == 0 or item_ids[k] != item_ids[k - 1]
            if new_item and len(current) >= size:
                chunks.append(current)
                current = []
            current.append(oid)
        if current:
            chunks.append(current)
        return chunks
    if not system_level:
        return [ids[start : start + size] for start in range(0, len(ids), size)]
    names = dict(System.objects.filter(pk__in=set(system_ids)).values_list("pk", "name"))
    groups: dict[int, list[int]] = {}
    for oid, sid in zip(ids, system_ids):
        groups.setdefault(sid, []).append(oid)
    return [groups[sid] for sid in sorted(groups, key=lambda s: (names.get(s, ""), s))]


def run_prepare(*, run_id: int) -> list[int]:
    """Compute the state shared by all chunks once (idf tables, numbers of
    references), the signature, and the chunk plan; mark the run running.
    Returns the ids of the chunks still to score (all of them the first time;
    a re-delivered prepare re-queues the pending ones, which is harmless)."""
    run = MetricRun.objects.get(pk=run_id)
    if run.status not in ACTIVE:
        return []
    try:
        metric = build_metric(run)
        by_item = bool(getattr(metric, "needs_items", False))
        item_ids = None
        if type(metric).corpus_state is Metric.corpus_state:
            # No state shared by the chunks: the plan needs ids, not texts.
            if by_item:
                ids, system_ids, item_ids = dataset_plan_items(dataset_id=run.dataset_id)
            else:
                ids, system_ids = dataset_plan_ids(dataset_id=run.dataset_id)
            state = None
        else:
            inputs = load_dataset_inputs(dataset_id=run.dataset_id, metric=metric, state=True)
            ids, system_ids = inputs.output_ids, inputs.system_ids
            item_ids = inputs.item_ids if by_item else None
            state = metric.corpus_state(inputs.hyps, **metric_inputs(metric, inputs)) if ids else None
        if not ids:
            raise LookupError("the dataset has no outputs any more")
        metric.load_corpus_state(state)
        signature = metric.signature()
        plan = plan_chunks(
            ids=ids,
            system_ids=system_ids,
            size=run.chunk_size or default_chunk_size(metric),
            system_level=metric.level == "system",
            item_ids=item_ids,
        )
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:  # bad input, missing model ...: the run fails with its message
        if not isinstance(exc, (MetricError, LookupError)):
            logger.exception("metric run %s: preparing failed", run_id)
        run_fail(run_id=run_id, message=one_line(exc))
        return []
    if run.reuse and names_files(run.options) and _reuse_by_content(run=run, signature=signature):
        return []
    with transaction.atomic():
        updated = MetricRun.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=RunStatus.RUNNING,
            started_at=run.started_at or timezone.now(),
            shared_state=jsonable(state),
            signature=signature,
            higher_is_better=metric.higher_is_better,
            total=len(ids),
        )
        if not updated:
            return []
        MetricChunk.objects.bulk_create(
            [MetricChunk(run_id=run_id, index=k, output_ids=chunk) for k, chunk in enumerate(plan)],
            ignore_conflicts=True,
        )
    if not run.reuse_key:
        _keys_to_fill.add(run_id)
    return list(
        MetricChunk.objects.filter(run_id=run_id, status=ChunkStatus.PENDING)
        .order_by("index")
        .values_list("pk", flat=True)
    )


def _reuse_by_content(*, run: MetricRun, signature: str) -> bool:
    """Finish `run` with the scores of a done run of the same signature (so the same file
    contents, wherever they lie) over the same inputs: its scores, chunks and corpus result
    copied, no output scored again. False where there is none (the run is then scored)."""
    done = MetricRun.objects.filter(dataset_id=run.dataset_id, metric=run.metric, status=RunStatus.DONE)
    if not done.exists():
        return False
    _, digest = inputs_digest(dataset=Dataset(pk=run.dataset_id))
    key = _content_key(signature=signature, digest=digest)
    previous = done.filter(reuse_key=key).exclude(pk=run.pk).order_by("-finished_at", "-id").first()
    if previous is None:
        return False
    now = timezone.now()
    with transaction.atomic():
        updated = MetricRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(
            status=RunStatus.DONE,
            started_at=run.started_at or now,
            finished_at=now,
            signature=signature,
            shared_state=previous.shared_state,
            higher_is_better=previous.higher_is_better,
            corpus=previous.corpus,
            total=previous.total,
            done=previous.done,
            reuse_key=key,
            error="",
        )
        if not updated:
            return True  # cancelled, or finished by a duplicate of this task: nothing to do
        MetricChunk.objects.bulk_create(
            [
                MetricChunk(
                    run_id=run.pk,
                    index=chunk.index,
                    output_ids=chunk.output_ids,
                    status=ChunkStatus.DONE,
                    result=chunk.result,
                    worker=f"reused from run {previous.pk}",
                    started_at=now,
                    finished_at=now,
                )
                for chunk in previous.chunks.order_by("index")
            ],
            ignore_conflicts=True,
        )
        table = OutputScore._meta.db_table
        with connections[OutputScore.objects.db].cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (run_id, output_id, score, extra, stats) "
                f"SELECT %s, output_id, score, extra, stats FROM {table} WHERE run_id = %s",
                [run.pk, previous.pk],
            )
    logger.info("metric run %s: same signature and inputs as done run %s, scores reused", run.pk, previous.pk)
    return True


def _segments(rows: list[tuple]) -> list[SegmentResult]:
    """Stored (score, extra, stats) rows as the metric's segment results."""
    return [
        SegmentResult(score=math.nan if score is None else score, extra=extra or {}, stats=stats)
        for score, extra, stats in rows
    ]


# Integers below 2**53 add up exactly in floats in any order, so per-chunk sums
# of such statistics give the corpus totals bit for bit.
_EXACT = 2**53


def stats_totals(system_names: list[str], stats: list[Any]) -> dict[str, Any] | None:
    """A chunk's summed statistics per system, {"totals": {name: {"n", "sum", "abs"}}},
    when every segment has integral statistics of one length (chrF, BLEU, TER ...);
    None otherwise (the corpus score then reads every stored score)."""
    if not stats or any(not isinstance(s, list) for s in stats):
        return None
    width = len(stats[0])
    if any(len(row) != width for row in stats):
        return None
    kinds = {type(v) for row in stats for v in row}
    if not kinds <= {int, float}:
        return None
    if float in kinds and not all(
        type(v) is int or (math.isfinite(v) and v.is_integer()) for row in stats for v in row
    ):
        return None
    groups: dict[str, list[list]] = {}
    for name, row in zip(system_names, stats):
        groups.setdefault(name, []).append(row)
    totals = {}
    for name, rows in groups.items():
        cols = list(zip(*rows))
        absolute = [sum(map(abs, col)) for col in cols]
        if any(a >= _EXACT for a in absolute):
            return None
        # sum() as Metric.corpus_score does: an int column stays int, a float one float.
        totals[name] = {"n": len(rows), "sum": [sum(col) for col in cols], "abs": absolute}
    return {"totals": totals}


def _corpus_from_totals(metric, chunks: list[MetricChunk], total: int) -> dict[str, Any] | None:
    """The corpus result from the chunks' summed statistics (see stats_totals),
    equal to corpus_score over every stored score; None where a chunk has none."""
    if type(metric).corpus_score is not Metric.corpus_score:
        return None
    per_system: dict[str, list[dict]] = {}
    for chunk in chunks:
        totals = (chunk.result or {}).get("totals") if isinstance(chunk.result, dict) else None
        if not totals:
            return None
        for name, part in totals.items():
            per_system.setdefault(name, []).append(part)
    parts = [part for group in per_system.values() for part in group]
    if sum(p["n"] for p in parts) != total or len({len(p["sum"]) for p in parts}) != 1:
        return None
    if any(sum(col) >= _EXACT for col in zip(*(p["abs"] for p in parts))):
        return None

    def score(group: list[dict]) -> dict[str, Any]:
        return metric.score_from_stats([sum(col) for col in zip(*(p["sum"] for p in group))]).as_dict()

    corpus = score(parts)
    corpus["systems"] = {name: score(group) for name, group in sorted(per_system.items())}
    return jsonable(corpus)


def run_planned(chunks: list[MetricChunk]) -> int:
    return sum(len(chunk.output_ids) for chunk in chunks)


def corpus_result(*, run: MetricRun) -> dict[str, Any]:
    """{"score": x, ..., "systems": {name: {"score": ...}}} from the stored scores
    (summed statistics where the metric has them), in the plan order."""
    metric = build_metric(run)
    metric.load_corpus_state(run.shared_state)
    chunks = list(run.chunks.order_by("index"))
    if metric.level != "system" and OutputScore.objects.filter(run=run).count() == run_planned(chunks):
        fast = _corpus_from_totals(metric, chunks, run_planned(chunks))
        if fast is not None:
            return fast
    outputs = {o["pk"]: o for o in Output.objects.filter(item__dataset_id=run.dataset_id).values("pk", "system__name")}
    if metric.level == "system":
        systems = {}
        for chunk in chunks:
            name = outputs[chunk.output_ids[0]]["system__name"] if chunk.output_ids else str(chunk.index)
            systems[name] = chunk.result or {}
        values = [s.get("score") for s in systems.values() if isinstance(s.get("score"), (int, float))]
        # A set-level value per system; the run's value is their mean.
        return jsonable({"score": sum(values) / len(values) if values else None, "systems": systems})
    rows = {
        oid: (score, extra, stats)
        for oid, score, extra, stats in OutputScore.objects.filter(run=run).values_list(
            "output_id", "score", "extra", "stats"
        )
    }
    order = [oid for chunk in chunks for oid in chunk.output_ids]
    missing = [oid for oid in order if oid not in rows]
    if missing:
        raise LookupError(f"{len(missing)} output(s) have no score")
    corpus = metric.corpus_score(_segments([rows[oid] for oid in order])).as_dict()
    by_system: dict[str, list[tuple]] = {}
    for oid in order:
        by_system.setdefault(outputs[oid]["system__name"] if oid in outputs else "?", []).append(rows[oid])
    corpus["systems"] = {
        name: metric.corpus_score(_segments(group)).as_dict() for name, group in sorted(by_system.items())
    }
    return jsonable(corpus)


def run_finalise(*, run_id: int) -> bool:
    """Mark the run done with its corpus result, exactly once: True for the
    caller that did it (several last chunks may race here)."""
    run = MetricRun.objects.get(pk=run_id)
    if run.status != RunStatus.RUNNING or run.chunks.exclude(status=ChunkStatus.DONE).exists():
        return False
    try:
        corpus = corpus_result(run=run)
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        if not isinstance(exc, (MetricError, LookupError)):
            logger.exception("metric run %s: corpus score failed", run_id)
        run_fail(run_id=run_id, message=one_line(exc))
        return False
    if not run.reuse_key:  # not stored in the background (yet): a done run should be reusable
        try:
            run_reuse_key_fill(run_id=run_id)
        except TRANSIENT_ERRORS:
            raise
        except Exception:  # noqa: BLE001 - the scores stand; a missing key only costs a reuse
            logger.warning("metric run %s: reuse key not stored", run_id, exc_info=True)
    return bool(
        MetricRun.objects.filter(pk=run_id, status=RunStatus.RUNNING).update(
            status=RunStatus.DONE, corpus=corpus, finished_at=timezone.now(), error=""
        )
    )


@transaction.atomic
def run_fail(*, run_id: int, message: str, chunk_id: int | None = None) -> bool:
    """Fail an active run with a one-line message; its other chunks are cancelled."""
    now = timezone.now()
    if chunk_id is not None:
        MetricChunk.objects.filter(pk=chunk_id).update(status=ChunkStatus.FAILED, error=message, finished_at=now)
    failed = MetricRun.objects.filter(pk=run_id, status__in=ACTIVE).update(
        status=RunStatus.FAILED, error=message, finished_at=now
    )
    MetricChunk.objects.filter(run_id=run_id, status__in=[ChunkStatus.PENDING, ChunkStatus.RUNNING]).update(
        status=ChunkStatus.CANCELLED
    )
    return bool(failed)


@transaction.atomic
def run_cancel(*, run: MetricRun) -> bool:
    """Cancel a queued or running run: chunks not yet claimed are skipped by
    the workers; a chunk in flight stops at its scorer's next batch boundary
    (chunks._Watch) and is not counted, so the worker is free for the next task.
    False if the run had already ended."""
    now = timezone.now()
    cancelled = MetricRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(
        status=RunStatus.CANCELLED, finished_at=now
    )
    if cancelled:
        MetricChunk.objects.filter(run=run, status__in=[ChunkStatus.PENDING, ChunkStatus.RUNNING]).update(
            status=ChunkStatus.CANCELLED, finished_at=now
        )
    run.refresh_from_db()
    return bool(cancelled)


def run_execute_sync(*, run: MetricRun, progress: Callable[[int], None] | None = None) -> MetricRun:
    """Score the run in this process with the chunk plan the workers use
    (hence the same scores, bit for bit)."""
    from metrics.services.chunks import chunk_execute  # lazy: cycle with metrics.services.chunks

    chunk_ids = run_prepare(run_id=run.pk)
    for chunk_id in chunk_ids:
        chunk_execute(chunk_id=chunk_id, worker="sync")
        run.refresh_from_db(fields=["done", "status"])
        if progress is not None:
            progress(run.done)
        if run.status != RunStatus.RUNNING:
            break
    run.refresh_from_db()
    return run


def run_progress_fields(run: MetricRun) -> dict[str, Any]:
    """done/total and the share done, for the API and the CLI."""
    return {"done": run.done, "total": run.total, "percent": round(100 * run.done / run.total, 1) if run.total else 0}


def enqueue_prepare(run: MetricRun) -> None:
    """Hand the run to a worker of its queue (model metrics: `gpu`); a broker that cannot be
    reached fails the run with a message instead of leaving it queued."""
    try:
        celery_app.send_task(PREPARE_TASK, args=[run.pk], queue=metric_queue(run.metric))
    except Exception as exc:  # noqa: BLE001 - any broker failure: say so on the run, never leave it queued
        # One line, no traceback: the message says what to do; the log says why.
        logger.warning("metric run %s could not be queued: %s: %s", run.pk, type(exc).__name__, exc)
        run_fail(
            run_id=run.pk,
            message="the run could not be handed to a worker (the task queue is "
            "unreachable); nothing was scored. Start it again later.",
        )
