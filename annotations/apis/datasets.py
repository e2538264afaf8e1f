"""Datasets (with file import), items and system outputs."""

from __future__ import annotations

from functools import cached_property

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import require_staff_somewhere
from annotations.apis.common import id_field, paginated, paginated_response, validated_filters
from annotations.apis.imports import ImportJobOutputSerializer
from annotations.models import Dataset, ImportJob, Item, Output, Reference
from annotations.pagination import CappedPagination
from annotations.permissions import ApiAuthMixin, require_staff
from annotations.selectors import (
    SEARCH_MAX_CHARS,
    blind_order_key,
    blind_project_ids,
    dataset_list,
    item_api_list,
    output_api_list,
    project_list,
)
from annotations.services.import_jobs import dataset_upload_import
from annotations.services.imports import DatasetNameTaken


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file field the schema describes as an upload (not as a URL, as
    drf-spectacular does for file fields in shared request/response components)."""


class DatasetOutputSerializer(serializers.ModelSerializer):
    project = serializers.IntegerField(source="project_id", read_only=True)

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "project", "created_at"]
        ref_name = "Dataset"


class DatasetListApi(ApiAuthMixin, APIView):
    # JSON for reads is the default renderer; writes are file uploads.
    parser_classes = (MultiPartParser, FormParser)

    class FilterSerializer(serializers.Serializer):
        project = id_field()

        class Meta:
            ref_name = "DatasetFilter"

    class InputSerializer(serializers.Serializer):
        project = id_field(required=True)
        name = serializers.CharField(min_length=1, max_length=200)
        file = UploadField(help_text="JSONL (one item a line) or CSV, see the dataset format.")
        format = serializers.ChoiceField(choices=["jsonl", "csv", "mqm-tsv"], required=False)

        class Meta:
            ref_name = "DatasetImport"

    class ImportOutputSerializer(serializers.Serializer):
        dataset = DatasetOutputSerializer()
        items = serializers.IntegerField()
        outputs = serializers.IntegerField()
        created = serializers.BooleanField()
        unchanged = serializers.BooleanField()

        class Meta:
            ref_name = "DatasetImportResult"

    @extend_schema(
        operation_id="datasets_list", parameters=[FilterSerializer], responses=paginated(DatasetOutputSerializer)
    )
    def get(self, request: Request) -> Response:
        require_staff_somewhere(user=request.user)
        filters = validated_filters(self.FilterSerializer, request)
        datasets = dataset_list(user=request.user, project_id=filters.get("project"))
        return paginated_response(
            queryset=datasets, serializer_class=DatasetOutputSerializer, request=request, view=self
        )

    @extend_schema(
        operation_id="datasets_import",
        request={"multipart/form-data": InputSerializer},
        responses={
            201: ImportOutputSerializer,
            200: ImportOutputSerializer,
            202: OpenApiResponse(
                ImportJobOutputSerializer,
                description="A large file, imported by a worker: "
                "follow the job at its `url` (also the Location header).",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        """Import a dataset file into a project (owners and researchers).

        Atomic: on any bad line nothing is written and the answer is a 400
        whose `errors` lists every problem as "line N: reason". Importing
        into an existing dataset answers 200, a new one 201. A file larger
        than the server's WORKBENCH_IMPORT_ASYNC_BYTES (a zip: once
        extracted) is imported by a worker: 202 with the job to follow.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        project = project_list(user=request.user).filter(pk=data["project"]).first()
        if project is None:
            raise NotFound()
        require_staff(user=request.user, project=project)
        upload = data["file"]
        try:
            result = dataset_upload_import(
                user=request.user, upload=upload, dataset_name=data["name"], project=project, fmt=data.get("format")
            )
        except DatasetNameTaken as exc:
            raise ValidationError({"name": [e.reason for e in exc.errors]}) from None
        if isinstance(result, ImportJob):
            body = ImportJobOutputSerializer(result).data
            return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})
        body = self.ImportOutputSerializer(
            {
                "dataset": result.dataset,
                "items": result.items,
                "outputs": result.outputs,
                "created": result.created,
                "unchanged": result.unchanged,
            }
        ).data
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class DatasetDetailApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="datasets_retrieve", responses=DatasetOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        dataset = get_object_or_404(dataset_list(user=request.user), pk=pk)
        return Response(DatasetOutputSerializer(dataset).data)


def _blind_context(request: Request) -> dict:
    return {"blind": blind_project_ids(user=request.user), "user": request.user}


class ReferenceOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Reference
        fields = ["position", "text"]
        ref_name = "Reference"


