import os
import subprocess
import sys

from tests.conftest import ROOT


def test_production_settings_refuse_to_start_without_secret_key():
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    env["DJANGO_SETTINGS_MODULE"] = "workbench.settings.base"
    env["DJANGO_DEBUG"] = "0"
    # DJANGO_DEBUG=0 is set explicitly, so the local .env (DJANGO_DEBUG=1) cannot override it.
    code = "import django; django.setup()"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "DJANGO_SECRET_KEY" in proc.stderr


def test_tests_run_on_postgresql():
    from django.db import connection

    assert connection.vendor == "postgresql"
