"""Request-size limits, enforced before anything reads the body; the page-side mapping of domain errors.

Django's own limit (DATA_UPLOAD_MAX_MEMORY_SIZE) only applies where Django
reads the body; DRF's parsers read the stream themselves, so a 199 MB JSON
body to any endpoint was parsed in full. Here the declared length decides,
before a byte is read: small for everything (JSON, forms), large only for
POSTs to the views that take file uploads (`WORKBENCH_UPLOAD_URL_NAMES`),
whose files Django streams to disk. A body without a Content-Length is
never read by Django's WSGI handler, so it cannot get around this.
"""
from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.http import url_has_allowed_host_and_scheme


def request_limit(request: HttpRequest) -> int:
    """The largest body accepted for this request, in bytes."""
    if request.method == "POST":
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return settings.WORKBENCH_REQUEST_MAX_BYTES
        if match.url_name in settings.WORKBENCH_UPLOAD_URL_NAMES:
            return settings.WORKBENCH_UPLOAD_MAX_BYTES
    return settings.WORKBENCH_REQUEST_MAX_BYTES


class RequestSizeLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _refuse(request, "The Content-Length header is not a number.", status=400)
        limit = request_limit(request)
        if length > limit:
            return _refuse(request, f"The request body is {_size(length)}; at most {_size(limit)} is accepted here.",
                           status=413)
        return self.get_response(request)


def _refuse(request: HttpRequest, message: str, *, status: int) -> HttpResponse:
    # The body is left unread (the server closes or drains the connection).
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _size(n: int) -> str:
    for unit, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"


class DomainErrorMiddleware:
    """The one page-side mapping of `DomainError` (the API's is
    `workbench.exceptions.api_exception_handler`): a page view that lets one
    through answers 400 with its messages, as a page, or as JSON
    (`{"detail": ..., "errors": [...]}`, the shape the page scripts read) to a
    request that sends or asks for JSON. Views need not catch them."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        from workbench.exceptions import DomainError

        if not isinstance(exception, DomainError):
            return None
        lines = exception.messages() or [str(exception)]
        if wants_json(request):
            return JsonResponse({"detail": "; ".join(lines), "errors": lines}, status=400)
        back = request.META.get("HTTP_REFERER", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                               require_https=request.is_secure()):
            back = ""
        return render(request, "400.html", {"lines": lines, "back": back}, status=400)


def wants_json(request: HttpRequest) -> bool:
    """A script's request: JSON sent, or JSON asked for rather than a page."""
    if request.path_info.startswith("/api/") or request.content_type == "application/json":
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept
