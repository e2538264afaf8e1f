"""Small pieces shared by the API modules."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.pagination import BoundedPagination

# Ids are PostgreSQL bigints: larger numbers are refused with a 400 rather
# than reaching the database.
MAX_ID = 2**63 - 1

# Clients may still send their own time; what is stored is the server's (annotations.services.assignment_work).
TIME_SPENT_HELP = (
    "Your own measure of the time spent, in ms (optional). The workbench measures the time on the "
    "server, from handing the unit out to this request, and stores that; yours is kept apart, and "
    "only when it is no more than the server's."
)


class JsonOnly(DefaultContentNegotiation):
    """JSON whatever the Accept header says, for the endpoints an annotation client calls on
    every unit (next-assignment, submit): they have no page to negotiate, and parsing the
    header against two renderers was a measurable share of their time. A client asking for
    something else gets JSON rather than 406. Parsers are chosen as ever."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class JsonOnlyMixin:
    """The hot endpoints' rendering: JSON, no negotiation (`JsonOnly`)."""

    renderer_classes = (JSONRenderer,)
    content_negotiation_class = JsonOnly


def id_field(**kwargs) -> serializers.IntegerField:
    kwargs.setdefault("required", False)
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


@extend_schema_field({"oneOf": [{"type": "integer"}, {"type": "string"}]})
class OutputRefField(serializers.Field):
    """An output as a client names it: the handle it was shown (a string, annotators) or,
    for owners and researchers, its id. Translated by `annotations.services.handles`."""

    default_error_messages = {"invalid": "An output handle (string) or id (integer) is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, str)) or (isinstance(data, str) and len(data) > 64):
            self.fail("invalid")
        if isinstance(data, int) and not 1 <= data <= MAX_ID:
            self.fail("invalid")
        return data

    def to_representation(self, value):
        return value


def output_ref_list(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=OutputRefField(), **kwargs)


def validated_filters(serializer_class: type[serializers.Serializer], request: Request) -> dict:
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def paginated_response(
    *,
    queryset: QuerySet,
    serializer_class: type[serializers.Serializer],
    request: Request,
    view,
    context: dict | None = None,
    pagination_class: type[PageNumberPagination] = BoundedPagination,
) -> Response:
    paginator = pagination_class()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True, context=context or {}).data)


def paginated(serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    """The schema of a page of `serializer_class` (PageNumberPagination's shape)."""
    name = serializer_class.Meta.ref_name
    return inline_serializer(
        name=f"Paginated{name}List",
        fields={
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer_class(many=True),
        },
    )
