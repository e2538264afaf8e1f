"""An export started from the browser or the API, written by a Celery worker.

Listed in `annotations.models` with the others (table `annotations_exportjob`). The web
process only creates this row; the worker writes the export folder and a zip of it under
MEDIA_ROOT/exports/<id>/, and the download view streams the zip from disk.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotations.models.base import TimeStampedModel
from annotations.models.campaigns import Campaign


class ExportJob(TimeStampedModel):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="export_jobs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="export_jobs")
    # annotations.export.ExportOptions as a dict.
    options = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)  # 0-1
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The zip to download, relative to MEDIA_ROOT; empty until done.
    archive = models.CharField(max_length=500, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    # On success: export_dataset's JSON summary; on failure: the problems.
    result = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "succeeded", "failed"]), name="exportjob_status_valid"
            ),
            models.CheckConstraint(condition=Q(progress__gte=0) & Q(progress__lte=1), name="exportjob_progress_range"),
        ]

    def __str__(self) -> str:
        return f"Export of {self.campaign} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)
