"""Reads of the metrics app. Readers of scores (correlations, reports) use
only DONE runs: the newest done run per (dataset, metric, signature)."""
from __future__ import annotations

from django.db.models import QuerySet

from annotations.models import Dataset, Item
from metrics.models import MetricRun, OutputScore, RunStatus


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


def run_list(*, dataset: Dataset) -> QuerySet[MetricRun]:
    return MetricRun.objects.filter(dataset=dataset).select_related("created_by").order_by("-created_at", "-id")


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
