import os
import subprocess
import sys

from tests.conftest import ROOT


def test_production_settings_refuse_to_start_without_secret_key():
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    env["DJANGO_SETTINGS_MODULE"] = "workbench.settings.base"
    env["DJANGO_DEBUG"] = "0"
    # As on a production host: the local .env (debug mode, a key of its own) is not read.
    env["DJANGO_READ_DOT_ENV_FILE"] = "0"
    code = "import django; django.setup()"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "DJANGO_SECRET_KEY" in proc.stderr


def test_a_command_without_configuration_says_what_to_set_in_one_line():
    env = {
        k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG", "DJANGO_SETTINGS_MODULE")
    }
    env["DJANGO_READ_DOT_ENV_FILE"] = "0"  # as in a checkout without .env
    proc = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith("configuration: Set the DJANGO_SECRET_KEY environment variable")


def test_tests_run_on_postgresql():
    from django.db import connection

    assert connection.vendor == "postgresql"
