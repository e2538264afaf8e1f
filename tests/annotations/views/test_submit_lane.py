"""The fast lane answers the annotate page's submit (annotations.views.submit_lane) as Django does.

Every request goes to the WSGI application two ways: `FastLane` in front of a Django handler, and
the Django handler alone (the reference). A refusal changes nothing, so both answers must be the
same bytes: status, every header, body. A stored unit is checked by its rows and by the answer's
headers and shape against another annotator's unit submitted through Django. Requests the lane
must not take reach Django with their body.
"""

import io
import json
import re

import pytest
from django.core import signals
from django.db import close_old_connections
from django.test import Client
from django.urls import reverse
from django.utils.crypto import get_random_string

from annotations.apis.fastlane import FastLane
from annotations.models import Assignment, Membership, RatingJudgement
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from annotations.studies.services import join_link_create
from tests.annotations.apis.test_fastlane import Recording
from tests.annotations.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def apps():
    django = Recording()
    return FastLane(django), django


class Browser:
    """A logged-in annotator's cookies (session, CSRF) and their unit, as the page holds them."""

    def __init__(self, user, campaign):
        client = Client()
        client.force_login(user)
        assert client.post(reverse("annotate-campaign", args=[campaign.pk])).status_code == 302  # Start
        self.session = client.cookies["sessionid"].value
        self.csrf = get_random_string(32)
        self.assignment = Assignment.objects.get(annotator__user=user, status="pending")

    def body(self, score=4) -> dict:
        handles = [output_handle(self.assignment.pk, i) for i in self.assignment.shown_order]
        return {
            "judgements": [{"criterion": "fluency", "output": h, "score": score} for h in handles],
            "shown_order": handles,
            "time_spent_ms": 1200,
        }

    def submit(
        self, app, *, pk=None, body=None, raw=None, csrf=True, session=True, content_type="application/json", extra=None
    ):
        data = raw if raw is not None else json.dumps(self.body() if body is None else body).encode()
        cookies = [f"csrftoken={self.csrf}"] + ([f"sessionid={self.session}"] if session else [])
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": reverse("annotate-submit", args=[pk or self.assignment.pk]),
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
            "HTTP_COOKIE": "; ".join(cookies),
        }
        if csrf:
            environ["HTTP_X_CSRFTOKEN"] = self.csrf if csrf is True else csrf
        environ.update(extra or {})
        return call(app, environ)


def call(app, environ):
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["status"], seen["headers"] = status, headers

    # As Django's test client does around each request (and reconnects after, so the Client used to
    # set up is no exception): no connection closing at its start and end, which would end the
    # test's transaction.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        response = app(environ, start_response)
        try:
            content = b"".join(response)
        finally:
            response.close()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
    return seen["status"], sorted(seen["headers"]), content


@pytest.fixture
def campaign(dataset):
    return campaign_create(
        dataset=dataset, name="Rate me", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5, redundancy=2
    )


@pytest.fixture
def anna(annotator, campaign):
    return Browser(annotator, campaign)


def _stored(assignment) -> int:
    return RatingJudgement.objects.filter(assignment=assignment, status="complete").count()


def test_a_submit_is_stored_and_answered_as_django_answers_another(apps, project, campaign, anna):
    lane, django = apps
    bob = Browser(
        MembershipFactory(project=project, user=UserFactory(username="bob"), role=Membership.Role.ANNOTATOR).user,
        campaign,
    )
    by_lane = anna.submit(lane)
    assert django.calls == 0  # the lane answered it
    by_django = bob.submit(django)
    assert by_lane[0] == by_django[0] == "201 Created"
    assert _stored(anna.assignment) == len(anna.assignment.shown_order)
    assert RatingJudgement.objects.filter(assignment=anna.assignment, origin="browser").exists()
    # The same headers (the security headers, CSP, Vary: Cookie...), Content-Length aside.
    assert [h for h in by_lane[1] if h[0] != "Content-Length"] == [h for h in by_django[1] if h[0] != "Content-Length"]
    names = {name for name, _ in by_lane[1]}
    assert {
        "Content-Security-Policy",
        "X-Frame-Options",
        "X-Content-Type-Options",
        "Referrer-Policy",
        "Cross-Origin-Opener-Policy",
        "Vary",
    } <= names
    lane_answer, django_answer = json.loads(by_lane[2]), json.loads(by_django[2])
    assert set(lane_answer) == set(django_answer) == {"next", "unit"}
    assert set(lane_answer["unit"]) == set(django_answer["unit"])
    # The next unit is handed out and is this annotator's, named by its own handles (blind).
    following = Assignment.objects.get(annotator__user__username="anna", status="pending")
    assert lane_answer["unit"]["config"]["assignment"] == following.pk
    assert lane_answer["unit"]["config"]["shown_order"] == [
        output_handle(following.pk, i) for i in following.shown_order
    ]
    assert "sysA" not in by_lane[2].decode() and "sysB" not in by_lane[2].decode()


def _same_but_nonce(a, b):
    """Equal answers; what is random per response (an error page's CSP nonce, the masked CSRF token of
    its log-out form) and a cookie's expiry time aside."""
    nonce = re.compile(
        rb"nonce-[A-Za-z0-9+/=_-]+|nonce=\"[A-Za-z0-9+/=_-]+\"|expires=[^;]+|name=\"csrfmiddlewaretoken\" value=\"[A-Za-z0-9]+\""
    )
    strip = lambda answer: (
        answer[0],
        [(k, nonce.sub(b"N", v.encode()).decode()) for k, v in answer[1]],  # noqa: E731
        nonce.sub(b"N", answer[2]),
    )
    return strip(a) == strip(b)


