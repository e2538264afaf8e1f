"""The fast lane (annotations.apis.fastlane) answers the API's per-unit requests as Django and DRF do.

Every request here goes through the WSGI application twice over: `FastLane` in front of a
Django handler, and the Django handler alone (the reference). Where a request changes nothing
(a pending unit asked for again, a refusal), both answers must be byte-for-byte the same: status,
body and every header. Where it stores judgements, the stored rows and the answer's shape are
checked. Requests the lane must not take are shown to reach Django with their body intact.
"""

import io
import json
import time

import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from rest_framework.authtoken.models import Token

from annotations.apis.campaigns import NextAssignmentOutputSerializer, UnitSubmitApi
from annotations.apis.fastlane import EXPECTED_MIDDLEWARE, FastLane
from annotations.models import Membership, RatingJudgement
from tests.annotations.apis.test_units_api import _answers, _campaign, setup  # noqa: F401 (fixture)
from tests.annotations.factories import UserFactory

pytestmark = pytest.mark.django_db


class Recording:
    """The Django handler, counting what reaches it."""

    def __init__(self):
        self.handler, self.calls = WSGIHandler(), 0

    def __call__(self, environ, start_response):
        self.calls += 1
        return self.handler(environ, start_response)


@pytest.fixture
def apps():
    # As Django's test client does: no connection closing at request start and end, which would
    # end the test's transaction.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        django = Recording()
        yield FastLane(django), django
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def call(app, path, *, token=None, body=None, raw=None, content_type="application/json", extra=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(data),
        "wsgi.errors": io.StringIO(),
        "CONTENT_LENGTH": str(len(data)),
        "CONTENT_TYPE": content_type,
    }
    if token:
        environ["HTTP_AUTHORIZATION"] = f"Token {token}"
    environ.update(extra or {})
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["status"], seen["headers"] = status, headers

    response = app(environ, start_response)
    try:
        content = b"".join(response)
    finally:
        response.close()
    return seen["status"], sorted(seen["headers"]), content


@pytest.fixture
def lane_world(setup):
    dataset, _, user = setup
    campaign = _campaign(dataset, "likert")
    token = Token.objects.create(user=user).key
    return campaign, user, token


def test_the_lane_is_open_with_the_projects_middleware(apps):
    lane, _ = apps
    assert lane.open


def test_a_pending_unit_asked_for_again_is_the_same_answer_both_ways(apps, lane_world):
    lane, django = apps
    campaign, _, token = lane_world
    path = f"/api/campaigns/{campaign.pk}/next-assignment/"
    status, headers, first = call(lane, path, token=token)
    assert status == "201 Created" and django.calls == 0  # the lane answered it
    body = json.loads(first)
    assert set(body) == set(NextAssignmentOutputSerializer().fields)
    # The pending unit again (200; only its lease is renewed, `expires_at`): the lane's and Django's
    # answers are identical, headers included.
    by_lane = call(lane, path, token=token)
    by_django = call(django, path, token=token)
    assert django.calls == 1
    assert by_lane[:2] == by_django[:2]
    lane_body, django_body = json.loads(by_lane[2]), json.loads(by_django[2])
    assert body["expires_at"] <= lane_body.pop("expires_at") <= django_body.pop("expires_at")
    assert lane_body == django_body
    assert by_lane[2].replace(by_lane[2].split(b'"expires_at":')[1][:30], b"") == by_django[2].replace(
        by_django[2].split(b'"expires_at":')[1][:30], b""
    )  # same bytes: same rendering
    body.pop("expires_at")
    assert by_lane[0] == "200 OK" and lane_body == body
    names = {name for name, _ in by_lane[1]}
    assert {
        "Content-Security-Policy",
        "X-Frame-Options",
        "X-Content-Type-Options",
        "Referrer-Policy",
        "Cross-Origin-Opener-Policy",
        "Allow",
        "Content-Length",
    } <= names


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=UTF-8"])
def test_a_submit_with_next_is_stored_and_answers_the_next_unit(apps, lane_world, content_type):
    lane, django = apps
    campaign, user, token = lane_world
    unit = json.loads(call(lane, f"/api/campaigns/{campaign.pk}/next-assignment/", token=token)[2])
    status, headers, content = call(
        lane,
        f"/api/assignments/{unit['id']}/submit/",
        token=token,
        body={"judgements": _answers(campaign, unit), "shown_order": unit["shown_order"], "next": True},
        content_type=content_type,
    )
    assert status == "201 Created" and django.calls == 0
    answer = json.loads(content)
    assert set(answer) == set(UnitSubmitApi.OutputSerializer().fields)
    assert answer["judgements"] == 2 * len(unit["item"]["outputs"])
    assert RatingJudgement.objects.filter(assignment_id=unit["id"], status="complete").count() == answer["judgements"]
    assert answer["next"]["id"] != unit["id"] and answer["next"]["item"]["id"] != unit["item"]["id"]
    # The headers are those Django gives the same view (Content-Length aside).
    reference = call(django, f"/api/campaigns/{campaign.pk}/next-assignment/", token=token)
    assert [h for h in headers if h[0] != "Content-Length"] == [h for h in reference[1] if h[0] != "Content-Length"]


