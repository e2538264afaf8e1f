"""Imports running on a worker: follow a job started by a large upload; upload a campaign's judgements.

POST /api/campaigns/{id}/judgements/import/ (multipart: `file`, `format` jsonl|mqm-tsv,
`skip_invalid`): as `import_judgements`, atomic; 201 with the summary (with `skip_invalid`, its
`skipped` lists every refused line), 400 with every problem as "line N: reason", 202 with the job
to follow for a large file.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import campaign_for_staff
from annotations.models import ImportJob
from annotations.permissions import ApiAuthMixin
from annotations.selectors import import_job_list
from annotations.services.import_jobs import judgements_upload_import


class ImportJobOutputSerializer(serializers.ModelSerializer):
    project = serializers.IntegerField(source="project_id", read_only=True)
    dataset = serializers.IntegerField(source="dataset_id", read_only=True, allow_null=True)
    errors = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text='On failure, every problem as "line N: reason".'
    )
    result = serializers.JSONField(read_only=True, help_text="On success, the importer's summary.")
    url = serializers.SerializerMethodField(help_text="This job in the API.")
    page_url = serializers.SerializerMethodField(help_text="This job's page, with its progress.")
    dataset_url = serializers.SerializerMethodField(help_text="The imported dataset's page, once done.")

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "kind",
            "status",
            "phase",
            "progress",
            "filename",
            "size",
            "project",
            "dataset_name",
            "dataset",
            "errors",
            "result",
            "created_at",
            "started_at",
            "finished_at",
            "url",
            "page_url",
            "dataset_url",
        ]
        ref_name = "ImportJob"

    def get_url(self, job: ImportJob) -> str:
        return reverse("api-import-job-detail", args=[job.pk])

    def get_page_url(self, job: ImportJob) -> str:
        return reverse("import-job-detail", args=[job.pk])

    def get_dataset_url(self, job: ImportJob) -> str | None:
        return reverse("dataset-detail", args=[job.dataset_id]) if job.dataset_id else None


class ImportJobDetailApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="imports_retrieve", responses=ImportJobOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """A large import running on a worker: poll until `status` is `succeeded` or `failed`."""
        job = get_object_or_404(import_job_list(user=request.user), pk=pk)
        return Response(ImportJobOutputSerializer(job).data)


@extend_schema_field({"type": "string", "format": "binary"})
class _Upload(serializers.FileField):
    pass


class JudgementImportApi(ApiAuthMixin, APIView):
    parser_classes = (MultiPartParser, FormParser)

    class InputSerializer(serializers.Serializer):
        file = _Upload(help_text="Judgement JSONL (one judgement a line) or WMT's MQM TSV (MQM campaigns).")
        format = serializers.ChoiceField(choices=["jsonl", "mqm-tsv"], default="jsonl")
        skip_invalid = serializers.BooleanField(
            default=False,
            help_text="Import the valid judgements; the answer's `skipped` lists every refused line (never silent).",
        )

        class Meta:
            ref_name = "JudgementImport"

    @extend_schema(
        operation_id="campaigns_judgements_import",
        request={"multipart/form-data": InputSerializer},
        responses={
            201: dict,
            202: OpenApiResponse(
                ImportJobOutputSerializer,
                description="A large file, imported by a worker: follow the job at its `url`.",
            ),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        """Import judgements collected elsewhere into the campaign (owners and researchers), atomically:
        on any bad line nothing is written and the 400's `errors` lists every problem as "line N: reason"."""
        campaign = campaign_for_staff(user=request.user, pk=pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = judgements_upload_import(
            user=request.user,
            upload=data["file"],
            campaign=campaign,
            fmt=data["format"],
            skip_invalid=data["skip_invalid"],
        )
        if isinstance(result, ImportJob):
            body = ImportJobOutputSerializer(result).data
            return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})
        return Response(
            result.as_json(detail=True), status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        )
