"""Real Celery worker processes for the tests (the fixtures in tests/conftest.py use these; so do tests
that run workers of their own, e.g. tests/deploy/test_multihost.py).

One worker process serves every test that only needs tasks consumed (`celery_worker_process`): started
once per session, its queues purged around each test. Tests that kill a worker, read its log or start it
with settings of their own (`start_celery_worker`) keep their own processes; while they run, the shared
worker stops consuming (`shared_worker_paused`), so their tasks reach only the workers they started.
"""

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.celery_spawn import WORKER_QUEUES, worker_start

ROOT = Path(__file__).resolve().parent.parent
SHARED_WORKER: dict = {}  # "host" while the session's shared worker is up (tests/conftest.py sets it)


def shared_worker_host() -> str | None:
    """The host name of the session's shared worker, None when no test has started it."""
    return SHARED_WORKER.get("host")


def spawn_worker(db: dict, extra_env: dict) -> tuple[subprocess.Popen, str]:
    """Start a Celery worker process on the test database; return it and its host name once it answers a ping."""
    from workbench.celery import app

    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="workbench.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        CELERY_BROKER_URL=app.conf.broker_url,
        CELERY_RESULT_BACKEND=app.conf.result_backend or "",
        PYTHONUNBUFFERED="1",
        **{k: str(v) for k, v in extra_env.items()},
    )
    return worker_start(env=env, log_dir=ROOT / "var", prefix="test", queues=WORKER_QUEUES)


def purge_queues() -> None:
    """Drop every task waiting in the worker queues (all of them: `control.purge` empties only the default one)."""
    from workbench.celery import app

    with app.connection_for_write() as conn:
        for queue in WORKER_QUEUES:
            conn.default_channel.queue_purge(queue)


def set_consuming(host: str, on: bool) -> None:
    """Make a running worker start or stop taking tasks from the queues, and wait until it says it has."""
    from workbench.celery import app

    for queue in WORKER_QUEUES:
        if on:
            replies = app.control.add_consumer(queue, destination=[host], reply=True, timeout=10)
        else:
            replies = app.control.cancel_consumer(queue, destination=[host], reply=True, timeout=10)
        assert replies, f"worker {host} did not answer a request to {'add' if on else 'cancel'} consumer {queue}"


def worker_idle(host: str) -> bool:
    """True once the worker holds no task: none running, none reserved (what was waiting is purged)."""
    from workbench.celery import app

    purge_queues()
    inspect = app.control.inspect(destination=[host], timeout=2.0)
    active, reserved = inspect.active() or {}, inspect.reserved() or {}
    return host in active and not active[host] and not reserved.get(host)


@contextmanager
def shared_worker_paused(*, purge_first: bool = True) -> Iterator[None]:
    """While the block runs, the session's shared worker (if one is up) takes no task; the worker queues
    are emptied (before, unless `purge_first=False`, and after), and it consumes again afterwards."""
    host = shared_worker_host()
    if host:
        set_consuming(host, on=False)
    if purge_first:
        purge_queues()
    try:
        yield
    finally:
        purge_queues()
        if host:
            set_consuming(host, on=True)
