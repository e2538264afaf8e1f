"""Domain errors and the places that turn them into HTTP responses.

Every error a user's request can cause by breaking a business rule (a bad
export option, an unknown criterion for an analysis, a metric run that cannot
start, a failed import...) is a `DomainError`. It is mapped once for the REST
API (`api_exception_handler`, a 400 with `detail`) and once for pages
(`workbench.middleware.DomainErrorMiddleware`, a 400 page with the message, or
JSON for a script), so views and APIs let it through instead of translating
it themselves.

No Django import at module level: the scorers (a pure library) and `python -m metrics.score`
import `DomainError` without loading Django.
"""


class DomainError(Exception):
    """A request that breaks a business rule; maps to HTTP 400."""

    def messages(self) -> list[str]:
        """One line per problem, for a page."""
        return [str(self)]

    def api_detail(self):
        """The `detail` of the API's 400 answer."""
        return str(self)

    def api_body(self) -> dict:
        """The whole JSON body of the API's 400 answer (subclasses may add keys)."""
        return {"detail": self.api_detail()}


def api_exception_handler(exc, context):
    # Django and DRF are imported here: modules outside the web process (scorers, workers)
    # import DomainError without them.
    from django.core.exceptions import (  # lazy: scorers run without Django
        PermissionDenied,
        ValidationError as DjangoValidationError,
    )
    from django.http import Http404  # lazy: imported by metrics.scorers, which runs without Django
    from rest_framework import exceptions as drf_exceptions  # lazy: scorers run without Django
    from rest_framework.views import exception_handler  # lazy: imported by metrics.scorers, which runs without Django

    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        exc = drf_exceptions.ValidationError(detail)
    elif isinstance(exc, DomainError):
        exc = drf_exceptions.ValidationError(exc.api_body())
    elif isinstance(exc, Http404):
        # One answer whatever the reason: `get_object_or_404`'s "No Campaign matches the given
        # query." for an absent id next to a bare "Not found." for another project's object would
        # tell an outsider (or an annotator) which ids exist (annotations.access).
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        # The reason (e.g. "Only owners and researchers of the project may do this.") is kept.
        exc = drf_exceptions.PermissionDenied(str(exc) or None)
    return exception_handler(exc, context)