@pytest.mark.parametrize(
    "case", ["score out of scale", "unknown criterion", "other's unit", "no such unit", "missing answers"]
)
def test_refusals_raised_while_answering_are_djangos_refusals(apps, lane_world, case):
    lane, django = apps
    campaign, user, token = lane_world
    unit = json.loads(call(lane, f"/api/campaigns/{campaign.pk}/next-assignment/", token=token)[2])
    answers = _answers(campaign, unit)
    pk = unit["id"]
    if case == "score out of scale":
        answers[0]["score"] = 9
    elif case == "unknown criterion":
        answers[0]["criterion"] = "nonsense"
    elif case == "missing answers":
        answers = answers[:1]
    elif case == "no such unit":
        pk = 2**62
    else:  # another annotator of the project asks about this one's unit
        other = UserFactory(username="other")
        Membership.objects.create(project=campaign.dataset.project, user=other, role=Membership.Role.ANNOTATOR)
        token = Token.objects.create(user=other).key
    body = {"judgements": answers, "shown_order": unit["shown_order"], "next": True}
    path = f"/api/assignments/{pk}/submit/"
    by_lane = call(lane, path, token=token, body=body)
    assert django.calls == 0
    assert by_lane == call(django, path, token=token, body=body)
    assert by_lane[0].startswith(("400", "404")), by_lane
    assert "detail" in json.loads(by_lane[2]) or json.loads(by_lane[2])
    assert not RatingJudgement.objects.filter(assignment_id=unit["id"]).exists()


def test_a_wrong_token_is_refused_as_drf_refuses_it(apps, lane_world):
    lane, django = apps
    campaign, _, _ = lane_world
    path = f"/api/campaigns/{campaign.pk}/next-assignment/"
    by_lane = call(lane, path, token="0" * 40)
    assert django.calls == 0
    assert by_lane == call(django, path, token="0" * 40)
    assert by_lane[0] == "401 Unauthorized" and ("WWW-Authenticate", "Token") in by_lane[1]


def test_nothing_left_is_204_without_a_body_both_ways(apps, lane_world):
    lane, django = apps
    campaign, _, token = lane_world
    path = f"/api/campaigns/{campaign.pk}/next-assignment/"
    unit = json.loads(call(lane, path, token=token)[2])
    while unit is not None:
        status, _, content = call(
            lane,
            f"/api/assignments/{unit['id']}/submit/",
            token=token,
            body={"judgements": _answers(campaign, unit), "shown_order": unit["shown_order"], "next": True},
        )
        assert status == "201 Created", content
        unit = json.loads(content)["next"]
    by_lane = call(lane, path, token=token)
    assert django.calls == 0
    assert by_lane == call(django, path, token=token)
    assert by_lane[0] == "204 No Content" and by_lane[2] == b""
    assert "Content-Type" not in {name for name, _ in by_lane[1]}