@pytest.mark.parametrize(
    "case",
    [
        "score out of scale",
        "unknown criterion",
        "not JSON",
        "not an object",
        "no CSRF header",
        "a wrong CSRF token",
        "no session",
        "someone else's unit",
        "no such unit",
        "a real output id",
        "submitted already",
    ],
)
def test_refusals_are_djangos_refusals_byte_for_byte(apps, project, campaign, anna, case):
    lane, django = apps
    kwargs, body = {}, anna.body()
    if case == "score out of scale":
        body["judgements"][0]["score"] = 9
    elif case == "unknown criterion":
        body["judgements"][0]["criterion"] = "nonsense"
    elif case == "not JSON":
        kwargs["raw"] = b'{"judgements": ['
    elif case == "not an object":
        kwargs["raw"] = b"[1, 2]"
    elif case == "no CSRF header":
        kwargs["csrf"] = False
    elif case == "a wrong CSRF token":
        kwargs["csrf"] = get_random_string(32)
    elif case == "no session":
        kwargs["session"] = False
    elif case == "someone else's unit":
        bob = Browser(
            MembershipFactory(project=project, user=UserFactory(username="bob"), role=Membership.Role.ANNOTATOR).user,
            campaign,
        )
        kwargs["pk"] = bob.assignment.pk
        body = bob.body()
    elif case == "no such unit":
        kwargs["pk"] = 2**62
    elif case == "a real output id":
        body["judgements"][0]["output"] = anna.assignment.shown_order[0]
    else:
        assert anna.submit(django)[0] == "201 Created"
    calls = django.calls
    by_lane = anna.submit(lane, body=body, **kwargs)
    assert django.calls == calls  # answered by the lane
    by_django = anna.submit(django, body=body, **kwargs)
    assert _same_but_nonce(by_lane, by_django), [(a, b) for a, b in zip(by_lane[1], by_django[1]) if a != b] or (
        by_lane[2],
        by_django[2],
    )
    expected = {
        "no CSRF header": "403",
        "a wrong CSRF token": "403",
        "no session": "302",
        "someone else's unit": "404",
        "no such unit": "404",
    }.get(case, "400")
    assert by_lane[0].startswith(expected), by_lane
    if case != "submitted already":
        assert not RatingJudgement.objects.exists()


def test_a_join_session_submits_through_the_lane(apps, client, campaign):
    """A study participant's session (no account): their unit stored, the next one handed out."""
    lane, django = apps
    link = join_link_create(campaign=campaign, completion_url="https://app.prolific.com/submissions/complete?cc={code}")
    assert (
        client.post(
            reverse("join", args=[link.token]),
            {"PROLIFIC_PID": "5f0c1e2d3b4a596877665544", "STUDY_ID": "s", "SESSION_ID": "x"},
        ).status_code
        == 302
    )
    participant = Browser.__new__(Browser)
    participant.session, participant.csrf = client.cookies["sessionid"].value, get_random_string(32)
    participant.assignment = Assignment.objects.get(status="pending")
    status, _, content = participant.submit(lane)
    assert django.calls == 0 and status == "201 Created", content
    assert _stored(participant.assignment) == len(participant.assignment.shown_order)
    assert json.loads(content)["unit"]["config"]["assignment"] != participant.assignment.pk


@pytest.mark.parametrize("case", ["a form", "a query string", "no body"])
def test_what_the_lane_does_not_take_reaches_django(apps, anna, case):
    lane, django = apps
    kwargs = {
        "a form": {"content_type": "application/x-www-form-urlencoded"},
        "a query string": {"extra": {"QUERY_STRING": "x=1"}},
        "no body": {"raw": b""},
    }[case]
    status, _, content = anna.submit(lane, **kwargs)
    assert django.calls == 1
    if case != "no body":  # Django takes it (the view reads the body as JSON whatever its type) and stores the unit
        assert status == "201 Created", content
        assert _stored(anna.assignment) == len(anna.assignment.shown_order)
    else:
        assert status.startswith("400") and not RatingJudgement.objects.exists()
        assert (status, content) == anna.submit(django, **kwargs)[::2]


def test_the_lanes_csp_header_is_the_middlewares_with_a_nonce_or_a_policy_of_the_response(settings):
    """The policy written once for a JSON answer is the middleware's; a request that made a nonce, or a
    response that asks for its own policy, gets the middleware's own answer."""
    from csp.constants import NONCE
    from csp.middleware import CSPMiddleware
    from django.http import HttpResponse
    from django.test import RequestFactory

    directives = settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {**directives, "script-src": [*directives["script-src"], NONCE]}}
    lane = FastLane(Recording())
    path = reverse("annotate-submit", args=[7])
    middleware = CSPMiddleware(lambda request: HttpResponse())

    def both(prepare):
        answers = []
        for step in (lane.page._csp, middleware.process_response):
            request, response = RequestFactory().post(path), HttpResponse()
            middleware.process_request(request)
            prepare(request, response)
            answers.append(step(request, response).get("Content-Security-Policy"))
        return answers

    plain = both(lambda request, response: None)
    assert plain[0] == plain[1] and "default-src 'self'" in plain[0]
    nonces = both(lambda request, response: str(request.csp_nonce))
    assert all("'nonce-" in header for header in nonces)
    assert both(lambda request, response: setattr(response, "_csp_exempt", True)) == [None, None]
