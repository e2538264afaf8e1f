"""One chunk of a run: claim, score, store, count, and finalise after the last.

Exactly-once *effect* under at-least-once delivery: a chunk is (re)claimed by
any delivery while it is pending or running (a worker killed mid-chunk leaves
it running; the broker re-delivers its message), scores are unique per
(run, output) and committed with the chunk's conditional flip running → done
that adds to `run.done`, so a second delivery stores no second score (or
rewrites identical ones) and counts nothing.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterator

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from annotations import rows
from metrics.models import ChunkStatus, MetricChunk, MetricRun, RunStatus
from metrics.scorers import MetricError, progress
from metrics.scorers.base import Metric
from metrics.services.common import TRANSIENT_ERRORS, build_metric, jsonable, metric_inputs, one_line
from metrics.services.inputs import load_inputs
from metrics.services.runs import reuse_key_fill_start, run_fail, run_finalise, stats_totals
from metrics.services.scores import scores_store

logger = logging.getLogger(__name__)


def _claim(*, chunk_id: int, worker: str) -> MetricChunk | None:
    """Take the chunk (pending, or running: a re-delivery) of a running run, and
    return it with its run; None if it is done or its run ended. One statement:
    a run has a few chunks per worker, each paying this fixed cost."""
    chunk, run = rows.table(MetricChunk), rows.table(MetricRun)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {chunk} c SET status = %s, attempts = c.attempts + 1, worker = %s, started_at = %s, error = '' "
            f"FROM {run} r WHERE c.id = %s AND c.status IN (%s, %s) AND r.id = c.run_id AND r.status = %s "
            f"RETURNING {rows.columns(MetricChunk, 'c')}, {rows.columns(MetricRun, 'r')}",
            [
                ChunkStatus.RUNNING,
                worker[:255],
                timezone.now(),
                chunk_id,
                ChunkStatus.PENDING,
                ChunkStatus.RUNNING,
                RunStatus.RUNNING,
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    claimed = rows.from_row(MetricChunk, row)
    claimed.run = rows.from_row(MetricRun, row, rows.width(MetricChunk))
    return claimed


def chunk_execute(*, chunk_id: int, worker: str | Callable[[], str] = "") -> str:
    """Score one chunk; returns "done", "skipped" (already done, cancelled or
    failed run) or "failed". Transient database errors propagate (the task retries).
    `worker` labels the chunk (a callable is asked again when the chunk is stored,
    so the label can report what scoring did, e.g. models loaded)."""
    label = worker if callable(worker) else (lambda: worker)
    chunk = _claim(chunk_id=chunk_id, worker=label())
    if chunk is None:
        return "skipped"
    run: MetricRun = chunk.run
    delay = getattr(settings, "WORKBENCH_METRIC_CHUNK_DELAY", 0.0)
    if delay:  # test hook: keeps a chunk in flight long enough to kill its worker
        logger.warning("metric chunk %s: in flight (pid %s)", chunk_id, os.getpid())
        time.sleep(delay)
    try:
        metric = build_metric(run)
        metric.load_corpus_state(run.shared_state)
        inputs = load_inputs(output_ids=chunk.output_ids, metric=metric)
        reuse_key_fill_start()
        kwargs = metric_inputs(metric, inputs)
        if streams(metric):  # scored inside the transaction, each batch stored as it comes
            # No look at the run between these batches: they are consumed inside the COPY that
            # stores them, and the connection can run no other statement until it ends. They are
            # fast (no model); a cancelled run's chunk is still not counted (_chunk_done).
            batches = _batches(metric, inputs.hyps, kwargs)
        else:  # one call, before the transaction opens (a model may take a while)
            watch = _Watch(chunk_id=chunk_id, run_id=run.pk, size=len(inputs.hyps), report=True)
            with progress.watching(watch):
                segments = metric.score(inputs.hyps, **kwargs)
            batches = [_checked(metric, len(inputs.hyps), segments)]
        with transaction.atomic():
            segments = scores_store(run_id=run.pk, output_ids=inputs.output_ids, batches=batches)
            flipped = _chunk_done(chunk_id=chunk_id, metric=metric, inputs=inputs, segments=segments, worker=label)
            if not flipped:
                # The run was cancelled (or failed) while this chunk was scored, or another
                # delivery stored it first: keep no score that `run.done` does not count.
                transaction.set_rollback(True)
    except TRANSIENT_ERRORS:
        raise
    except ChunkStopped:  # its run was cancelled (or failed) while it was scored: the worker is free
        logger.info("metric chunk %s: stopped, its run ended while it was scored", chunk_id)
        return "stopped"
    except Exception as exc:  # missing model, bad input, out of memory: fail with the message, no retry
        if not isinstance(exc, (MetricError, LookupError)):
            logger.exception("metric chunk %s failed", chunk_id)
        run_fail(run_id=run.pk, message=one_line(exc), chunk_id=chunk_id)
        return "failed"
    if flipped:
        run_finalise(run_id=run.pk)
    return "done" if flipped else "skipped"


# Outputs per batch when a chunk's scores are stored while it is being scored.
STREAM_BATCH = 256


def streams(metric: Metric) -> bool:
    """Whether a chunk may be scored in batches, each stored while the next is
    scored: for segment-level metrics without a model, whose score of an output
    depends on that output alone (and on the corpus state loaded before). Model
    metrics score the chunk in one call, as `--sync` does (same batches and
    padding, same numbers); system-level metrics need the whole set."""
    return not metric.uses_model and metric.level == "segment"


def _checked(metric: Metric, expected: int, segments: list) -> list:
    if len(segments) != expected:
        raise LookupError(f"{metric.name} returned {len(segments)} results for {expected} outputs")
    return segments


def _batches(metric: Metric, hyps: list[str], kwargs: dict) -> Iterator[list]:
    for start in range(0, len(hyps), STREAM_BATCH):
        end = min(start + STREAM_BATCH, len(hyps))
        part = {key: None if value is None else value[start:end] for key, value in kwargs.items()}
        yield _checked(metric, end - start, metric.score(hyps[start:end], **part))


class ChunkStopped(Exception):
    """The run of a chunk being scored has ended (cancelled, failed): scoring stops."""


# Seconds at least between two looks of a chunk at its run (one statement each: the progress
# written and the run's state read together); batches in between cost nothing. A cancel is seen
# at the first batch boundary after this much time.
PROGRESS_INTERVAL = 0.5


class _Watch:
    """The callback a chunk's scorer calls between batches (metrics.scorers.progress): stores
    how many outputs are scored (`report`: model metrics, before the chunk's transaction, so
    the run page sees it) and raises ChunkStopped once the run is no longer running; with
    `report` off it only reads the run's status."""

    def __init__(self, *, chunk_id: int, run_id: int, size: int = 0, report: bool = False) -> None:
        self.chunk_id, self.run_id, self.size, self.report = chunk_id, run_id, size, report
        self.last = -math.inf
        self.shown = 0
        self.held = False

    def __call__(self, done: int | None, total: int | None) -> None:
        scored = self.shown
        if self.report and done is not None and total:
            scored = max(self.shown, min(self.size, self.size * done // total))
        hold = getattr(settings, "WORKBENCH_METRIC_PROGRESS_HOLD", "")
        holding = bool(hold) and self.report and not self.held and 0 < scored < self.size
        now = time.monotonic()
        if now - self.last < PROGRESS_INTERVAL and not holding:
            return
        self.last = now
        chunk, run = rows.table(MetricChunk), rows.table(MetricRun)
        with connection.cursor() as cursor:
            if self.report:
                cursor.execute(
                    # updated_at: a sign of life, so a long chunk is not taken as lost (services.recovery).
                    f"UPDATE {chunk} c SET scored = GREATEST(c.scored, %s), updated_at = %s FROM {run} r "
                    f"WHERE c.id = %s AND c.status = %s AND r.id = c.run_id AND r.status = %s RETURNING c.id",
                    [scored, timezone.now(), self.chunk_id, ChunkStatus.RUNNING, RunStatus.RUNNING],
                )
            else:
                cursor.execute(f"SELECT id FROM {run} WHERE id = %s AND status = %s", [self.run_id, RunStatus.RUNNING])
            alive = cursor.fetchone() is not None
        if not alive:
            raise ChunkStopped(f"chunk {self.chunk_id}: its run is no longer running")
        self.shown = scored
        if holding:
            self.held = True
            timeout = getattr(settings, "WORKBENCH_METRIC_PROGRESS_HOLD_TIMEOUT", 120.0)
            _hold(hold, f"metric chunk {self.chunk_id}: held at {scored}/{self.size}", timeout=timeout)


def _hold(
    path: str,
    what: str,
    *,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], object] = time.sleep,
) -> bool:
    """Test hook (WORKBENCH_METRIC_PROGRESS_HOLD): the chunk, its progress inside it stored,
    waits until the file `path` exists, so a test sees that progress before the chunk ends
    whatever the machine's speed (a tiny model scores a chunk in less than a poll). At most
    `timeout` seconds (WORKBENCH_METRIC_PROGRESS_HOLD_TIMEOUT): a test that died before creating
    the file must not keep the worker on this chunk for ever; then the chunk goes on, logged.
    True when the file appeared, False when the wait ran out."""
    logger.warning("%s until %s exists, at most %g s (test hook)", what, path, timeout)
    deadline = clock() + timeout
    while not os.path.exists(path):
        if clock() >= deadline:
            logger.warning("%s: %s still absent after %g s; going on (test hook)", what, path, timeout)
            return False
        pause(0.05)
    return True