@pytest.mark.parametrize(
    "case",
    ["not JSON", "duplicate key", "no answers", "a form", "a cookie", "a query", "basic auth", "no token", "latin-1"],
)
def test_what_the_lane_does_not_take_reaches_django_with_its_body(apps, lane_world, case):
    """Refused as Django refuses it, its wording included: the body was put back for Django to read."""
    lane, django = apps
    campaign, _, token = lane_world
    unit = json.loads(call(lane, f"/api/campaigns/{campaign.pk}/next-assignment/", token=token)[2])
    path = f"/api/assignments/{unit['id']}/submit/"
    good = json.dumps({"judgements": _answers(campaign, unit), "shown_order": unit["shown_order"]}).encode()
    kwargs = {"token": token, "raw": good}
    if case == "not JSON":
        kwargs["raw"] = b'{"judgements": ['
    elif case == "duplicate key":
        kwargs["raw"] = b'{"judgements": [], "judgements": []}'
    elif case == "no answers":
        kwargs["raw"] = b'{"judgements": []}'
    elif case == "a form":
        kwargs["content_type"] = "application/x-www-form-urlencoded"
    elif case == "a cookie":
        kwargs["extra"] = {"HTTP_COOKIE": "theme=dark"}
    elif case == "a query":
        kwargs["extra"] = {"QUERY_STRING": "x=1"}
    elif case == "latin-1":  # DRF decodes by the declared charset; the lane reads UTF-8 only
        kwargs["content_type"] = "application/json; charset=latin-1"
    elif case == "basic auth":
        kwargs["token"], kwargs["extra"] = None, {"HTTP_AUTHORIZATION": "Basic YTpi"}
    else:
        kwargs["token"] = None
    status, _, content = call(lane, path, **kwargs)
    assert django.calls == 1
    if case in ("not JSON", "duplicate key", "no answers", "a form", "basic auth", "no token"):
        assert status.startswith(("400", "401", "415")), (status, content)
        reference = call(django, path, **kwargs)
        assert (status, content) == (reference[0], reference[2])
        if case == "duplicate key":
            assert b"duplicate key" in content
        if case == "no answers":
            assert b"judgements" in content
    else:  # a cookie, a query string, another charset: Django takes the request and stores the unit
        assert status == "201 Created", content
        assert RatingJudgement.objects.filter(assignment_id=unit["id"]).exists()


def test_a_changed_middleware_list_closes_the_lane(settings, apps):
    settings.MIDDLEWARE = [*EXPECTED_MIDDLEWARE, "django.middleware.gzip.GZipMiddleware"]
    assert not FastLane(WSGIHandler()).open
    settings.MIDDLEWARE = list(EXPECTED_MIDDLEWARE)
    settings.WORKBENCH_API_FAST_LANE = False
    assert not FastLane(WSGIHandler()).open


def test_an_https_only_server_sends_plain_http_to_django_which_redirects(settings, apps, lane_world):
    settings.SECURE_SSL_REDIRECT = True
    django = Recording()
    lane = FastLane(django)
    campaign, _, token = lane_world
    status, headers, _ = call(lane, f"/api/campaigns/{campaign.pk}/next-assignment/", token=token)
    assert django.calls == 1 and status.startswith("301")
    status, headers, _ = call(
        lane, f"/api/campaigns/{campaign.pk}/next-assignment/", token=token, extra={"wsgi.url_scheme": "https"}
    )
    assert django.calls == 1 and status == "201 Created"
    assert any(name == "Strict-Transport-Security" for name, _ in headers)


def test_a_disallowed_host_is_djangos_400(settings, apps, lane_world):
    settings.ALLOWED_HOSTS = ["workbench.example"]
    lane, django = apps
    campaign, _, token = lane_world
    status, _, _ = call(lane, f"/api/campaigns/{campaign.pk}/next-assignment/", token=token)
    assert django.calls == 1 and status.startswith("400")


def test_answers_in_a_campaign_with_controls_are_held_to_the_floor(settings, apps, lane_world):
    """As the API view is (annotations.timing): the lane must not be a way around the floor."""
    from annotations.quality.services import quality_settings_update

    settings.WORKBENCH_UNIT_RESPONSE_FLOOR_MS = 120
    lane, _ = apps
    campaign, _, token = lane_world
    quality_settings_update(campaign=campaign, degraded_share=0.2)
    started = time.monotonic()
    status, _, _ = call(lane, f"/api/campaigns/{campaign.pk}/next-assignment/", token=token)
    assert status in ("201 Created", "200 OK")
    assert time.monotonic() - started >= 0.12
