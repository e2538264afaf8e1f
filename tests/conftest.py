import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests import db_flush
from tests.celery_workers import (
    SHARED_WORKER,
    purge_queues,
    shared_worker_paused,
    spawn_worker,
    worker_idle,
)
from tests.waiting import wait_until
from tests.xdist_once import built_once
from workbench.celery_spawn import worker_stop

ROOT = Path(__file__).resolve().parent.parent
# WORKBENCH_SHARED_DATA points elsewhere, e.g. from a git worktree that does not sit beside shared/.
SHARED_DATA = Path(os.environ.get("WORKBENCH_SHARED_DATA") or ROOT.parent / "shared" / "data")

# Transactional tests end with their tables emptied by DELETE, not TRUNCATE (tests/db_flush.py).
db_flush.install()

# The test database cloned from a migrated template (tests/db_template.py); one node id per test (tests/node_ids.py).
pytest_plugins = ("tests.db_template", "tests.node_ids")


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
def django_db_setup(django_db_setup_from_template, django_db_blocker):
    """The test database (cloned: tests/db_template.py), its commits not waiting for the WAL to reach the disk
    (`synchronous_commit = off`, on this database only: it is dropped at the end anyway). Every
    commit of a transactional test, of the live server and of a Celery worker otherwise waits for an
    fsync: 3-4 ms against 0.4-0.5 ms measured on the loaded 2-core machine. A crash of the server
    could lose the last commits, never corrupt the database; no test crashes it."""
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        name = connection.ops.quote_name(connection.settings_dict["NAME"])
        cursor.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")  # connections opened from now on
        cursor.execute("SET synchronous_commit = off")  # and this one


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
    compressed), once per run (one pytest-xdist process builds it for all: tests/xdist_once.py) into a
    STATIC_ROOT of its own; returns that folder. Compressing every file takes a while, and the tests that
    serve production pages (tests/browser/test_production.py, tests/workbench/test_worker_modules.py) only
    read what it wrote."""

    def collect(folder: Path) -> None:
        root = folder / "static"
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

    return built_once(tmp_path_factory, "collected", collect) / "static"


# --- Celery workers (tests/celery_workers.py) ----------------------------------------------------------------


@pytest.fixture
def no_worker():
    """No worker takes tasks during the test (what is queued stays queued): the session's shared
    worker, if an earlier test started it, stops consuming and resumes afterwards with the queues
    emptied of this test's tasks."""
    with shared_worker_paused(purge_first=False):
        yield


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
    started = []

    def start(**extra_env):
        proc, _ = spawn_worker(db, extra_env)
        started.append(proc)
        return proc

    with shared_worker_paused():
        try:
            yield start
        finally:
            for proc in started:
                worker_stop(proc)


@pytest.fixture(scope="session")
def shared_celery_worker(django_db_setup):
    """The session's one worker process (after `django_db_setup`: it reads the test database, and it
    ends before that database is dropped)."""
    from django.db import connection

    proc, host = spawn_worker(connection.settings_dict, {})
    SHARED_WORKER["host"] = host
    yield proc
    SHARED_WORKER.clear()
    worker_stop(proc)


@pytest.fixture
def celery_worker_process(shared_celery_worker, transactional_db):
    """A real Celery worker consuming the queues: the session's shared process, its queues purged,
    and idle again (no task running or held) when the test ends, so nothing of this test's reaches
    the next. `transactional_db`: the worker's own connection sees only committed rows."""
    host = SHARED_WORKER["host"]
    purge_queues()
    yield shared_celery_worker
    wait_until(lambda: worker_idle(host), 120, f"shared celery worker {host} to finish this test's tasks")


@pytest.fixture
def registered():
    """The built-in protocols and the test-only one (tests/protocol_plugin.py), registered the way
    a deployment adds a protocol: through WORKBENCH_PROTOCOLS."""
    from django.test import override_settings

    from tests.protocol_plugin import WITH_PLUGIN

    with override_settings(WORKBENCH_PROTOCOLS=WITH_PLUGIN):
        yield WITH_PLUGIN
