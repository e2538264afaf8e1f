"""Celery tasks of metric runs: thin, take ids, call services (STYLE.md).

Delivery is at least once: `acks_late` with `reject_on_worker_lost` means a
message is acknowledged only after its chunk is stored, and a worker killed
mid-chunk leaves it unacknowledged, so the broker hands it to another worker
(Redis: after the visibility timeout in settings, 90 s by default). The
services make a second delivery harmless. Retries are for transient
database/broker errors only; bad input or a missing model fails the run.
"""

from __future__ import annotations

import logging
import os
import sys

from celery import shared_task
from django.conf import settings

from metrics.models import MetricRun, metric_queue
from metrics.services import chunk_execute, run_prepare
from metrics.services.common import TRANSIENT_ERRORS
from metrics.services.recovery import runs_stalled_claim
from metrics.services.runs import PREPARE_TASK

logger = logging.getLogger(__name__)

_TASK_OPTIONS = dict(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=8,
)


def run_queue(metric: str) -> str:
    """Model metrics go to the `gpu` queue, the others to `cpu` (metrics.models.metric_queue)."""
    return metric_queue(metric)


def worker_label(task) -> str:
    """Who scored a chunk: worker name, process id and how many models this
    process has loaded so far (a model is loaded once per process, not per chunk)."""
    # Read without importing the encoder module (and torch) into CPU-only workers.
    loads = sum(
        getattr(sys.modules.get(name), "LOADS", 0) for name in ("metrics.scorers.encoder", "metrics.scorers.llm_judge")
    )
    return f"{task.request.hostname or 'local'} pid={os.getpid()} models_loaded={loads}"


@shared_task(name=PREPARE_TASK, **_TASK_OPTIONS)
def run_prepare_task(self, run_id: int) -> None:
    run = MetricRun.objects.only("metric").get(pk=run_id)
    queue = run_queue(run.metric)
    pending = run_prepare(run_id=run_id)
    first = run.chunks.filter(index=0).values_list("pk", flat=True).first()
    for chunk_id in pending:
        if chunk_id != first:
            chunk_execute_task.apply_async(args=[chunk_id], queue=queue)
    # The first chunk rides on this message (one delivery fewer): acks_late, so a worker
    # killed while scoring it leaves this message to be re-delivered, which prepares
    # again (no change) and scores the chunk again (claimable while running; skipped if done).
    if first is not None:
        chunk_execute(chunk_id=first, worker=lambda: worker_label(self))


@shared_task(name="metrics.chunk_execute", **_TASK_OPTIONS)
def chunk_execute_task(self, chunk_id: int) -> str:
    return chunk_execute(chunk_id=chunk_id, worker=lambda: worker_label(self))


@shared_task(name="metrics.requeue_stale", ignore_result=True)
def requeue_stale_task() -> dict:
    """Celery beat's periodic check: send again the messages of runs that stopped moving
    (a broker that lost its messages; metrics.services.recovery)."""
    stalled = runs_stalled_claim(stale_seconds=settings.WORKBENCH_METRIC_CHUNK_STALE_SECONDS)
    for run_id, metric in stalled.prepare:
        run_prepare_task.apply_async(args=[run_id], queue=run_queue(metric))
    for chunk_id, metric in stalled.chunks:
        chunk_execute_task.apply_async(args=[chunk_id], queue=run_queue(metric))
    if stalled.prepare or stalled.chunks:
        logger.warning(
            "metric runs stalled (lost broker messages?): %d prepare and %d chunk messages sent again",
            len(stalled.prepare),
            len(stalled.chunks),
        )
    return {"prepare": len(stalled.prepare), "chunks": len(stalled.chunks)}
