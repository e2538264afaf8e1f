"""Confinement of join visitors: their session reaches only its campaign's annotate pages.

Every other URL (projects, datasets, items, the API, the admin, the login
page, other campaigns) answers 404 to a join session, whatever the view
itself would allow; the annotate views then check the assignment is the
visitor's own. Static files are served before this (WhiteNoise, the test
server's static handler).
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest
from django.urls import Resolver404, resolve
from django.views.defaults import page_not_found

from annotations.studies.session import join_binding

# URL names open to a join session whatever their arguments (each view checks the session itself).
OPEN = {
    "join",
    "join-done",
    "join-leave",
    "annotate-submit",
    "annotate-draft",
    "annotate-release",
    "annotate-media",
    "annotate-revise",
    "annotate-revise-submit",
}
# URL names open only for the session's own campaign (`pk`).
OWN_CAMPAIGN = {"annotate-campaign", "annotate-background", "annotate-unit", "annotate-completion-code"}


def join_may_reach(binding: dict, path: str) -> bool:
    try:
        match = resolve(path)
    except Resolver404:
        return False
    if match.url_name in OPEN:
        return True
    return match.url_name in OWN_CAMPAIGN and match.kwargs.get("pk") == binding["campaign"]


class JoinConfinementMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        if settings.SESSION_COOKIE_NAME not in request.COOKIES:
            # No session, so no join binding (it lives in the session): API clients with a
            # token, first visits. Skips loading the user for requests that never need it.
            return self.get_response(request)
        binding = join_binding(request)
        if binding is not None and not join_may_reach(binding, request.path_info):
            return page_not_found(request, Http404())
        return self.get_response(request)
