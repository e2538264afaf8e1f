"""Imports running on a worker: follow a job started by a large upload."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.models import ImportJob
from annotations.permissions import ApiAuthMixin
from annotations.selectors import import_job_list


class ImportJobOutputSerializer(serializers.ModelSerializer):
    project = serializers.IntegerField(source="project_id", read_only=True)
    dataset = serializers.IntegerField(source="dataset_id", read_only=True, allow_null=True)
    errors = serializers.ListField(child=serializers.CharField(), read_only=True,
                                   help_text='On failure, every problem as "line N: reason".')
    result = serializers.JSONField(read_only=True, help_text="On success, the importer's summary.")
    url = serializers.SerializerMethodField(help_text="This job in the API.")
    page_url = serializers.SerializerMethodField(help_text="This job's page, with its progress.")
    dataset_url = serializers.SerializerMethodField(help_text="The imported dataset's page, once done.")

    class Meta:
        model = ImportJob
        fields = ["id", "kind", "status", "phase", "progress", "filename", "size", "project", "dataset_name",
                  "dataset", "errors", "result", "created_at", "started_at", "finished_at", "url", "page_url",
                  "dataset_url"]
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
