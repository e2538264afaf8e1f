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
from rest_framework.exceptions import AuthenticationFailed

from workbench.exceptions import DomainError


def is_upload(request: HttpRequest) -> bool:
    """A POST to one of the views that take file uploads."""
    if request.method != "POST":
        return False
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return False
    return match.url_name in settings.WORKBENCH_UPLOAD_URL_NAMES


def request_limit(request: HttpRequest) -> int:
    """The largest body accepted for this request from anyone, in bytes (researchers only
    reach it: `UploadGateMiddleware`)."""
    return settings.WORKBENCH_UPLOAD_MAX_BYTES if is_upload(request) else settings.WORKBENCH_REQUEST_MAX_BYTES


def _within_every_limit(length: int) -> bool:
    # A body no limit refuses needs no URL resolving (is_upload): the common case, every
    # API call and form post, skips a walk of the whole URL configuration.
    return length <= min(settings.WORKBENCH_REQUEST_MAX_BYTES, settings.WORKBENCH_UPLOAD_MAX_BYTES)


class RequestSizeLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _refuse(request, "The Content-Length header is not a number.", status=400)
        query = request.META.get("QUERY_STRING", "")
        if "%00" in query or "\x00" in query:
            # PostgreSQL stores NUL in no text column and compares against none: a search for it
            # would fail deep in a query (a 500) on any page that filters by a parameter.
            return _refuse(request, "The query string holds the NUL character (%00).", status=400)
        if _within_every_limit(length):
            return self.get_response(request)
        limit = request_limit(request)
        if length > limit:
            return _refuse(
                request, f"The request body is {_size(length)}; at most {_size(limit)} is accepted here.", status=413
            )
        return self.get_response(request)


class UploadGateMiddleware:
    """An upload body above the JSON limit only from an authenticated researcher (or owner) of
    some project: anyone else (anonymous, with a forged CSRF cookie, or an annotator) is refused
    before a byte is read, so no one can make the server read and store 200 MB to disk.

    Sits after AuthenticationMiddleware (it needs the session's user) and before any view or
    CSRF check reads the body (they do in process_view, after every middleware's __call__).
    API clients that send a token are looked up by it here, as DRF would later."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = settings.WORKBENCH_REQUEST_MAX_BYTES
        if length > limit and is_upload(request) and not _may_upload(request):
            return _refuse(
                request,
                f"The request body is {_size(length)}; at most {_size(limit)} is accepted "
                "here without logging in as a researcher of a project.",
                status=413,
            )
        return self.get_response(request)


def _may_upload(request: HttpRequest) -> bool:
    from annotations.selectors.roles import staff_project_list  # lazy: loads the models; importable before setup()

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        user = _token_user(request)
    return user is not None and user.is_authenticated and user.is_active and staff_project_list(user=user).exists()


def _token_user(request: HttpRequest):
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "token" or not key.strip() or len(key) > 100:
        return None
    from annotations.permissions import TokenAuthentication  # lazy: loads the models; importable before setup()

    try:
        return TokenAuthentication().authenticate_credentials(key.strip())[0]
    except AuthenticationFailed:
        return None


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

        if not isinstance(exception, DomainError):
            return None
        lines = exception.messages() or [str(exception)]
        if wants_json(request):
            return JsonResponse({"detail": "; ".join(lines), "errors": lines}, status=400)
        back = request.META.get("HTTP_REFERER", "")
        if not url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            back = ""
        return render(request, "400.html", {"lines": lines, "back": back}, status=400)


def wants_json(request: HttpRequest) -> bool:
    """A script's request: JSON sent, or JSON asked for rather than a page."""
    if request.path_info.startswith("/api/") or request.content_type == "application/json":
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept
