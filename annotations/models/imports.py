"""Uploaded files imported by a worker."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotations.models.base import TimeStampedModel
from annotations.models.campaigns import Campaign
from annotations.models.datasets import Dataset, Project


class ImportJob(TimeStampedModel):
    """An uploaded file too large to import during the request, imported by a worker.

    The web process only stores the file and this row; a Celery task
    (`annotations.tasks`) runs the importer and records its progress here,
    which the import page polls.
    """

    class Kind(models.TextChoices):
        DATASET = "dataset", "Dataset"
        JUDGEMENTS = "judgements", "Judgements"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Phase(models.TextChoices):
        WAITING = "waiting", "Waiting for a worker"
        READING = "reading", "Reading and checking the file"
        WRITING = "writing", "Writing to the database"
        DONE = "done", "Done"

    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.DATASET)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="import_jobs")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    # What the importer is called with (a dataset import; a campaign for judgements).
    dataset_name = models.CharField(max_length=200, blank=True)
    campaign = models.ForeignKey(Campaign, null=True, blank=True, on_delete=models.CASCADE, related_name="import_jobs")
    fmt = models.CharField(max_length=10, blank=True)
    # Judgements only (import_judgements --skip-invalid): import the rest, list the refused lines in `result`.
    skip_invalid = models.BooleanField(default=False)
    filename = models.CharField(max_length=255)
    file = models.FileField(upload_to="imports/%Y/%m/", max_length=500, blank=True)
    size = models.BigIntegerField()

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.WAITING)
    progress = models.FloatField(default=0.0)  # fraction of the current phase done, 0-1
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # On failure: the importer's "line N: reason" list; on success: its JSON summary.
    errors = models.JSONField(default=list, blank=True)
    result = models.JSONField(default=dict, blank=True)
    dataset = models.ForeignKey(Dataset, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "succeeded", "failed"]), name="importjob_status_valid"
            ),
            models.CheckConstraint(condition=Q(progress__gte=0) & Q(progress__lte=1), name="importjob_progress_range"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} import of {self.filename} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)
