"""Issue 24 lows on metric runs: a broker that is down fails the run (it stayed "queued"
forever), and a run cancelled while a chunk is in flight stores no score it does not count
(it reported done 20 with 40 scores stored)."""

import threading
import time

import pytest
from django.db import connections

from metrics.models import MetricChunk, MetricRun, OutputScore, RunStatus
from metrics.services import chunk_execute, run_cancel, run_create
from metrics.services.runs import run_prepare
from tests.metrics.conftest import build_dataset


@pytest.fixture
def broker_down(monkeypatch):
    """The real Celery app pointed at a port where nothing listens (no mock of the task)."""
    from workbench.celery import app

    saved = (app.conf.broker_url, app.conf.broker_transport_options, app.conf.task_publish_retry_policy)

    def fresh_pools():  # the next send connects anew, to whatever broker_url says then
        app._pool = None
        app.amqp._producer_pool = None

    # Celery reads CELERY_BROKER_URL from the environment before its settings.
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:9/0")
    app.conf.broker_url = "redis://127.0.0.1:9/0"
    app.conf.broker_transport_options = {}
    app.conf.task_publish_retry_policy = {"max_retries": 0}
    fresh_pools()
    assert "127.0.0.1:9/" in app.connection_for_write().as_uri()
    yield
    monkeypatch.undo()
    app.conf.broker_url, app.conf.broker_transport_options, app.conf.task_publish_retry_policy = saved
    fresh_pools()


@pytest.mark.django_db
def test_a_run_that_cannot_be_queued_fails_with_a_message(broker_down, django_capture_on_commit_callbacks, caplog):
    dataset = build_dataset(name="broker-down", items=2, systems=1)
    with django_capture_on_commit_callbacks(execute=True):
        run, _ = run_create(dataset=dataset, metric="chrf")
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert "task queue is unreachable" in run.error
    assert "Traceback" not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_runs_counts_match_its_stored_scores(settings):
    dataset = build_dataset(name="cancel-count", items=10, systems=4)
    run, _ = run_create(dataset=dataset, metric="chrf", sync=True, chunk_size=20)
    chunk_ids = run_prepare(run_id=run.pk)
    assert len(chunk_ids) == 2
    assert chunk_execute(chunk_id=chunk_ids[0]) == "done"
    settings.WORKBENCH_METRIC_CHUNK_DELAY = 1.5  # the second chunk is in flight when the run is cancelled

    def second():
        try:
            chunk_execute(chunk_id=chunk_ids[1])
        finally:
            connections.close_all()

    worker = threading.Thread(target=second)
    worker.start()
    time.sleep(0.5)
    assert run_cancel(run=MetricRun.objects.get(pk=run.pk))
    worker.join()
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert run.done == 20 == OutputScore.objects.filter(run=run).count()
    assert MetricChunk.objects.filter(run=run, status="done").count() == 1
