"""Reads of the metrics app. Readers of scores (correlations, reports) use
only DONE runs: the newest done run per (dataset, metric, signature)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from annotations.models import Dataset, Item
from metrics.models import ChunkStatus, MetricChunk, MetricRun, OutputScore, RunStatus, metric_queue
from metrics.scorers import MetricError, metric_class


def latest_done_runs(*, dataset: Dataset) -> QuerySet[MetricRun]:
    """The newest done run of each (metric, signature) on the dataset."""
    newest = (
        MetricRun.objects.filter(dataset=dataset, status=RunStatus.DONE)
        .order_by("metric", "signature", "-finished_at", "-id")
        .distinct("metric", "signature")
        .values("pk")
    )
    return MetricRun.objects.filter(pk__in=newest).order_by("metric", "signature")


def scores_by_output(*, run: MetricRun) -> dict[int, float | None]:
    return dict(OutputScore.objects.filter(run=run).values_list("output_id", "score"))


def with_progress(runs: QuerySet[MetricRun]) -> QuerySet[MetricRun]:
    """Runs annotated with `scoring`: outputs scored so far in chunks still running (reported by
    the scorer between batches, not yet stored; `done` counts stored chunks only)."""
    scoring = (
        MetricChunk.objects.filter(run=OuterRef("pk"), status=ChunkStatus.RUNNING)
        .values("run")
        .annotate(n=Sum("scored"))
        .values("n")
    )
    return runs.annotate(scoring=Coalesce(Subquery(scoring, output_field=IntegerField()), 0))


def run_list(*, dataset: Dataset) -> QuerySet[MetricRun]:
    return with_progress(
        MetricRun.objects.filter(dataset=dataset).select_related("created_by").order_by("-created_at", "-id")
    )


def run_waiting(*, run: MetricRun) -> str | None:
    """Why an active run is not being scored, or None: queued runs, and running ones of which no
    chunk is being scored, wait for a worker of their queue behind the tasks of earlier active
    runs of that queue (a prepare task per queued run, a task per chunk not yet stored). Read
    from the database, so it holds for any broker; the queue is first in, first out."""
    if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
        return None
    if run.status == RunStatus.RUNNING and run.chunks.filter(status=ChunkStatus.RUNNING).exists():
        return None
    queue = metric_queue(run.metric)
    earlier = MetricRun.objects.filter(status__in=(RunStatus.QUEUED, RunStatus.RUNNING), pk__lt=run.pk)
    metrics = [m for m in earlier.values_list("metric", flat=True).distinct() if metric_queue(m) == queue]
    earlier = earlier.filter(metric__in=metrics)
    ahead = earlier.aggregate(
        queued=Count("pk", filter=Q(status=RunStatus.QUEUED), distinct=True),
        chunks=Count(
            "chunks", filter=Q(status=RunStatus.RUNNING, chunks__status__in=(ChunkStatus.PENDING, ChunkStatus.RUNNING))
        ),
    )
    n = (ahead["queued"] or 0) + (ahead["chunks"] or 0)
    state = "queued" if run.status == RunStatus.QUEUED else "started"
    return f"{state}: waiting for a worker of the {queue} queue; {n} task{'s' if n != 1 else ''} of earlier runs ahead"


def run_scores(*, run: MetricRun) -> QuerySet[OutputScore]:
    return (
        OutputScore.objects.filter(run=run)
        .select_related("output__system", "output__item")
        .order_by("output__item__position", "output__item_id", "output__system__name", "output_id")
    )


def item_scores(*, item: Item) -> dict[int, list[dict]]:
    """Scores of the item's outputs in the latest done run of each metric
    signature: {output id: [{"metric", "signature", "score", "run"}]}."""
    runs = list(latest_done_runs(dataset=item.dataset))
    by_run = {r.pk: r for r in runs}
    out: dict[int, list[dict]] = {}
    for s in OutputScore.objects.filter(run__in=runs, output__item=item).order_by("run__metric", "run_id"):
        run = by_run[s.run_id]
        out.setdefault(s.output_id, []).append(
            {"metric": run.metric, "signature": run.signature, "score": s.score, "run": run.pk}
        )
    return out


@dataclass(frozen=True)
class SystemScores:
    """The score of each system in one done metric run, and what that score is.

    The one definition every surface shows (rankings page, `correlate --level system`,
    the dataset's metric panel, the export's card): the metric's own corpus-level score
    over all of the system's outputs in the dataset, as sacrebleu and WMT report it
    (corpus BLEU from summed n-gram statistics, not a mean of sentence BLEU). The run
    computes it once when it finishes (`metrics.services.runs.corpus_result`); here it is
    only read. `aggregate` names it ("corpus BLEU", or "mean of segment scores" for a
    metric whose corpus score is that mean); `label` adds the run's signature."""

    run: int
    metric: str
    signature: str
    higher_is_better: bool
    aggregate: str
    scores: dict[str, float | None] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.aggregate} (signature {self.signature})" if self.signature else self.aggregate

    def missing(self, systems) -> list[str]:
        """The systems among `systems` the run has no score for."""
        return [s for s in systems if self.scores.get(s) is None]

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "aggregate": self.aggregate,
            "metric": self.metric,
            "run": self.run,
            "signature": self.signature,
            "higher_is_better": self.higher_is_better,
            "scores": dict(sorted(self.scores.items())),
        }


def corpus_label(metric: str) -> str:
    """What the metric's corpus score is (`Metric.corpus_label`)."""

    try:
        return metric_class(metric).corpus_label
    except (MetricError, ImportError, AttributeError):
        # A run of a metric this installation no longer offers: its stored value, unnamed.
        return f"{metric} corpus score as stored by the run"


def system_scores(*, run: MetricRun) -> SystemScores:
    """The run's score of each system (see SystemScores): read from the corpus result the
    run stored when it finished, {"systems": {name: {"score": x, ...}}}; a system whose
    score is missing or not a finite number maps to None."""
    out: dict[str, float | None] = {}
    for name, value in ((run.corpus or {}).get("systems") or {}).items():
        if isinstance(value, dict):
            value = value.get("score")
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        out[name] = float(value) if ok else None
    return SystemScores(
        run=run.pk,
        metric=run.metric,
        signature=run.signature,
        higher_is_better=run.higher_is_better,
        aggregate=corpus_label(run.metric),
        scores=out,
    )
