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
MEDIA_ROOT = VAR_DIR / "test-media"  # noqa: F405
WORKBENCH_MEDIA_ROOT = MEDIA_ROOT / "items"
# Off, except in the tests that time unit answers (they set it): the rest would only wait.
WORKBENCH_UNIT_RESPONSE_FLOOR_MS = 0
# Figures on workers (issue 45): the tests compute figures in the request, as they always did, unless
# they set a threshold (tests/annotations/analysis/test_figures_on_workers.py); production's is 2,000.
WORKBENCH_FIGURES_INLINE_MAX = env.int("WORKBENCH_FIGURES_INLINE_MAX", default=1_000_000)  # noqa: F405
