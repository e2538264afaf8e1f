"""Cancel and progress of metric runs (issue 38, item 7): cancellation reaches a chunk being
scored (checked between its scorer's batches) and frees the worker; model metrics report
progress inside a chunk; runs that wait say why."""

import re
from pathlib import Path

from rest_framework.test import APIClient

from metrics.models import ChunkStatus, MetricRun, OutputScore, RunStatus
from metrics.selectors import run_waiting, with_progress
from metrics.services import run_cancel, run_create, run_prepare
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.metrics.conftest import build_dataset
from tests.waiting import wait_until


def _api(dataset, name):
    user = MembershipFactory(project=dataset.project, user=UserFactory(username=name), role="owner").user
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_cancel_reaches_the_running_chunk_and_the_worker_takes_the_next_task(
    start_celery_worker, judge_models, tmp_path
):
    prompt = tmp_path / "spans.txt"
    prompt.write_text("Mark the errors of: {output}\n[answer]\n", encoding="utf-8")
    dataset = build_dataset(name="long-judge", items=20, systems=3)
    api = _api(dataset, "progress-owner")
    worker = start_celery_worker(WORKBENCH_BROKER_VISIBILITY_TIMEOUT="60")
    # Spans mode generates up to 64 tokens per output, one output a batch: a chunk of 40 takes a while.
    run, _ = run_create(
        dataset=dataset,
        metric="llm-judge",
        chunk_size=40,
        options={
            "model": judge_models["llama"],
            "device": "cpu",
            "batch_size": 1,
            "mode": "spans",
            "max_new_tokens": 64,
            "prompt": str(prompt),
        },
    )

    def in_flight():
        body = api.get(f"/api/metric-runs/{run.pk}/").json()
        return body if body["status"] == "running" and body["done"] == 0 and body["scoring"] > 0 else None

    body = wait_until(in_flight, 240, "progress inside the first chunk")
    assert 0 < body["progress_percent"] < 100 * 40 / 60 and body["percent"] == 0 and body["waiting"] is None
    first = run.chunks.get(index=0)
    assert first.status == ChunkStatus.RUNNING and 0 < first.scored < 40

    assert run_cancel(run=MetricRun.objects.get(pk=run.pk))
    log = Path(worker.log_path)
    wait_until(lambda: f"metric chunk {first.pk}: stopped" in log.read_text(), 120, "the chunk to stop")
    first.refresh_from_db()
    assert first.status == ChunkStatus.CANCELLED and first.scored < 40  # stopped before its end
    # The worker is free: the next run is scored while nothing of the cancelled one is stored.
    other = build_dataset(name="after-cancel", items=3, systems=2)
    after, _ = run_create(dataset=other, metric="chrf")
    wait_until(lambda: MetricRun.objects.filter(pk=after.pk, status=RunStatus.DONE).exists(), 120, "the next run")
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.done == 0 and not OutputScore.objects.filter(run=run).exists()
    ended = re.findall(r"Task metrics\.chunk_execute\[[^\]]+\] succeeded in [^:]+: '(\w+)'", log.read_text())
    assert ended and set(ended) <= {"skipped"}  # the second chunk was never scored


def test_waiting_runs_say_why(db):
    dataset = build_dataset(name="waiting", items=10, systems=2)
    first, _ = run_create(dataset=dataset, metric="chrf", chunk_size=5)
    second, _ = run_create(dataset=dataset, metric="bleu")
    model, _ = run_create(dataset=dataset, metric="bertscore")
    assert run_waiting(run=first) == "queued: waiting for a worker of the cpu queue; 0 tasks of earlier runs ahead"
    assert run_waiting(run=second) == "queued: waiting for a worker of the cpu queue; 1 task of earlier runs ahead"
    assert run_waiting(run=model) == "queued: waiting for a worker of the gpu queue; 0 tasks of earlier runs ahead"
    # Prepared (4 chunks planned, none claimed): each chunk is a task ahead of the next run.
    assert len(run_prepare(run_id=first.pk)) == 4
    first.refresh_from_db()
    assert run_waiting(run=first) == "started: waiting for a worker of the cpu queue; 0 tasks of earlier runs ahead"
    assert run_waiting(run=second) == "queued: waiting for a worker of the cpu queue; 4 tasks of earlier runs ahead"
    body = _api(dataset, "waiting-owner").get(f"/api/metric-runs/{second.pk}/").json()
    assert body["waiting"] == run_waiting(run=second) and body["scoring"] == 0 and body["progress_percent"] == 0
    # A chunk being scored: the run is not waiting; its reported progress is counted.
    first.chunks.filter(index=0).update(status=ChunkStatus.RUNNING, scored=3)
    assert run_waiting(run=first) is None
    assert with_progress(MetricRun.objects.filter(pk=first.pk)).get().scoring == 3
    assert run_cancel(run=first) and run_waiting(run=first) is None
