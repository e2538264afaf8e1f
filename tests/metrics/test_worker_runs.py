"""Metric runs through real Celery worker processes on Redis and PostgreSQL."""

import os
import re
import signal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from metrics.models import ChunkStatus, MetricRun, OutputScore, RunStatus
from metrics.services import run_create, run_execute_sync
from tests.metrics.conftest import build_dataset
from tests.waiting import wait_until


@pytest.fixture
def start_worker(start_celery_worker):
    """Workers whose broker re-delivers an unacknowledged task within seconds (not the default hour)."""
    return lambda **env: start_celery_worker(
        WORKBENCH_BROKER_VISIBILITY_TIMEOUT="5", WORKBENCH_BROKER_RESTORE_INTERVAL="1", **env
    )


def tasks_ended(worker, task: str) -> int:
    """How many `task` messages the worker has finished (its INFO log line per task)."""
    return len(re.findall(rf"Task {re.escape(task)}\[[^\]]+\] succeeded", Path(worker.log_path).read_text()))


def test_sigkilled_worker_chunk_is_redelivered_and_run_equals_sync(start_worker):
    dataset = build_dataset(name="killme", items=30, systems=3)
    first = start_worker(WORKBENCH_METRIC_CHUNK_DELAY="1.5")
    run, _ = run_create(dataset=dataset, metric="chrf", chunk_size=10)
    # Kill the worker while a chunk is in flight (after at least one chunk is stored).
    wait_until(
        lambda: MetricRun.objects.get(pk=run.pk).done >= 10 and run.chunks.filter(status=ChunkStatus.RUNNING).exists(),
        60,
        "a chunk in flight",
    )
    in_flight = run.chunks.get(status=ChunkStatus.RUNNING)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.done < run.total

    second = start_worker()
    run = wait_until(lambda: MetricRun.objects.filter(pk=run.pk, status=RunStatus.DONE).first(), 150, "the run")
    in_flight.refresh_from_db()
    assert in_flight.status == ChunkStatus.DONE and in_flight.attempts == 2
    assert run.done == run.total == 90
    assert OutputScore.objects.filter(run=run).count() == 90  # every output exactly once
    assert set(run.chunks.values_list("status", flat=True)) == {ChunkStatus.DONE}

    # The same chunks delivered again through the broker (twice each) change nothing.
    from metrics.tasks import chunk_execute_task

    stored = sorted(OutputScore.objects.filter(run=run).values_list("output_id", "score", "stats"))
    chunk_ids = list(run.chunks.values_list("pk", flat=True))
    for chunk_id in chunk_ids * 2:
        chunk_execute_task.apply_async(args=[chunk_id], queue="cpu")
    wait_until(
        lambda: Path(second.log_path).read_text().count("'skipped'") >= 2 * len(chunk_ids),
        60,
        "the duplicates to be consumed",
    )
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.done == 90
    assert sorted(OutputScore.objects.filter(run=run).values_list("output_id", "score", "stats")) == stored

    sync = run_execute_sync(run=run_create(dataset=dataset, metric="chrf", sync=True, reuse=False)[0])
    assert sync.signature == run.signature
    assert sync.corpus == run.corpus  # bit-identical, per system too
    assert dict(OutputScore.objects.filter(run=sync).values_list("output_id", "score")) == dict(
        OutputScore.objects.filter(run=run).values_list("output_id", "score")
    )
    # The worker stored the key its first run was created without (no done run to reuse then):
    # the same request now gets that run back instead of a new one.
    assert run.reuse_key and run.reuse_key == sync.reuse_key
    again, reused = run_create(dataset=dataset, metric="chrf")
    assert reused and again.pk in (run.pk, sync.pk)


def test_worker_loads_the_model_once_and_matches_sync_bertscore(start_worker):
    dataset = build_dataset(name="bert", items=8, systems=2)
    start_worker()
    run, _ = run_create(dataset=dataset, metric="bertscore", chunk_size=4)
    run = wait_until(
        lambda: MetricRun.objects.filter(pk=run.pk).exclude(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).first(),
        240,
        "the run",
    )
    assert run.status == RunStatus.DONE, run.error
    workers = list(run.chunks.values_list("worker", flat=True))
    assert len(workers) == 4
    assert len({w.split(" models_loaded=")[0] for w in workers}) == 1  # one process
    assert all(w.endswith(" models_loaded=1") for w in workers), workers  # loaded once for 4 chunks

    sync = run_execute_sync(
        run=run_create(dataset=dataset, metric="bertscore", sync=True, reuse=False, chunk_size=4)[0]
    )
    assert sync.signature == run.signature and "dtype:fp32" in run.signature
    assert sync.corpus == run.corpus


def test_missing_model_fails_on_the_worker_and_cli_says_why(celery_worker_process, capsys):
    dataset = build_dataset(name="nomodel", items=3, systems=1)
    with pytest.raises(CommandError, match="model 'absent-model': not allowed or not found"):
        call_command(
            "run_metric",
            dataset="nomodel",
            metric="bertscore",
            option=["model=absent-model"],
            timeout=120,
            no_progress=True,
        )
    run = MetricRun.objects.get(dataset=dataset)
    assert run.status == RunStatus.FAILED and "absent-model" in run.error
    assert "Traceback" not in run.error and "\n" not in run.error


def test_cancel_through_the_worker(start_worker):
    dataset = build_dataset(name="cancelme", items=20, systems=2)
    worker = start_worker(WORKBENCH_METRIC_CHUNK_DELAY="1.0")
    run, _ = run_create(dataset=dataset, metric="chrf", chunk_size=5)
    wait_until(lambda: MetricRun.objects.get(pk=run.pk).done >= 5, 60, "a first chunk")
    from metrics.services import run_cancel

    run.refresh_from_db()
    assert run_cancel(run=run)
    # Only once the worker has ended every task of the run (the chunk in flight finished,
    # the others skipped) could a late write have undone the cancel: wait for that.
    chunks = run.chunks.count()
    wait_until(
        lambda: (
            tasks_ended(worker, "metrics.run_prepare") >= 1
            and tasks_ended(worker, "metrics.chunk_execute") >= chunks - 1
        ),
        60,
        "every chunk task to end",
    )
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.done < run.total and run.corpus is None
    assert not run.chunks.filter(status=ChunkStatus.PENDING).exists()
