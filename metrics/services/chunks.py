"""One chunk of a run: claim, score, upsert, count, and finalise after the last.

Exactly-once *effect* under at-least-once delivery: a chunk is (re)claimed by
any delivery while it is pending or running (a worker killed mid-chunk leaves
it running; the broker re-delivers its message), scores are upserts keyed by
(run, output), and the chunk flips running → done and adds to `run.done` in
one conditional UPDATE, so a second delivery rewrites identical scores and
counts nothing.
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from metrics.models import ChunkStatus, MetricChunk, MetricRun, RunStatus
from metrics.scorers import MetricError
from metrics.scorers.base import Metric
from metrics.services.common import TRANSIENT_ERRORS, build_metric, jsonable, metric_inputs, one_line
from metrics.services.inputs import load_inputs
from metrics.services.runs import run_fail, run_finalise, stats_totals
from metrics.services.scores import scores_upsert

logger = logging.getLogger(__name__)


def _claim(*, chunk_id: int, worker: str) -> bool:
    return bool(
        MetricChunk.objects.filter(
            pk=chunk_id,
            status__in=[ChunkStatus.PENDING, ChunkStatus.RUNNING],
            run__status=RunStatus.RUNNING,
        ).update(
            status=ChunkStatus.RUNNING,
            attempts=F("attempts") + 1,
            worker=worker[:255],
            started_at=timezone.now(),
            error="",
        )
    )


def chunk_execute(*, chunk_id: int, worker: str | Callable[[], str] = "") -> str:
    """Score one chunk; returns "done", "skipped" (already done, cancelled or
    failed run) or "failed". Transient database errors propagate (the task retries).
    `worker` labels the chunk (a callable is asked again when the chunk is stored,
    so the label can report what scoring did, e.g. models loaded)."""
    label = worker if callable(worker) else (lambda: worker)
    if not _claim(chunk_id=chunk_id, worker=label()):
        return "skipped"
    chunk = MetricChunk.objects.select_related("run").get(pk=chunk_id)
    run: MetricRun = chunk.run
    delay = getattr(settings, "WORKBENCH_METRIC_CHUNK_DELAY", 0.0)
    if delay:  # test hook: keeps a chunk in flight long enough to kill its worker
        logger.warning("metric chunk %s: in flight (pid %s)", chunk_id, os.getpid())
        time.sleep(delay)
    try:
        metric = build_metric(run)
        metric.load_corpus_state(run.shared_state)
        inputs = load_inputs(output_ids=chunk.output_ids)
        segments = metric.score(inputs.hyps, **metric_inputs(metric, inputs))
        if len(segments) != len(inputs.hyps):
            raise LookupError(f"{metric.name} returned {len(segments)} results for {len(inputs.hyps)} outputs")
        result = metric.corpus_score(segments).as_dict() if metric.level == "system" else None
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:  # missing model, bad input, out of memory: fail with the message, no retry
        if not isinstance(exc, (MetricError, LookupError)):
            logger.exception("metric chunk %s failed", chunk_id)
        run_fail(run_id=run.pk, message=one_line(exc), chunk_id=chunk_id)
        return "failed"

    if result is None and type(metric).corpus_score is Metric.corpus_score:
        result = stats_totals(inputs.system_names, [jsonable(seg.stats) for seg in segments])
    with transaction.atomic():
        scores_upsert(run_id=run.pk, output_ids=inputs.output_ids, segments=segments)
        flipped = MetricChunk.objects.filter(pk=chunk_id, status=ChunkStatus.RUNNING).update(
            status=ChunkStatus.DONE, finished_at=timezone.now(), result=jsonable(result), worker=label()[:255]
        )
        if flipped:
            MetricRun.objects.filter(pk=run.pk).update(done=F("done") + len(segments))
    if flipped:
        run_finalise(run_id=run.pk)
    return "done" if flipped else "skipped"
