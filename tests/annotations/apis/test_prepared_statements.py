"""The statements of the annotation requests are prepared on the server
(`annotations.rows.cursor`, setting `prepare_threshold`): PostgreSQL then skips
parsing and planning them on every request, which was most of its time there
(bench/bench_annotation.py). Everything else keeps Django's client-side binding."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import rows
from tests.annotations.apis.test_units_api import _answers, _campaign, setup  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


# The pick's own statement: overlap-first's (the default allocation) or the spread walk's.
PICK = {"overlap-first": "picked.tier", "spread": "unnest($1::integer[], $2::integer[])"}


@pytest.mark.parametrize(
    "protocol,allocation", [("likert", "overlap-first"), ("esa", "overlap-first"), ("likert", "spread")]
)
@override_settings(WORKBENCH_TOKEN_CACHE_SECONDS=0)  # the token lookup on every request, as without the cache
def test_fetch_and_submit_run_prepared_statements(setup, protocol, allocation):
    dataset, _, user = setup
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    campaign = _campaign(dataset, protocol, allocation=allocation)
    for _ in range(4):
        body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
        response = client.post(
            f"/api/assignments/{body['id']}/submit/",
            {"judgements": _answers(campaign, body), "shown_order": body["shown_order"]},
            format="json",
        )
        assert response.status_code == 201, response.json()
    prepared = _prepared()
    # Server-bound statements carry $n placeholders; the token lookup, the enrolment lock, the
    # allocation's pick and the submit's lock of enrolment and assignment among them.
    for marker in ("authtoken_token", "FOR UPDATE OF e", PICK[allocation], "FOR UPDATE OF e, a"):
        assert any(marker in statement and "$1" in statement for statement in prepared), (marker, prepared)


def test_nothing_is_prepared_when_turned_off_or_while_queries_are_logged():
    settings_dict = connection.settings_dict
    options = dict(settings_dict["OPTIONS"])
    try:
        settings_dict["OPTIONS"] = {k: v for k, v in options.items() if k != "prepare_threshold"}
        with rows.cursor() as cursor:
            assert type(cursor.cursor).__name__ == "Cursor"  # Django's client-binding cursor
    finally:
        settings_dict["OPTIONS"] = options
    with rows.cursor() as cursor:
        assert type(cursor.cursor).__name__ == "ServerBindingCursor"
    with CaptureQueriesContext(connection), rows.cursor() as cursor:  # Django logs client-bound SQL only
        assert type(cursor.cursor).__name__ == "Cursor"
    with override_settings(DEBUG=True), rows.cursor() as cursor:
        assert type(cursor.cursor).__name__ == "Cursor"


def test_an_insert_beyond_the_servers_parameter_limit_binds_on_the_client(setup):
    """Server-side binding takes at most 65,535 parameters; rows.insert of more still works."""
    from annotations.models import Reference

    dataset, _, _ = setup
    item = dataset.items.first()
    references = [Reference(item=item, position=1000 + i, text=f"r{i}") for i in range(20000)]  # x 4 fields
    rows.insert(Reference, references)
    assert Reference.objects.filter(item=item, position__gte=1000).count() == 20000
    assert all(r.pk for r in references)
