"""Domain errors and the one place that turns them into HTTP responses."""
from django.core.exceptions import PermissionDenied, ValidationError as DjangoValidationError
from rest_framework import exceptions as drf_exceptions
from rest_framework.views import exception_handler


class DomainError(Exception):
    """A request that breaks a business rule; maps to HTTP 400."""


def api_exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        exc = drf_exceptions.ValidationError(detail)
    elif isinstance(exc, DomainError):
        exc = drf_exceptions.ValidationError({"detail": str(exc)})
    elif isinstance(exc, PermissionDenied):
        exc = drf_exceptions.PermissionDenied()
    return exception_handler(exc, context)