def _chunk_done(*, chunk_id: int, metric: Metric, inputs, segments: list, worker: Callable[[], str]) -> bool:
    """Flip the chunk running → done with its result and count its outputs, in the
    transaction that stored its scores; False when another delivery did it first."""
    result = metric.corpus_score(segments).as_dict() if metric.level == "system" else None
    if result is None and type(metric).corpus_score is Metric.corpus_score:
        result = stats_totals(inputs.system_names, [jsonable(seg.stats) for seg in segments])
    chunk, run_table = rows.table(MetricChunk), rows.table(MetricRun)
    with connection.cursor() as cursor:  # one statement: the flip, and the count only if it flipped
        cursor.execute(
            f"WITH flipped AS (UPDATE {chunk} SET status = %s, finished_at = %s, result = %s, worker = %s "
            f"WHERE id = %s AND status = %s RETURNING run_id) "
            f"UPDATE {run_table} r SET done = r.done + %s FROM flipped WHERE r.id = flipped.run_id RETURNING r.id",
            [
                ChunkStatus.DONE,
                timezone.now(),
                rows.json_param(MetricChunk, "result", jsonable(result)),
                worker()[:255],
                chunk_id,
                ChunkStatus.RUNNING,
                len(segments),
            ],
        )
        return cursor.fetchone() is not None
