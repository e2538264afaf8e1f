"""Exports through the REST API: start one for a campaign (a worker writes it), follow it, download it.

Owners and researchers only: 404 for non-members and annotators.
"""

from __future__ import annotations

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import campaign_for_staff
from annotations.export import FORMATS
from annotations.export.jobs import export_job_archive, export_job_create, options_from_json
from annotations.models.exports import ExportJob
from annotations.permissions import ApiAuthMixin
from annotations.selectors import export_job_list, export_job_waiting


class ExportJobOutputSerializer(serializers.ModelSerializer):
    campaign = serializers.IntegerField(source="campaign_id", read_only=True)
    result = serializers.JSONField(read_only=True, help_text="On success, export_dataset's JSON summary.")
    errors = serializers.ListField(child=serializers.CharField(), read_only=True)
    url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField(help_text="The zip of the export folder, once done.")
    waiting = serializers.SerializerMethodField(
        help_text='Why a queued export is not being written yet, e.g. "queued: waiting for a worker of the cpu '
        'queue; 2 tasks of earlier exports, imports and metric runs ahead"; null once a worker writes it.'
    )

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "campaign",
            "status",
            "progress",
            "options",
            "size",
            "result",
            "errors",
            "created_at",
            "started_at",
            "finished_at",
            "url",
            "page_url",
            "download_url",
            "waiting",
        ]
        ref_name = "ExportJob"

    def get_url(self, job: ExportJob) -> str:
        return reverse("api-export-job-detail", args=[job.pk])

    def get_page_url(self, job: ExportJob) -> str:
        return reverse("export-job-detail", args=[job.pk])

    def get_waiting(self, job: ExportJob) -> str | None:
        return export_job_waiting(job=job)

    def get_download_url(self, job: ExportJob) -> str | None:
        return reverse("api-export-job-download", args=[job.pk]) if job.status == ExportJob.Status.SUCCEEDED else None


class ExportCreateInputSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=FORMATS, default="jsonl")
    real_annotator_ids = serializers.BooleanField(default=False)
    annotator_figures = serializers.BooleanField(default=False)
    included_only = serializers.BooleanField(default=False)
    min_consensus = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)
    complete_units_only = serializers.BooleanField(default=False)
    systems = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=1000)
    criteria = serializers.ListField(child=serializers.CharField(max_length=100), required=False, max_length=100)
    licence = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")


class CampaignExportApi(ApiAuthMixin, APIView):
    @extend_schema(
        operation_id="campaigns_export_create",
        request=ExportCreateInputSerializer,
        responses={202: ExportJobOutputSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        """Start an export of the campaign (`export_dataset`'s options); a worker writes it. Poll `url`."""
        campaign = campaign_for_staff(user=request.user, pk=pk)
        data = ExportCreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # ExportFailed is a DomainError: answered 400 with the list of problems as `detail`.
        job = export_job_create(user=request.user, campaign=campaign, options=options_from_json(data.validated_data))
        return Response(ExportJobOutputSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ExportJobDetailApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="exports_retrieve", responses=ExportJobOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """An export being written: poll until `status` is `succeeded` (then `download_url`) or `failed`."""
        job = get_object_or_404(export_job_list(user=request.user), pk=pk)
        return Response(ExportJobOutputSerializer(job).data)


class ExportJobDownloadApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="exports_download", responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request: Request, pk: int):
        """The zip of a finished export, streamed from disk."""
        job = get_object_or_404(export_job_list(user=request.user), pk=pk)
        return export_download_response(job)


def export_download_response(job: ExportJob) -> FileResponse:
    path = export_job_archive(job)
    if path is None:
        raise Http404("This export is not ready.")
    return FileResponse(path.open("rb"), as_attachment=True, filename=path.name, content_type="application/zip")