class OutputOutputSerializer(serializers.ModelSerializer):
    """An output; `system` and `system_name` are left out in projects where the
    caller only annotates (blind evaluation)."""

    item = serializers.IntegerField(source="item_id", read_only=True)
    system = serializers.IntegerField(source="system_id", read_only=True, required=False)
    system_name = serializers.CharField(source="system.name", read_only=True, required=False)

    class Meta:
        model = Output
        fields = ["id", "item", "system", "system_name", "text"]
        ref_name = "Output"

    def to_representation(self, instance):
        if instance.item.dataset.project_id in self.context.get("blind", ()):
            return {"id": instance.pk, "item": instance.item_id, "text": instance.text}
        return super().to_representation(instance)


class ItemOutputSerializer(serializers.ModelSerializer):
    """An item with its outputs: without system names, in the caller's own
    shuffled order, in projects where the caller only annotates."""

    dataset = serializers.IntegerField(source="dataset_id", read_only=True)
    data = serializers.JSONField(read_only=True)
    meta = serializers.JSONField(read_only=True)
    references = ReferenceOutputSerializer(many=True, read_only=True)
    outputs = serializers.SerializerMethodField()

    @extend_schema_field(OutputOutputSerializer(many=True))
    def get_outputs(self, item):
        outputs = list(item.outputs.all())
        if item.dataset.project_id in self.context.get("blind", ()):
            user = self.context["user"]
            outputs.sort(key=lambda o: blind_order_key(user=user, output_id=o.pk))
            return [{"id": o.pk, "item": o.item_id, "text": o.text} for o in outputs]
        return [self._output_serializer.to_representation(output) for output in outputs]

    @cached_property
    def _output_serializer(self) -> OutputOutputSerializer:
        # One for the whole page: a serializer made per item built (deep-copied) its fields again for
        # each of a page's 50 items, about half of the items API's time (issue 45, bench_pages).
        return OutputOutputSerializer()

    class Meta:
        model = Item
        fields = [
            "id",
            "dataset",
            "external_id",
            "position",
            "source",
            "data",
            "meta",
            "doc",
            "doc_pos",
            "references",
            "outputs",
        ]
        ref_name = "Item"


class ItemListApi(ApiAuthMixin, APIView):
    class FilterSerializer(serializers.Serializer):
        dataset = id_field()
        system = id_field(help_text="Only items with an output of this system.")
        q = serializers.CharField(
            required=False,
            max_length=SEARCH_MAX_CHARS,
            help_text="Search the external id, source, data, references, outputs (case-insensitive substring; "
            "under 3 characters: item ids only). A search's `count` stops at 200.",
        )

        class Meta:
            ref_name = "ItemFilter"

    @extend_schema(operation_id="items_list", parameters=[FilterSerializer], responses=paginated(ItemOutputSerializer))
    def get(self, request: Request) -> Response:
        require_staff_somewhere(user=request.user)
        filters = validated_filters(self.FilterSerializer, request)
        items = item_api_list(
            user=request.user,
            dataset_id=filters.get("dataset"),
            system_id=filters.get("system"),
            query=filters.get("q", ""),
        )
        # A search counts at most SEARCH_COUNT_CAP matches (and serves their pages).
        pagination = CappedPagination if filters.get("q", "").strip() else PageNumberPagination
        return paginated_response(
            queryset=items,
            serializer_class=ItemOutputSerializer,
            request=request,
            view=self,
            context=_blind_context(request),
            pagination_class=pagination,
        )


class ItemDetailApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="items_retrieve", responses=ItemOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        item = get_object_or_404(item_api_list(user=request.user), pk=pk)
        return Response(ItemOutputSerializer(item, context=_blind_context(request)).data)


class OutputListApi(ApiAuthMixin, APIView):
    class FilterSerializer(serializers.Serializer):
        dataset = id_field()
        system = id_field()
        item = id_field()

        class Meta:
            ref_name = "OutputFilter"

    @extend_schema(
        operation_id="outputs_list", parameters=[FilterSerializer], responses=paginated(OutputOutputSerializer)
    )
    def get(self, request: Request) -> Response:
        require_staff_somewhere(user=request.user)
        filters = validated_filters(self.FilterSerializer, request)
        outputs = output_api_list(
            user=request.user,
            dataset_id=filters.get("dataset"),
            system_id=filters.get("system"),
            item_id=filters.get("item"),
        )
        return paginated_response(
            queryset=outputs,
            serializer_class=OutputOutputSerializer,
            request=request,
            view=self,
            context=_blind_context(request),
        )
