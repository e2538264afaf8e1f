"""Metric scores for the analysis, read only from done runs (the newest per
signature), through the metric-runs readers in `metrics.selectors`."""

from __future__ import annotations

from metrics.models import MetricRun, OutputScore

# system_scores: the one definition of a system's metric score (the metric's corpus score), re-exported.
from metrics.selectors import SystemScores, latest_done_runs, scores_by_output, system_scores  # noqa: F401


def run_for_metric(*, dataset, metric: str) -> MetricRun | None:
    """The newest done run of a metric (name) on the dataset, or a run id given as "#ID"/"ID"."""
    runs = sorted(
        latest_done_runs(dataset=dataset), key=lambda r: (r.finished_at is not None, r.finished_at, r.pk), reverse=True
    )
    # Matched in Python: a name from the command line or a URL never reaches SQL.
    if metric.lstrip("#").isdigit():
        return next((r for r in runs if r.pk == int(metric.lstrip("#"))), None)
    return next((r for r in runs if r.metric == metric), None)


def extras_by_output(*, run: MetricRun) -> dict[int, dict]:
    return dict(OutputScore.objects.filter(run=run).values_list("output_id", "extra"))


def scores_of_outputs(*, runs: list[MetricRun], output_ids) -> dict[int, dict[int, float | None]]:
    """{run id: {output id: score}} for these outputs only (one statement): an item's few outputs,
    never a run's million scores read once per item shown."""
    found: dict[int, dict[int, float | None]] = {r.pk: {} for r in runs}
    rows = OutputScore.objects.filter(run__in=[r.pk for r in runs], output_id__in=list(output_ids))
    for run_id, output_id, score in rows.values_list("run_id", "output_id", "score"):
        found[run_id][output_id] = score
    return found
