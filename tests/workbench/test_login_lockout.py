"""Throttling and lock-out on every login path: API token, login page, admin login.

django-axes counts failed logins per account and, separately, per address;
after WORKBENCH_LOGIN_FAILURE_LIMIT (5) failures the account or the address
is locked out (429) for WORKBENCH_LOGIN_LOCKOUT_MINUTES, even with the right
password. The token endpoint is also rate-limited per address and per
account (DRF throttles).
"""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.annotations.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_throttles")]

LIMIT = 5
PASSWORD = "pw-123456"  # the factories' password


def token(client, username, password, ip="10.0.0.1"):
    return client.post("/api/auth/token/", {"username": username, "password": password}, format="json", REMOTE_ADDR=ip)


def page_login(client, url, username, password, ip="10.0.0.1"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_token_locks_the_account_after_repeated_failures_even_for_the_right_password():
    UserFactory(username="alice")
    client = APIClient()
    assert token(client, "alice", PASSWORD).status_code == 200
    for _ in range(LIMIT - 1):
        assert token(client, "alice", "wrong").status_code == 400
    assert token(client, "alice", "wrong").status_code == 429  # the LIMIT-th failure locks
    # Locked: the right password no longer works, from this address ...
    refused = token(client, "alice", PASSWORD)
    assert refused.status_code == 429
    assert "Too many failed logins" in refused.json()["detail"] and "token" not in refused.json()
    # ... nor from another one (per account).
    elsewhere = token(client, "alice", PASSWORD, ip="10.9.9.9")
    assert elsewhere.status_code == 429 and "token" not in elsewhere.json()
    # Another account from a fresh address is unaffected.
    UserFactory(username="bob")
    assert token(client, "bob", PASSWORD, ip="10.7.7.7").status_code == 200


def test_token_locks_the_address_that_tries_many_accounts():
    users = [UserFactory(username=f"user{i}") for i in range(LIMIT + 1)]
    client = APIClient()
    for user in users[:LIMIT]:
        token(client, user.username, "wrong", ip="10.0.0.66")
    # A valid login from the same address is refused (per address) ...
    assert token(client, users[LIMIT].username, PASSWORD, ip="10.0.0.66").status_code == 429
    # ... but works from another.
    assert token(client, users[LIMIT].username, PASSWORD, ip="10.0.0.67").status_code == 200


def test_token_endpoint_is_rate_limited_per_address():
    client = APIClient()
    statuses = [token(client, f"nobody{i}", "x", ip="10.1.1.1").status_code for i in range(40)]
    assert 429 in statuses
    first = statuses.index(429)
    assert all(s == 429 for s in statuses[first:])
    assert token(client, "nobody", "x", ip="10.1.1.2").status_code == 400  # another address: its own budget


def test_token_endpoint_is_rate_limited_per_account_from_many_addresses():
    client = APIClient()
    statuses = [token(client, "carol", "x", ip=f"10.2.0.{i}").status_code for i in range(15)]
    assert statuses[-1] == 429 and statuses[0] == 400


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_login_pages_lock_out_after_repeated_failures(url):
    UserFactory(username="dave", is_staff=True)
    client = Client()
    for _ in range(LIMIT - 1):
        response = page_login(client, url, "dave", "wrong")
        assert response.status_code == 200  # the form again, with an error
    assert page_login(client, url, "dave", "wrong").status_code == 429  # the LIMIT-th failure locks
    locked = page_login(client, url, "dave", PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # Per address: another account from the same address is refused too.
    UserFactory(username="erin", is_staff=True)
    assert page_login(client, url, "erin", PASSWORD).status_code == 429


def test_a_successful_login_resets_the_count():
    UserFactory(username="frank")
    client = Client()
    for _ in range(LIMIT - 1):
        page_login(client, "/accounts/login/", "frank", "wrong")
    assert page_login(client, "/accounts/login/", "frank", PASSWORD).status_code == 302
    client.logout()
    for _ in range(LIMIT - 1):
        page_login(client, "/accounts/login/", "frank", "wrong")
    assert page_login(client, "/accounts/login/", "frank", PASSWORD).status_code == 302


def test_forwarded_address_is_used_only_behind_a_configured_proxy(settings):
    from django.test import RequestFactory

    from workbench.security import client_ip

    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9")
    settings.WORKBENCH_TRUSTED_PROXIES = 0
    assert client_ip(request) == "10.0.0.1"  # a client cannot pick its address
    settings.WORKBENCH_TRUSTED_PROXIES = 1
    assert client_ip(request) == "203.0.113.9"  # the address our proxy saw, not the spoofed one
