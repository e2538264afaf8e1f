"""A broker that loses its messages mid-run: Redis SIGKILLed and restarted empty.

A real redis-server of this test's own on a spare port (never the shared one), a real
Celery worker with beat on it, a 10-chunk chrF run: the chunks whose messages were lost
are sent again by the periodic check, and every output is scored exactly once."""

import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from celery import Celery

from metrics.models import ChunkStatus, MetricRun, OutputScore, RunStatus
from metrics.services import run_create
from tests.celery_workers import purge_queues
from tests.conftest import ROOT
from tests.metrics.conftest import build_dataset
from tests.waiting import wait_until
from workbench.celery_spawn import worker_stop

pytestmark = pytest.mark.skipif(not Path("/usr/bin/redis-server").exists(), reason="redis-server is not installed")


def _spare_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _redis(port: int) -> subprocess.Popen:
    """A redis-server that keeps nothing on disk: killed, it comes back empty."""
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    wait_until(answers, 30, f"redis-server on port {port}")
    return proc


@pytest.fixture
def own_redis():
    port = _spare_port()
    servers = [_redis(port)]

    class Server:
        url = f"redis://127.0.0.1:{port}/0"

        def kill_and_restart_empty(self) -> None:
            os.kill(servers[-1].pid, signal.SIGKILL)
            servers[-1].wait(timeout=30)
            servers.append(_redis(port))

    yield Server()
    for proc in servers:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture
def worker_on(transactional_db, no_worker, tmp_path):
    """A Celery worker with embedded beat on the given broker, reading the test database."""
    from django.db import connection

    db = connection.settings_dict
    started = []

    def start(broker: str, **extra_env) -> subprocess.Popen:
        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="workbench.settings.test",
            DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            CELERY_BROKER_URL=broker,
            CELERY_RESULT_BACKEND=broker,
            PYTHONUNBUFFERED="1",
            **{k: str(v) for k, v in extra_env.items()},
        )
        name = f"lost-{uuid.uuid4().hex[:8]}@%h"
        log = open(ROOT / "var" / f"test-worker-{uuid.uuid4().hex[:8]}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workbench", "worker", "-B", "-s", str(tmp_path / "beat"),
             "-Q", "cpu,gpu", "--pool", "solo", "-n", name, "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        proc.log_path, proc.log_file = log.name, log
        started.append(proc)
        host = name.replace("%h", os.uname().nodename)

        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"the worker exited with {proc.returncode}; see {log.name}")
            return f"{host} ready." in Path(log.name).read_text()

        wait_until(ready, 90, f"worker {host} to say it is ready ({log.name})")
        return proc

    yield start
    for proc in started:
        worker_stop(proc)


# Ten chunks of four outputs (it was twenty: each chunk costs the test its 0.5 s delay, one after
# another on the solo worker). Redis is killed once three are scored: seven chunks' messages are
# still queued and lost, as many as any run needs to show they are sent again, and the seven
# chunks' delays (3.5 s) keep the run from finishing between the third chunk and the kill.
ITEMS, SYSTEMS, CHUNK = 20, 2, 4
OUTPUTS = ITEMS * SYSTEMS


def test_run_survives_a_redis_sigkill_with_every_output_scored_once(own_redis, worker_on):
    dataset = build_dataset(name="lost-messages", items=ITEMS, systems=SYSTEMS)
    worker = worker_on(
        own_redis.url,
        WORKBENCH_METRIC_CHUNK_DELAY="0.5",  # keeps the run going long enough to kill Redis mid-run
        WORKBENCH_METRIC_CHUNK_STALE_SECONDS="3",
        WORKBENCH_METRIC_REQUEUE_INTERVAL="1",
    )
    run, _ = run_create(dataset=dataset, metric="chrf", chunk_size=CHUNK)
    purge_queues()  # run_create's message went to the suite's broker: this run goes through our own
    Celery(broker=own_redis.url, set_as_current=False).send_task("metrics.run_prepare", args=[run.pk], queue="cpu")
    wait_until(
        lambda: run.chunks.count() == OUTPUTS // CHUNK, 60, f"the run to be planned in {OUTPUTS // CHUNK} chunks"
    )
    wait_until(lambda: MetricRun.objects.get(pk=run.pk).done >= 3 * CHUNK, 120, "three chunks scored")

    own_redis.kill_and_restart_empty()
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.done < run.total == OUTPUTS  # killed mid-run

    done = wait_until(
        lambda: MetricRun.objects.filter(pk=run.pk, status=RunStatus.DONE).first(),
        300,
        f"the run to finish after the broker lost its messages (worker log {worker.log_path})",
    )
    assert done.done == done.total == OUTPUTS
    assert OutputScore.objects.filter(run=done).count() == OUTPUTS
    assert OutputScore.objects.filter(run=done).values("output_id").distinct().count() == OUTPUTS
    assert set(done.chunks.values_list("status", flat=True)) == {ChunkStatus.DONE}
    assert "sent again" in Path(worker.log_path).read_text()  # the periodic check did it
