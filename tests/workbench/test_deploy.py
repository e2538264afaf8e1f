"""Production settings: `check --deploy` is silent, HTTPS is enforced behind a
TLS-terminating proxy that sets X-Forwarded-Proto, and every response carries
the Content-Security-Policy of the front-end rules."""

import os
import secrets
import subprocess
import sys

import pytest
from django.test import Client, override_settings

from tests.conftest import ROOT

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


def production_env(**extra) -> dict:
    """What a production host has: no DJANGO_DEBUG, no local .env, a real secret key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="workbench.settings.base",
        DJANGO_READ_DOT_ENV_FILE="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="workbench.example.org",
        **extra,
    )
    return env


def test_check_deploy_prints_no_warning():
    proc = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "System check identified no issues (0 silenced)." in proc.stdout
    assert "WARNING" not in proc.stderr and "?: (security" not in proc.stdout + proc.stderr


def test_production_settings_values():
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DEBUG, s.SECURE_SSL_REDIRECT, s.SECURE_PROXY_SSL_HEADER, s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS >= 31536000, "
        "s.STORAGES['staticfiles']['BACKEND'].startswith('whitenoise'))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=production_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.split() == [
        "False",
        "True",
        "('HTTP_X_FORWARDED_PROTO',",
        "'https')",
        "True",
        "True",
        "True",
        "True",
    ], proc.stderr


def parse_csp(header: str) -> dict[str, list[str]]:
    directives = [d.strip().split() for d in header.split(";") if d.strip()]
    return {d[0]: d[1:] for d in directives}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["/accounts/login/", "/api/docs/", "/api/redoc/", "/admin/login/", "/api/projects/", "/no-such-page/"]
)
def test_every_response_carries_the_content_security_policy(url):
    response = Client().get(url)
    assert parse_csp(response["Content-Security-Policy"]) == parse_csp(CSP)
    assert response["X-Frame-Options"] == "DENY" and response["X-Content-Type-Options"] == "nosniff"


@pytest.mark.django_db
@override_settings(
    SECURE_SSL_REDIRECT=True,
    SECURE_HSTS_SECONDS=31536000,
    SECURE_HSTS_INCLUDE_SUBDOMAINS=True,
    SECURE_HSTS_PRELOAD=True,
)
def test_https_is_enforced_and_the_proxy_header_is_trusted():
    client = Client()
    plain = client.get("/accounts/login/")
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    proxied = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
