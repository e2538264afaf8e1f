"""Log a browser page in on the live server without driving the login form.

`log_in` runs about a hundred times in tests/browser. Through the form, each one loads the login
page (and its styles and scripts: every test has a fresh browser context), posts it and follows
the redirect. The live server runs in this process on the test database, so the session can be
made here instead, the way the form makes it: Django's test client checks the password through
the same authentication backends (`Client.login`; django-axes' lock-out backend stands aside for a
login without a request, workbench.security), `django.contrib.auth.login` writes the session row,
and the browser gets that session's cookie before it opens the page the form redirects to. The
login form itself keeps its own tests (tests/annotations, tests/browser/test_accessibility.py,
test_csp_and_layout.py). A server in another process (test_production's gunicorn, with its own
secret key, which signs the session) still gets the form: `log_in` in conftest.py decides.
"""

from django.conf import settings
from django.shortcuts import resolve_url
from django.test import Client


def session_log_in(page, live_server_url: str, username: str, password: str) -> None:
    """Log `page` (a browser page on the live server) in as `username` and open LOGIN_REDIRECT_URL."""
    client = Client()
    assert client.login(username=username, password=password), f"{username!r} cannot log in with that password"
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server_url,
                "httpOnly": settings.SESSION_COOKIE_HTTPONLY,
                "sameSite": (settings.SESSION_COOKIE_SAMESITE or "None").capitalize(),
            }
        ]
    )
    page.goto(resolve_url(settings.LOGIN_REDIRECT_URL))
