"""The two API requests of every annotated unit, served without the middleware stack and DRF's
dispatch; and the annotate page's submit, served by its own view with only the middleware hooks
that can act on it (`annotations.views.submit_lane`).

An API client annotates with `POST /api/campaigns/{id}/next-assignment/` once and then
`POST /api/assignments/{id}/submit/` with `"next": true` per unit. Under the no-think load
of issue 25 a fifth of a worker's CPU on those requests went to Django's middleware chain,
URL resolving and DRF's request wrapping, parsing, negotiation and rendering, none of
which changes their answer. `FastLane` wraps the WSGI application (`workbench.wsgi`) and
answers those two requests itself, by the same functions the API views call
(`next_assignment_answer`, `unit_submit_answer`), with the same answer: status, body and
headers (the security headers come from the same middleware's `process_response`).

It takes only the plain case, decided before anything is written: a token in
`Authorization`, no cookie, no query string, a JSON body (submit) within the size limit,
an allowed host over HTTPS where HTTPS is required, a body that is strict JSON of the
shape every client sends (`_submit_body_plain`). Anything else goes to Django untouched
(its body put back), which refuses or answers it as ever, so every refusal keeps its
wording. Errors raised while answering are mapped by the API's own exception handler; an
unexpected one becomes Django's 500. The lane switches itself off when the middleware
list differs from the one it was written against (`EXPECTED_MIDDLEWARE`): a new
middleware must be considered here (and in `submit_lane`) before it can be skipped.
"""

from __future__ import annotations

import re
from io import BytesIO

from csp.middleware import CSPMiddleware
from django.conf import settings
from django.core import signals
from django.core.exceptions import DisallowedHost
from django.core.handlers.exception import response_for_exception
from django.core.handlers.wsgi import WSGIRequest, get_script_name
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import resolve, reverse, set_script_prefix, set_urlconf
from django.utils.log import log_response
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.renderers import JSONRenderer

from annotations.apis import campaigns
from annotations.apis.campaigns import _submit_body_plain, next_assignment_answer, unit_submit_answer
from annotations.permissions import TokenAuthentication
from annotations.services.handout_clock import clock_after_response
from annotations.timing import unit_response_floor
from workbench import strictjson
from workbench.exceptions import api_exception_handler

# The list the lane was checked against (tests/annotations/apis/test_fastlane.py): each
# entry either does nothing for a token request without cookies (sessions, CSRF, login
# lock-out, join confinement, messages, static files, upload gate, domain errors of pages)
# or is applied by the lane: host and HTTPS checks, the size limit, and the response
# headers of SecurityMiddleware, CSPMiddleware, CommonMiddleware and XFrameOptionsMiddleware.
EXPECTED_MIDDLEWARE = (
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "workbench.middleware.RequestSizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "workbench.middleware.UploadGateMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "annotations.studies.middleware.JoinConfinementMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "workbench.middleware.DomainErrorMiddleware",
    "axes.middleware.AxesMiddleware",
)

_MAX_ID = 2**63 - 1
# The body's types the lane reads (strict JSON is UTF-8); DRF's parser takes any other charset.
_JSON_TYPES = {"application/json", "application/json;charset=utf-8"}


def lane_open() -> bool:
    """Whether the settings let the lane answer anything (else every request goes to Django)."""
    return (
        tuple(settings.MIDDLEWARE) == EXPECTED_MIDDLEWARE
        and settings.WORKBENCH_API_FAST_LANE
        and not settings.DISALLOWED_USER_AGENTS
        and not settings.PREPEND_WWW
    )


