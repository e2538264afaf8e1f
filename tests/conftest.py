import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# WORKBENCH_SHARED_DATA points elsewhere, e.g. from a git worktree that does not sit beside shared/.
SHARED_DATA = Path(os.environ.get("WORKBENCH_SHARED_DATA") or ROOT.parent / "shared" / "data")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real public datasets beside the project (never copied into it)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real-data folder {SHARED_DATA} is absent (it sits beside the project as ../shared/data)")
    return SHARED_DATA


@pytest.fixture
def celery_worker_process(transactional_db):
    """A real Celery worker process on Redis, reading the test database.

    Needs `transactional_db` so rows written by the test are committed and
    visible to the worker's own connection.
    """
    from django.db import connection

    from workbench.celery import app

    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="workbench.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        CELERY_BROKER_URL=app.conf.broker_url,
        CELERY_RESULT_BACKEND=app.conf.result_backend,
        PYTHONUNBUFFERED="1",
    )
    app.control.purge()
    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / f"test-worker-{uuid.uuid4().hex[:8]}.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workbench", "worker", "-Q", "cpu,gpu", "--pool", "solo",
         "-n", f"test-{uuid.uuid4().hex[:8]}@%h", "--loglevel", "INFO"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {proc.returncode}; see {log.name}")
            if app.control.ping(timeout=1.0):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"celery worker did not answer within 90 s; see {log.name}")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
