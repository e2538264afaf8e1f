"""Explicit test settings: PostgreSQL and Redis, as in CI."""

import getpass
import os
import tempfile

os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("CELERY_RESULT_BACKEND", "redis://127.0.0.1:6379/15")
os.environ.setdefault("WORKBENCH_DEVICE", "cpu")


def _redis_db_of_worker(url: str, index: int) -> str:
    """`url` with its Redis database moved `index` places down (mod 16, Redis' default count): the xdist
    worker gw0 keeps the given one (15 by default), gw1 takes 14, and so on."""
    head, _, tail = url.rpartition("/")
    if not url.startswith("redis://") or not tail.isdigit():
        return url
    return f"{head}/{(int(tail) - index) % 16}"


# Under pytest-xdist (`make test` with WORKBENCH_TEST_WORKERS) each worker process gwN has its own
# PostgreSQL database (pytest-django suffixes the test database with _gwN) and needs its own Redis
# database too: a test purges the Celery queues, which would drop another worker's tasks. Done once per
# worker: the environment carries the moved URLs, and WORKBENCH_TEST_REDIS_MOVED tells the processes a
# test starts (Celery workers, gunicorn), which inherit it, not to move them again.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _xdist_worker.startswith("gw") and _xdist_worker[2:].isdigit():
    if not os.environ.get("WORKBENCH_TEST_REDIS_MOVED"):
        for _name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
            os.environ[_name] = _redis_db_of_worker(os.environ[_name], int(_xdist_worker[2:]))
        os.environ["WORKBENCH_TEST_REDIS_MOVED"] = _xdist_worker
# The scorer tests write models, baselines and templates under pytest's temporary directories;
# tests of the directory rule itself narrow these (metrics.scorers.files).
_pytest_tmp = os.path.join(tempfile.gettempdir(), f"pytest-of-{getpass.getuser()}")
os.environ.setdefault("WORKBENCH_MODEL_DIRS", _pytest_tmp)
os.environ.setdefault("WORKBENCH_DATA_DIRS", _pytest_tmp)

from .base import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = ["*"]

# The test client and the live server speak plain HTTP; everything else is production's.
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
# No collectstatic before the tests: serve the source folders, unhashed.
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
# One folder per xdist worker: exports are written under MEDIA_ROOT/exports/<id>/, and every worker's
# database hands out the same ids.
MEDIA_ROOT = VAR_DIR / "test-media" / _xdist_worker if _xdist_worker else VAR_DIR / "test-media"  # noqa: F405
WORKBENCH_MEDIA_ROOT = MEDIA_ROOT / "items"
# Off, except in the tests that time unit answers (they set it): the rest would only wait.
WORKBENCH_UNIT_RESPONSE_FLOOR_MS = 0
# Figures on workers (issue 45): the tests compute figures in the request, as they always did, unless
# they set a threshold (tests/annotations/analysis/test_figures_on_workers.py); production's is 2,000.
WORKBENCH_FIGURES_INLINE_MAX = env.int("WORKBENCH_FIGURES_INLINE_MAX", default=1_000_000)  # noqa: F405
