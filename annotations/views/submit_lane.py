"""The annotate page's submit, served by the fast lane (`annotations.apis.fastlane`) with the
middleware hooks that give it its answer and without the rest of Django's chain.

The page sends one `POST /annotate/assignments/{id}/submit/` (JSON, session cookie, CSRF
header) per unit. It cost 0.4 ms more Python than the API's submit with `next` (issue 25);
Django's middleware wrappers, URL resolving and the hooks that cannot act on it were a
quarter of that (1.44 against 1.51-1.59 ms a submit, in-process), and 1.09x judgements/s
under the no-think load (bench/README.md). Here the request runs through
the same middleware objects' own hooks, in the order Django's chain calls them, and then
through the URL configuration's own view (decorators included):

- request side: CSP (its nonce, for an error page that renders one), sessions, CSRF,
  authentication, messages, the join confinement's read of the session; then CSRF's
  `process_view`, which refuses as it always does;
- the view; a `DomainError` it lets through goes to `DomainErrorMiddleware`, anything
  else to Django's own exception response (a 404 page, a 500);
- response side, innermost first: X-Frame-Options, messages, CSRF's cookie, Common,
  the session's save and `Vary: Cookie`, CSP (the policy the middleware wrote once for
  this path, unless a nonce was made or the response asks for its own), security headers.

Skipped, because none of them can act on this request: WhiteNoise (a static path only),
the size limit and the upload gate (the lane takes bodies within the JSON limit only),
Common's request side (its redirects need a path that does not match or settings that
close the lane), the join confinement's refusal (`annotate-submit` is open to every join
session: the view checks the assignment is the session's own), and axes (it acts on login
attempts).
The list the lane was checked against is `fastlane.EXPECTED_MIDDLEWARE`.
"""

from __future__ import annotations

from csp.middleware import CSPMiddleware
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.handlers.exception import response_for_exception
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import ResolverMatch

from annotations.studies.session import join_binding
from workbench.middleware import DomainErrorMiddleware

# What a view or decorator sets on a response to change its policy (django-csp): such a response
# gets the middleware's own answer, as does one whose request generated a nonce.
_CSP_RESPONSE_ATTRS = (
    "_csp_exempt",
    "_csp_exempt_ro",
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
)


class PageSubmitLane:
    def __init__(self, view, path: str):

        from annotations.apis.fastlane import _csp_headers  # lazy: cycle with annotations.apis.fastlane

        unused = _never_called
        self.view = view  # the URL configuration's callable for `annotate-submit`
        csp, session, csrf = CSPMiddleware(unused), SessionMiddleware(unused), CsrfViewMiddleware(unused)
        # The policy of a JSON answer (no nonce, no policy of its own) depends on the settings and
        # the path alone: worked out once, by the middleware, for this path (its exclusions apply).
        self.csp, self.csp_headers = csp, _csp_headers(csp, path)
        messages = MessageMiddleware(unused)
        self.csrf, self.domain_errors = csrf, DomainErrorMiddleware(unused)
        self.request_steps = [
            csp.process_request,
            session.process_request,
            csrf.process_request,
            AuthenticationMiddleware(unused).process_request,
            messages.process_request,
            _confinement,
        ]
        self.response_steps = [
            XFrameOptionsMiddleware(unused).process_response,
            messages.process_response,
            csrf.process_response,
            CommonMiddleware(unused).process_response,
            session.process_response,
            self._csp,
            SecurityMiddleware(unused).process_response,
        ]

    def response(self, request, pk: int):
        """The view's answer, or the refusal, with every response hook applied."""
        # What Django's URL resolver would have set: pages rendered for this request (a 404's Help
        # link, annotations.templatetags.help) read the URL name from it.
        request.resolver_match = ResolverMatch(self.view, (), {"pk": pk}, url_name="annotate-submit")
        try:
            for step in self.request_steps:
                step(request)
            response = self.csrf.process_view(request, self.view, (), {"pk": pk})
            if response is None:
                response = self.view(request, pk=pk)
        except Exception as exc:  # noqa: BLE001 - what Django's chain makes of it: DomainError's 400, or its own
            response = self.domain_errors.process_exception(request, exc) or response_for_exception(request, exc)
        for step in self.response_steps:
            response = step(request, response)
        return response

    def _csp(self, request, response):
        # CSPMiddleware's answer: worked out by the middleware where the request or response can change
        # it, else the policy it wrote once for this path.
        if (
            getattr(request, "_csp_nonce", None) is not None
            or (settings.DEBUG and response.status_code in (404, 500))
            or any(hasattr(response, name) for name in _CSP_RESPONSE_ATTRS)
        ):
            return self.csp.process_response(request, response)
        for key, value in self.csp_headers:
            if key not in response:
                response[key] = value
        return response


def _confinement(request) -> None:
    # JoinConfinementMiddleware's read of the session (and so of the user), which refuses nothing on
    # this URL (open to every join session). Kept because the view reads both anyway, and because a
    # refusal before the view (CSRF's) then varies on Cookie exactly as Django's chain makes it.
    if settings.SESSION_COOKIE_NAME in request.COOKIES:
        join_binding(request)


def _never_called(request):  # the middleware's get_response: the lane calls only its hooks
    raise AssertionError("the fast lane calls middleware hooks only")
