"""A session's user row is kept a few seconds per process (workbench.auth), as the API keeps a
token's: the annotate pages skip the query, and a deactivated account, a changed password or a
logout still count at once in the process that made them, and everywhere once the copy expires."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings

from annotations import rows
from workbench import auth

pytestmark = pytest.mark.django_db


@pytest.fixture
def logged_in():
    user = get_user_model().objects.create_user("cached", password="x")
    client = Client()
    client.force_login(user)
    return user, client


def _user_queries(client) -> tuple[int, int]:
    table = rows.table(get_user_model())
    with CaptureQueriesContext(connection) as captured:
        status = client.get("/annotate/").status_code
    return status, sum(f"FROM {table}" in q["sql"] for q in captured.captured_queries)


def test_the_user_is_read_once_then_kept(logged_in):
    _, client = logged_in
    assert _user_queries(client) == (200, 1)
    assert _user_queries(client) == (200, 0)


@override_settings(WORKBENCH_SESSION_USER_CACHE_SECONDS=0)
def test_zero_reads_it_every_request(logged_in):
    _, client = logged_in
    for _ in range(2):
        assert _user_queries(client) == (200, 1)


def test_a_deactivated_account_is_logged_out_at_once(logged_in):
    user, client = logged_in
    assert client.get("/annotate/").status_code == 200
    user.is_active = False
    user.save()
    assert client.get("/annotate/").status_code == 302


def test_a_changed_password_ends_the_session_at_once(logged_in):
    user, client = logged_in
    assert client.get("/annotate/").status_code == 200
    user.set_password("y")
    user.save()
    assert client.get("/annotate/").status_code == 302


def test_a_logout_counts_at_once(logged_in):
    _, client = logged_in
    assert client.get("/annotate/").status_code == 200
    client.post("/accounts/logout/")
    assert client.get("/annotate/").status_code == 302


def test_a_change_made_elsewhere_counts_once_the_copy_expires(logged_in):
    """Another process (here: an UPDATE that sends no signal) deactivates the account: this process
    logs the session out when its copy expires (set back rather than waited for)."""
    user, client = logged_in
    assert client.get("/annotate/").status_code == 200
    type(user).objects.filter(pk=user.pk).update(is_active=False)
    assert client.get("/annotate/").status_code == 200  # the copy, within its seconds
    expires, row = auth._USER_ROWS[user.pk]
    auth._USER_ROWS[user.pk] = (expires - 3600, row)
    assert client.get("/annotate/").status_code == 302


def test_an_unknown_user_is_never_kept():
    missing = 10**9
    assert auth.ModelBackend().get_user(missing) is None
    assert missing not in auth._USER_ROWS
