import os
import secrets
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


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = 0.1,
    pause: Callable[[float], object] = time.sleep,
) -> T:
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


WORKER_FIXTURES = {"celery_worker_process", "start_celery_worker", "shared_celery_worker"}


def pytest_collection_modifyitems(config, items):
    """Markers that follow from where a test lives and what it uses, so a new test cannot forget them:
    `browser` for tests/browser, `worker` for a test that asks for a Celery worker (`make test-fast`
    leaves both out)."""
    browser = ROOT / "tests" / "browser"
    for item in items:
        if browser in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)
        if WORKER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.worker)


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


@pytest.fixture(scope="session")
def collected_static(tmp_path_factory) -> Path:
    """`collectstatic` as production runs it (the base settings: hashed names, a manifest, every file
    compressed), once per session into a STATIC_ROOT of its own; returns that folder. Compressing every
    file takes a while, and the tests that serve production pages (tests/browser/test_production.py,
    tests/workbench/test_worker_modules.py) only read what it wrote."""
    root = tmp_path_factory.mktemp("collected") / "static"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "WORKBENCH_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="workbench.settings.base",
        DJANGO_READ_DOT_ENV_FILE="0",  # a production host has no `make run` .env
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        WORKBENCH_STATIC_ROOT=str(root),
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert (root / "staticfiles.json").is_file(), sorted(p.name for p in root.iterdir())
    return root


# --- Celery workers ----------------------------------------------------------------------------------------
# One worker process serves every test that only needs tasks consumed (`celery_worker_process`): started
# once per session, its queues purged around each test. Tests that kill a worker, read its log or start it
# with settings of their own (`start_celery_worker`) keep their own processes; while they run, the shared
# worker stops consuming, so their tasks reach only the workers they started.
WORKER_QUEUES = ("cpu", "gpu")
_shared_worker: dict = {}  # "host" while the session's shared worker is up


def _spawn_worker(db: dict, extra_env: dict) -> tuple[subprocess.Popen, str]:
    """Start a Celery worker process on the test database; return it and its host name once it answers a ping."""
    from workbench.celery import app

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
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workbench",
            "worker",
            "-Q",
            ",".join(WORKER_QUEUES),
            "--pool",
            "solo",
            "-n",
            name,
            "--loglevel",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    proc.log_path = log.name
    proc.log_file = log
    host = name.replace("%h", os.uname().nodename)

    def answers() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}; see {log.name}")
        return bool(app.control.ping(destination=[host], timeout=1.0))

    wait_until(answers, 90, f"celery worker {host} to answer a ping (see {log.name})")
    return proc, host


def _stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.log_file.close()


def _purge_queues() -> None:
    """Drop every task waiting in the worker queues (all of them: `control.purge` empties only the default one)."""
    from workbench.celery import app

    with app.connection_for_write() as conn:
        for queue in WORKER_QUEUES:
            conn.default_channel.queue_purge(queue)


def _consume(host: str, on: bool) -> None:
    """Make a running worker start or stop taking tasks from the queues, and wait until it says it has."""
    from workbench.celery import app

    for queue in WORKER_QUEUES:
        if on:
            replies = app.control.add_consumer(queue, destination=[host], reply=True, timeout=10)
        else:
            replies = app.control.cancel_consumer(queue, destination=[host], reply=True, timeout=10)
        assert replies, f"worker {host} did not answer a request to {'add' if on else 'cancel'} consumer {queue}"


def _worker_idle(host: str) -> bool:
    """True once the worker holds no task: none running, none reserved (what was waiting is purged)."""
    from workbench.celery import app

    _purge_queues()
    inspect = app.control.inspect(destination=[host], timeout=2.0)
    active, reserved = inspect.active() or {}, inspect.reserved() or {}
    return host in active and not active[host] and not reserved.get(host)


@pytest.fixture
def no_worker():
    """No worker takes tasks during the test (what is queued stays queued): the session's shared
    worker, if an earlier test started it, stops consuming and resumes afterwards with the queues
    emptied of this test's tasks."""
    shared = _shared_worker.get("host")
    if shared:
        _consume(shared, on=False)
    try:
        yield
    finally:
        if shared:
            _purge_queues()
            _consume(shared, on=True)


@pytest.fixture
def start_celery_worker(transactional_db):
    """Start real Celery worker processes of this test's own on Redis, reading the test database:
    `start(**env)` returns the process (its log file at `.log_path`) once it answers a ping. The solo
    pool runs a task in the process a test may kill. For tests that kill a worker, read its log or give
    it settings (environment) of their own; the others share one (`celery_worker_process`), which is
    paused meanwhile.

    Needs `transactional_db` so rows written by the test are committed and
    visible to the worker's own connection.
    """
    from django.db import connection

    db = connection.settings_dict
    _purge_queues()
    shared = _shared_worker.get("host")
    if shared:
        _consume(shared, on=False)
    started = []

    def start(**extra_env):
        proc, _ = _spawn_worker(db, extra_env)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        _stop_worker(proc)
    _purge_queues()
    if shared:
        _consume(shared, on=True)


@pytest.fixture(scope="session")
def shared_celery_worker(django_db_setup):
    """The session's one worker process (after `django_db_setup`: it reads the test database, and it
    ends before that database is dropped)."""
    from django.db import connection

    proc, host = _spawn_worker(connection.settings_dict, {})
    _shared_worker["host"] = host
    yield proc
    _shared_worker.clear()
    _stop_worker(proc)


@pytest.fixture
def celery_worker_process(shared_celery_worker, transactional_db):
    """A real Celery worker consuming the queues: the session's shared process, its queues purged,
    and idle again (no task running or held) when the test ends, so nothing of this test's reaches
    the next. `transactional_db`: the worker's own connection sees only committed rows."""
    host = _shared_worker["host"]
    _purge_queues()
    yield shared_celery_worker
    wait_until(lambda: _worker_idle(host), 120, f"shared celery worker {host} to finish this test's tasks")


@pytest.fixture
def registered():
    """The built-in protocols and the test-only one (tests/protocol_plugin.py), registered the way
    a deployment adds a protocol: through WORKBENCH_PROTOCOLS."""
    from django.test import override_settings

    from tests.protocol_plugin import WITH_PLUGIN

    with override_settings(WORKBENCH_PROTOCOLS=WITH_PLUGIN):
        yield WITH_PLUGIN
