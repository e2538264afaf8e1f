import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

ROOT = Path(__file__).resolve().parent.parent
# WORKBENCH_SHARED_DATA points elsewhere, e.g. from a git worktree that does not sit beside shared/.
SHARED_DATA = Path(os.environ.get("WORKBENCH_SHARED_DATA") or ROOT.parent / "shared" / "data")
T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.1,
               pause: Callable[[float], object] = time.sleep) -> T:
    """Poll `predicate` until it answers something truthy (returned) or `timeout`
    seconds pass (an AssertionError saying what never happened). For what a
    test cannot be told about: another process's write, a lock another
    connection waits for, a server that starts listening. Never a fixed sleep:
    a busy machine only makes the wait longer, not the test wrong. `pause`
    waits between polls (browser tests pass one that keeps Playwright's
    event loop running: see tests/browser/conftest.py `browser_wait_until`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        pause(interval)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real public datasets beside the project (never copied into it)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real-data folder {SHARED_DATA} is absent (it sits beside the project as ../shared/data)")
    return SHARED_DATA


@pytest.fixture
def fresh_throttles():
    """An empty cache before and after the test: request throttles and login counts start from zero."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def start_celery_worker(transactional_db):
    """Start real Celery worker processes on Redis, reading the test database:
    `start(**env)` returns the process (its log file at `.log_path`) once it
    answers a ping. The solo pool runs a task in the process a test may kill.

    Needs `transactional_db` so rows written by the test are committed and
    visible to the worker's own connection.
    """
    from django.db import connection

    from workbench.celery import app

    db = connection.settings_dict
    app.control.purge()
    started = []

    def start(**extra_env):
        name = f"test-{uuid.uuid4().hex[:8]}@%h"
        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="workbench.settings.test",
            DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            CELERY_BROKER_URL=app.conf.broker_url,
            CELERY_RESULT_BACKEND=app.conf.result_backend or "",
            PYTHONUNBUFFERED="1",
            **{k: str(v) for k, v in extra_env.items()},
        )
        (ROOT / "var").mkdir(exist_ok=True)
        log = open(ROOT / "var" / f"test-worker-{uuid.uuid4().hex[:8]}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workbench", "worker", "-Q", "cpu,gpu", "--pool", "solo",
             "-n", name, "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        proc.log_path = log.name
        started.append((proc, log))
        host = name.replace("%h", os.uname().nodename)

        def answers() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {proc.returncode}; see {log.name}")
            return bool(app.control.ping(destination=[host], timeout=1.0))

        wait_until(answers, 90, f"celery worker {host} to answer a ping (see {log.name})")
        return proc

    yield start
    for proc, log in started:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()


@pytest.fixture
def celery_worker_process(start_celery_worker):
    """One real Celery worker process (see `start_celery_worker`)."""
    return start_celery_worker()


@pytest.fixture
def registered():
    """The built-in protocols and the test-only one (tests/protocol_plugin.py), registered the way
    a deployment adds a protocol: through WORKBENCH_PROTOCOLS."""
    from django.test import override_settings

    from tests.protocol_plugin import WITH_PLUGIN

    with override_settings(WORKBENCH_PROTOCOLS=WITH_PLUGIN):
        yield WITH_PLUGIN
