"""The two requests every annotator makes all day stay lean: a bounded number
of SQL statements per fetch (`next-assignment`) and per submit (a whole unit),
whatever the protocol and however many units were done before.

Counted with token authentication, as the load benchmark (bench/bench_annotation.py)
and API clients use it. Transaction control (SAVEPOINT / RELEASE here, BEGIN /
COMMIT in production) is not counted. If one of these fails, a change added
queries to the hot path: fold them into an existing query or move them off it.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations.apis.campaigns import NextAssignmentOutputSerializer
from tests.annotations.apis.test_units_api import _answers, _campaign, setup  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

# Statements per request, measured (see the module docstring); the bounds leave no slack, so any new
# query on the path shows up here.
# Fetch: campaign with role and annotator, enrolment lock, pick (takes the slot), assignment insert with
# the enrolment count, item with texts (read by the pick itself under overlap-first and adaptive: one
# fewer, `PICK_READS_ITEM`); RankME also the anchor reference. Submit: the
# assignment found as the caller's and locked with its enrolment (one statement, with the output texts for
# ESA's span checks), judgements insert with the finishing updates (one statement); ESA also the spans insert.
# The token was looked up by the first request and is kept (annotations.permissions).
FETCH_MAX = {"likert": 5, "rankme": 6, "pairwise": 5, "bws": 5, "esa": 5}
SUBMIT_MAX = {"likert": 2, "rankme": 2, "pairwise": 2, "bws": 2, "esa": 3}
PICK_READS_ITEM = {"overlap-first": 1, "adaptive": 1, "spread": 0}


def _statements(captured) -> list[str]:
    return [
        q["sql"]
        for q in captured.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT"))
    ]


@pytest.mark.parametrize("allocation", ["overlap-first", "spread", "adaptive"])
@pytest.mark.parametrize("protocol", ["likert", "rankme", "pairwise", "bws", "esa"])
def test_fetch_and_submit_use_a_bounded_number_of_queries(setup, protocol, allocation):
    """The same bounds under every allocation policy (annotations.allocation): the pick is one
    statement whichever policy; adaptive counts the unit in the submit's finishing statement."""
    dataset, _, user = setup
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    campaign = _campaign(
        dataset, protocol, allocation=allocation, **({"tuple_size": 3} if protocol in ("rankme", "bws") else {})
    )
    for round_ in range(3):  # the first request of an annotator also enrols them and plans nothing else
        with CaptureQueriesContext(connection) as fetch:
            response = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
        assert response.status_code == 201
        body = response.json()
        with CaptureQueriesContext(connection) as submit:
            response = client.post(
                f"/api/assignments/{body['id']}/submit/",
                {"judgements": _answers(campaign, body), "shown_order": body["shown_order"]},
                format="json",
            )
        assert response.status_code == 201, response.json()
        if round_:
            fetched, submitted = _statements(fetch), _statements(submit)
            assert len(fetched) <= FETCH_MAX[protocol] - PICK_READS_ITEM[allocation], "\n".join(fetched)
            assert len(submitted) <= SUBMIT_MAX[protocol], "\n".join(submitted)


def test_the_fetch_payload_has_the_documented_shape(setup):
    """The fetch answers its payload without running the serializer: it must still be exactly what the
    schema (NextAssignmentOutputSerializer) promises, rendered the same way."""
    dataset, client, _ = setup
    campaign = _campaign(dataset, "rankme", tuple_size=3)
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    assert set(body) == set(NextAssignmentOutputSerializer().fields)
    serializer = NextAssignmentOutputSerializer(data=body)
    assert serializer.is_valid(), serializer.errors
    assert NextAssignmentOutputSerializer(serializer.validated_data).data == body


def test_the_submit_answer_is_what_the_assignment_serializer_renders(setup):
    """The submit answer's assignment is built without running AssignmentOutputSerializer: it must
    equal that serializer's rendering of the stored assignment (no unit id for an annotator)."""
    from annotations.apis.campaigns import AssignmentOutputSerializer, UnitSubmitApi
    from annotations.models import Assignment

    dataset, client, _ = setup
    campaign = _campaign(dataset, "likert")
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    answer = client.post(
        f"/api/assignments/{body['id']}/submit/",
        {"judgements": _answers(campaign, body), "shown_order": body["shown_order"], "time_spent_ms": 1234},
        format="json",
    ).json()
    assert set(answer) == set(UnitSubmitApi.OutputSerializer().fields) - {"next"}
    stored = Assignment.objects.select_related("campaign__dataset", "annotator").get(pk=body["id"])
    rendered = AssignmentOutputSerializer(stored, context={"staff_projects": ()}).data
    # An annotator's: with handles for the item and outputs (annotations.services.handles).
    from annotations.services.handles import brief_for_annotator

    assert answer["assignment"] == brief_for_annotator(rendered)
    assert answer["assignment"]["shown_order"] == body["shown_order"]
    # The time is the server's (stored on the assignment), not the 1234 ms the client reported.
    assert rendered["status"] == "done" and rendered["time_spent_ms"] == stored.time_spent_ms
    assert rendered["unit"] is None
    assert answer["judgements"] == len(_answers(campaign, body)) and answer["retry"] is False


@pytest.mark.parametrize("allocation", ["overlap-first", "spread", "adaptive"])
@pytest.mark.parametrize("protocol", ["likert", "rankme", "pairwise", "bws", "esa"])
def test_a_submit_with_next_reads_no_campaign_and_locks_the_enrolment_once(setup, protocol, allocation, monkeypatch):
    """One request per unit (`next: true`): the submit's statements and the fetch's, less the fetch's
    campaign read and enrolment lock: the next unit is handed out in the submit's transaction, under
    the enrolment lock its first statement took (annotations.services.submissions._and_next)."""
    from annotations.services import assignments as engine

    monkeypatch.setattr(engine, "EXPIRE_EVERY_S", 3600.0)  # the periodic expiry leaves the pick to a fetch
    dataset, _, user = setup
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    campaign = _campaign(
        dataset, protocol, allocation=allocation, **({"tuple_size": 3} if protocol in ("rankme", "bws") else {})
    )
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    for round_ in range(2):  # the smallest of these campaigns (RankME's) has three units
        with CaptureQueriesContext(connection) as submit:
            response = client.post(
                f"/api/assignments/{body['id']}/submit/",
                {"judgements": _answers(campaign, body), "shown_order": body["shown_order"], "next": True},
                format="json",
            )
        assert response.status_code == 201, response.json()
        body = response.json()["next"]
        assert body is not None
        statements = _statements(submit)
        assert len(statements) <= SUBMIT_MAX[protocol] + FETCH_MAX[protocol] - 2 - PICK_READS_ITEM[allocation], (
            "\n".join(statements)
        )
