"""Metric scores for the analysis, read only from done runs.

`latest_done_runs` and `scores_by_output` are the readers the metric-runs
issue provides in `metrics.selectors`; until that module exists these local
copies (the same queries) are used.
"""
from __future__ import annotations

from django.db.models import QuerySet

from metrics.models import MetricRun, OutputScore, RunStatus

try:  # the metric-runs issue's public readers, once merged
    from metrics.selectors import latest_done_runs, scores_by_output  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on merge order
    def latest_done_runs(*, dataset) -> QuerySet[MetricRun]:
        runs = MetricRun.objects.filter(dataset=dataset, status=RunStatus.DONE).order_by("-finished_at", "-id")
        newest: dict[tuple[str, str], int] = {}
        for pk, metric, signature in runs.values_list("pk", "metric", "signature"):
            newest.setdefault((metric, signature), pk)
        return MetricRun.objects.filter(pk__in=newest.values()).order_by("metric", "-finished_at", "-id")

    def scores_by_output(*, run: MetricRun) -> dict[int, float | None]:
        return dict(OutputScore.objects.filter(run=run).values_list("output_id", "score"))


def run_for_metric(*, dataset, metric: str) -> MetricRun | None:
    """The newest done run of a metric (name) on the dataset, or a run id given as "#ID"/"ID"."""
    runs = latest_done_runs(dataset=dataset)
    if metric.lstrip("#").isdigit():
        return runs.filter(pk=int(metric.lstrip("#"))).first()
    return runs.filter(metric=metric).order_by("-finished_at", "-id").first()


def extras_by_output(*, run: MetricRun) -> dict[int, dict]:
    return dict(OutputScore.objects.filter(run=run).values_list("output_id", "extra"))


def system_scores(*, run: MetricRun) -> dict[str, float]:
    """Corpus-level score per system when the run stored one ({"systems": {name: x or {"score": x}}})."""
    systems = (run.corpus or {}).get("systems") or {}
    out = {}
    for name, value in systems.items():
        if isinstance(value, dict):
            value = value.get("score")
        if isinstance(value, (int, float)):
            out[name] = float(value)
    return out
