"""The API's token lookups are kept a few seconds per process (annotations.permissions):
the annotation requests skip the query, and a revoked token or deactivated account is still
refused at once in the process that changed it, and everywhere once the copy expires."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import permissions
from tests.annotations.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def member():
    user = UserFactory(username="tokened")
    project = ProjectFactory()
    MembershipFactory(project=project, user=user)
    token = Token.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return user, token, client, project


def _token_queries(client, path) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        status = client.get(path).status_code
    return status, sum("authtoken_token" in q["sql"] for q in captured.captured_queries)


def test_a_token_is_looked_up_once_then_kept(member):
    _, _, client, project = member
    assert _token_queries(client, f"/api/projects/{project.pk}/") == (200, 1)
    assert _token_queries(client, f"/api/projects/{project.pk}/") == (200, 0)


@override_settings(WORKBENCH_TOKEN_CACHE_SECONDS=0)
def test_zero_looks_up_every_request(member):
    _, _, client, project = member
    for _ in range(2):
        assert _token_queries(client, f"/api/projects/{project.pk}/") == (200, 1)


def test_a_deleted_token_is_refused_at_once(member):
    _, token, client, project = member
    assert client.get(f"/api/projects/{project.pk}/").status_code == 200
    token.delete()
    assert client.get(f"/api/projects/{project.pk}/").status_code == 401


def test_a_deactivated_account_is_refused_at_once(member):
    user, _, client, project = member
    assert client.get(f"/api/projects/{project.pk}/").status_code == 200
    user.is_active = False
    user.save()
    response = client.get(f"/api/projects/{project.pk}/")
    assert response.status_code == 401 and "inactive" in response.json()["detail"]


def test_a_change_made_elsewhere_counts_once_the_copy_expires(member):
    """Another process (here: an UPDATE that sends no signal) deactivates the account: this
    process refuses the token when its copy expires (set back rather than waited for)."""
    user, token, client, project = member
    assert client.get(f"/api/projects/{project.pk}/").status_code == 200
    type(user).objects.filter(pk=user.pk).update(is_active=False)
    expires, row, owner = permissions._TOKEN_ROWS[token.key]
    permissions._TOKEN_ROWS[token.key] = (expires - 3600, row, owner)
    assert client.get(f"/api/projects/{project.pk}/").status_code == 401


def test_an_unknown_token_is_never_kept(member):
    _, _, client, project = member
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    for _ in range(2):
        assert _token_queries(client, f"/api/projects/{project.pk}/") == (401, 1)
    assert "0" * 40 not in permissions._TOKEN_ROWS
