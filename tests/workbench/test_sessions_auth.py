"""Sessions and their users read by prepared statements (`workbench.sessions`, `workbench.auth`)
behave as Django's database session store and model backend: same data, same expiry, the same users
refused, and sessions that recorded Django's own backend still log in."""

from datetime import timedelta

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from workbench.auth import ModelBackend
from workbench.sessions import SessionStore

pytestmark = pytest.mark.django_db


def _session(user, backend: str) -> str:
    store = DjangoStore()
    store[SESSION_KEY], store[BACKEND_SESSION_KEY] = str(user.pk), backend
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store["note"] = {"a": [1, 2]}
    store.create()
    return store.session_key


def test_a_session_loads_the_data_djangos_store_loads():
    user = get_user_model().objects.create_user("s1", password="x")
    key = _session(user, "workbench.auth.ModelBackend")
    assert dict(SessionStore(key).load()) == dict(DjangoStore(key).load())
    assert SessionStore(key)["note"] == {"a": [1, 2]}


def test_an_expired_or_unknown_session_is_empty_and_loses_its_key_as_in_django():
    user = get_user_model().objects.create_user("s2", password="x")
    key = _session(user, "workbench.auth.ModelBackend")
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    for store in (SessionStore(key), DjangoStore(key)):
        assert store.load() == {} and store.session_key is None
    for store in (SessionStore("x" * 32), DjangoStore("x" * 32)):
        assert store.load() == {} and store.session_key is None


def test_the_backend_gives_the_users_djangos_gives():
    User = get_user_model()
    active = User.objects.create_user("s3", password="x", email="s3@example.org")
    inactive = User.objects.create_user("s4", password="x", is_active=False)
    from django.contrib.auth.backends import ModelBackend as DjangoBackend

    ours, django = ModelBackend(), DjangoBackend()
    got = ours.get_user(active.pk)
    assert got == django.get_user(active.pk)
    assert (got.username, got.email, got.password, got.is_staff) == ("s3", "s3@example.org", active.password, False)
    assert ours.get_user(inactive.pk) is None and django.get_user(inactive.pk) is None
    assert ours.get_user(10**9) is None
    assert ours.get_user(str(active.pk)) == active and ours.get_user("x") is None


@pytest.mark.parametrize("backend", ["workbench.auth.ModelBackend", "django.contrib.auth.backends.ModelBackend"])
def test_a_page_request_is_logged_in_with_either_backend_recorded(backend):
    user = get_user_model().objects.create_user("s5", password="x")
    client = Client()
    client.cookies["sessionid"] = _session(user, backend)
    assert client.get("/annotate/").status_code == 200
    # A changed password ends the session (the session's hash no longer matches), as in Django.
    user.set_password("y")
    user.save()
    assert client.get("/annotate/").status_code == 302