class FastLane:
    def __init__(self, django_app):

        from annotations.views.submit_lane import PageSubmitLane  # lazy: cycle with annotations.views.submit_lane

        self.django = django_app
        self.open = lane_open()
        # Routes from the URL configuration itself, so a moved endpoint cannot be half-served here:
        # (path pattern, answer, view, whether it is the API's: token, no cookie).
        page_submit = _route_view("annotate-submit")
        self.routes = [
            (_route_pattern("api-campaign-next-assignment"), self._next, campaigns.NextAssignmentApi, True),
            (_route_pattern("api-assignment-submit"), self._submit, campaigns.UnitSubmitApi, True),
            (_route_pattern("annotate-submit"), self._page_submit, page_submit, False),
        ]
        self.page = PageSubmitLane(page_submit, reverse("annotate-submit", kwargs={"pk": 0}))
        self.headers = {view: view().default_response_headers for _, _, view, api in self.routes if api}
        # Response middleware in the order Django's chain applies it (innermost first). The
        # policy CSPMiddleware writes depends on the settings alone for these views (no nonce,
        # no per-view policy), so it is worked out once, by the middleware, and copied after.
        unused = _never_called
        self.csp_headers = _csp_headers(CSPMiddleware(unused))
        self.response_steps = [
            XFrameOptionsMiddleware(unused).process_response,
            CommonMiddleware(unused).process_response,
            self._csp,
            SecurityMiddleware(unused).process_response,
        ]

    def __call__(self, environ, start_response):
        found = self._match(environ) if self.open else None
        if found is None:
            return self.django(environ, start_response)
        answer, view, pk = found
        request = WSGIRequest(environ)
        try:
            request.get_host()
        except DisallowedHost:
            return self.django(environ, start_response)
        if settings.SECURE_SSL_REDIRECT and not request.is_secure():
            return self.django(environ, start_response)
        return answer(request, view, pk, environ, start_response)

    def _match(self, environ):
        if environ.get("REQUEST_METHOD") != "POST" or environ.get("QUERY_STRING"):
            return None
        path = environ.get("PATH_INFO", "")
        for pattern, answer, view, api in self.routes:
            match = pattern.fullmatch(path)
            if match is not None:
                break
        else:
            return None
        pk = int(match.group(1))
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return None
        if pk > _MAX_ID or not 0 <= length <= settings.WORKBENCH_REQUEST_MAX_BYTES:
            return None
        if api:
            # As DRF reads `Authorization`: "Token <key>", nothing more; other forms get its refusal.
            parts = environ.get("HTTP_AUTHORIZATION", "").split()
            if "HTTP_COOKIE" in environ or len(parts) != 2 or parts[0].lower() != "token" or not parts[1].isascii():
                return None
            environ["workbench.token"] = parts[1]
        environ["workbench.length"] = length
        return answer, view, pk

    # --- the answers ----------------------------------------------------------------

    def _next(self, request, view, pk, environ, start_response):

        return self._answer(
            request, view, environ, start_response, lambda user: next_assignment_answer(user=user, campaign_id=pk)
        )

    def _submit(self, request, view, pk, environ, start_response):

        length = environ["workbench.length"]
        if not _json_sent(environ):
            return self.django(environ, start_response)
        raw = environ["wsgi.input"].read(length)
        try:
            body = _submit_body_plain(strictjson.loads(raw))
        except ValueError:  # not strict JSON (UnicodeDecodeError is one too): Django words the 400
            body = None
        if body is None:
            environ["wsgi.input"] = BytesIO(raw)
            return self.django(environ, start_response)
        return self._answer(
            request,
            view,
            environ,
            start_response,
            lambda user: unit_submit_answer(user=user, assignment_id=pk, body=body),
        )

    def _page_submit(self, request, view, pk, environ, start_response):
        # The page's JSON only; a form (or no body) goes to Django, which answers it as ever. The
        # body is read by the view itself (annotations.views.annotate), as under Django.
        if not _json_sent(environ):
            return self.django(environ, start_response)
        self._started(environ)
        try:
            response = self.page.response(request, pk)
        except Exception as exc:  # noqa: BLE001 - raised by a response hook (a session deleted meanwhile: 400)
            response = response_for_exception(request, exc)
        return self._finish(request, response, start_response)

    def _started(self, environ):
        set_script_prefix(get_script_name(environ))
        signals.request_started.send(sender=self.__class__, environ=environ)
        set_urlconf(settings.ROOT_URLCONF)

    def _finish(self, request, response, start_response):
        response._resource_closers.append(request.close)  # request_finished, when the server closes it
        if response.status_code >= 400:
            log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
        cookies = [("Set-Cookie", c.output(header="")) for c in response.cookies.values()]  # as WSGIHandler writes them
        start_response(f"{response.status_code} {response.reason_phrase}", [*response.items(), *cookies])
        return response

    def _answer(self, request, view, environ, start_response, answer):

        self._started(environ)
        try:
            try:
                user = TokenAuthentication().authenticate_credentials(environ["workbench.token"])[0]
            except AuthenticationFailed as exc:
                exc.auth_header = TokenAuthentication().authenticate_header(request)  # as APIView does
                raise
            # Held as the view is (annotations.timing): refusals too, once the token is known.
            data, status = clock_after_response(unit_response_floor(answer))(user)
            response = self._rendered(view, data, status)
        except Exception as exc:  # noqa: BLE001 - every error becomes the API's (or Django's) answer
            response = self._error(request, view, exc)
        for step in self.response_steps:
            response = step(request, response)
        return self._finish(request, response, start_response)

    def _rendered(self, view, data, status, headers=()):

        # What APIView.finalize_response and DRF's Response make of it: the view's renderer
        # (JSON, no negotiation: JsonOnlyMixin), its default headers, no body and so no
        # Content-Type for no data (204).
        response = HttpResponse(
            b"" if data is None else JSONRenderer().render(data), status=status, content_type="application/json"
        )
        if data is None:
            del response["Content-Type"]
        for key, value in (*self.headers[view].items(), *headers):
            response[key] = value
        return response

    def _csp(self, request, response):
        if not (settings.DEBUG and response.status_code in (404, 500)):  # as CSPMiddleware skips them
            for key, value in self.csp_headers:
                if key not in response:
                    response[key] = value
        return response

    def _error(self, request, view, exc):

        response = api_exception_handler(exc, {"view": None, "request": request})
        if response is None:  # not an API error: Django's 500, logged as it logs one
            return response_for_exception(request, exc)
        return self._rendered(
            view, response.data, response.status_code, [(k, v) for k, v in response.items() if k != "Content-Type"]
        )


def _json_sent(environ) -> bool:
    return environ.get("CONTENT_TYPE", "").lower().replace(" ", "") in _JSON_TYPES and environ["workbench.length"] > 0


def _route_view(name: str):
    # The callable Django would call for the route, decorators included.
    return resolve(reverse(name, kwargs={"pk": 0})).func


def _route_pattern(name: str) -> re.Pattern:
    # reverse() with a placeholder id gives the path; the id becomes Django's int converter.
    path = reverse(name, kwargs={"pk": 0})
    head, _, tail = path.rpartition("/0/")
    return re.compile(re.escape(head) + "/([0-9]+)/" + re.escape(tail))


def _csp_headers(middleware, path: str = "/api/") -> list[tuple[str, str]]:
    """The policy headers the middleware writes on a response to `path` that used no nonce and
    asked for no policy of its own."""

    request, response = HttpRequest(), HttpResponse()
    request.path_info = request.path = path
    middleware.process_request(request)
    written = middleware.process_response(request, response)
    return [(k, v) for k, v in written.items() if k.lower().startswith("content-security-policy")]


def _never_called(request):  # the middleware's get_response: the lane calls only its hooks
    raise AssertionError("the fast lane calls middleware hooks only")
