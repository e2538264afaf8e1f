"""Metric runs, their chunks and the per-output scores they store.

A run scores every output of a dataset with one metric and one set of
options. It is split into chunks that Celery workers claim one at a time;
scores are written with upserts keyed by (run, output), so a chunk that is
delivered twice, retried or re-run after a worker died changes nothing.
"""

from django.conf import settings
from django.db import models

from annotations.models import Dataset, Output, TimeStampedModel
from metrics.scorers import metric_class


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class ChunkStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


def metric_queue(metric: str) -> str:
    """The Celery queue of a metric's tasks: model metrics `gpu`, the others `cpu`."""

    try:
        return "gpu" if metric_class(metric).uses_model else "cpu"
    except Exception:  # unknown/unloadable metric: any worker will fail it with the message
        return "cpu"


class MetricRun(TimeStampedModel):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="metric_runs")
    metric = models.CharField(max_length=64)
    # Options as given (strings coerced by the metric), and as resolved with defaults.
    options = models.JSONField(default=dict, blank=True)
    signature = models.TextField(blank=True, default="")
    higher_is_better = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="metric_runs"
    )
    # True when computed in-process (`run_metric --sync`), False through the workers.
    sync = models.BooleanField(default=False)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Corpus result: {"score": x, ...}; system-level results under "systems": {name: {...}}.
    corpus = models.JSONField(null=True, blank=True)
    # State shared by all chunks, computed once before chunking (e.g. idf tables).
    shared_state = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    # Digest of (metric, resolved options, inputs): an identical done run is reused.
    reuse_key = models.CharField(max_length=64, blank=True, default="", db_index=True)
    # Whether this run may take the scores of an identical done run (False: `rerun`, always scored).
    reuse = models.BooleanField(default=True)
    chunk_size = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["dataset", "metric", "status"])]

    def __str__(self) -> str:
        return f"{self.metric} on {self.dataset} ({self.status})"


class MetricChunk(TimeStampedModel):
    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    output_ids = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=ChunkStatus.choices, default=ChunkStatus.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True, default="")
    error = models.TextField(blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Outputs of this chunk scored so far while it runs (a model metric scores a chunk in one
    # call of minutes; its scorer reports each batch): progress shown, never counted in
    # `run.done`, which only the stored chunk adds to (exactly once).
    scored = models.PositiveIntegerField(default=0)
    # System-level metrics (distinct-n, ttr, self-bleu): the system's value,
    # computed where its segment results (with their n-gram counts) exist.
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="unique_chunk_index_per_run")]

    def __str__(self) -> str:
        return f"chunk {self.index} of run {self.run_id} ({self.status})"


class OutputScore(models.Model):
    # No database-level foreign keys: PostgreSQL checks them per inserted row at commit
    # and locks every scored output row (FOR KEY SHARE), which cost as much as writing
    # the scores (35 of 95 ms per 2,500 chrF scores). Scores are written only by the run
    # services from outputs they have just read, and deletes cascade in Django as before
    # (Django's collector, which it uses with or without database constraints).
    # The run's index is the unique constraint's leading column.
    run = models.ForeignKey(
        MetricRun, on_delete=models.CASCADE, related_name="scores", db_constraint=False, db_index=False
    )
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="metric_scores", db_constraint=False)
    score = models.FloatField(null=True, blank=True)
    # Metric-specific fields: precision/recall/f1, NLI label/facts, minED errors with severities...
    extra = models.JSONField(default=dict, blank=True)
    # Summable sufficient statistics, so the corpus score is recomputed exactly from chunks.
    stats = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "output"], name="unique_score_per_run_output")]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.output_id}: {self.score}"
