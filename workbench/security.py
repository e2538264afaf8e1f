"""Who is knocking: the client's address, and the login lock-out (django-axes)."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def client_ip(request: HttpRequest) -> str:
    """The client's address for lock-outs and throttles.

    Behind `WORKBENCH_TRUSTED_PROXIES` proxies, each appending the address it
    received the request from to X-Forwarded-For, the client is that many
    entries from the right; entries further left are whatever the client
    sent, so they are never trusted.
    """
    hops = settings.WORKBENCH_TRUSTED_PROXIES
    if hops > 0:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if forwarded:
            return forwarded[-min(hops, len(forwarded))]
    return request.META.get("REMOTE_ADDR", "")


class LockoutBackend(AxesStandaloneBackend):
    """Axes' lock-out check for every login that comes with a request.

    `authenticate()` without a request comes from code on the server (a
    management command, a test's `client.login`), never from a client, so
    there is nothing to count or refuse; axes itself would raise instead.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def lockout_response(request, original_response=None, credentials=None) -> HttpResponse:
    """What a locked-out login gets (AXES_LOCKOUT_CALLABLE): 429, JSON on the API, a page elsewhere."""
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    message = (
        f"Too many failed logins for this account or from this address: "
        f"try again in {minutes} minute{'s' if minutes != 1 else ''}."
    )
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message}, status=429)
    return render(request, "registration/locked_out.html", {"message": message}, status=429)
