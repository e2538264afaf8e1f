"""Answers when something outside the request's control fails: the database (503, Retry-After),
and the log records of client errors (no traceback).

A PostgreSQL restart used to answer every request in flight with a 500 and a full traceback in
the log, although a retry a few seconds later succeeds: such a request is now a 503 with
Retry-After (clients and proxies retry), logged in one line. The middleware of every layer
turns an exception into a response through `handler500`, so the choice is made there, whichever
layer (session, authentication, view) met the outage first.
"""

from __future__ import annotations

import logging
import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

RETRY_AFTER_SECONDS = 5
OUTAGE_MESSAGE = "The database is not answering just now; please try again in a few seconds."


def database_outage(exc: BaseException | None) -> bool:
    return isinstance(exc, (OperationalError, InterfaceError))


def server_error(request: HttpRequest) -> HttpResponse:
    """`handler500`: a database outage is a 503 with Retry-After; anything else Django's 500.
    Renders no template: the page context would ask the database for the user."""
    if database_outage(sys.exc_info()[1]):
        if request.path_info.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
            response = JsonResponse({"detail": OUTAGE_MESSAGE}, status=503)
        else:
            response = HttpResponse(OUTAGE_MESSAGE, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return defaults.server_error(request)


class ClientErrorsWithoutTraceback(logging.Filter):
    """django.request's records of 4xx answers (a page's PermissionDenied logs its traceback) and
    of database outages (503) keep their one line and lose the traceback: neither is a bug."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status is not None and (status < 500 or status == 503):
            record.exc_info = None
            record.exc_text = None
        return True
