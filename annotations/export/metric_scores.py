"""Metric scores of a dataset's outputs, from the latest done run per (metric, signature).

Reads through `metrics.selectors` (issue 7) when it is there; until then the same query is
written here. Without the metric-run models nothing is exported (an empty list).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunScores:
    key: str  # the column name: the metric, or "metric#2" when two signatures share a metric
    metric: str
    signature: str
    higher_is_better: bool | None
    corpus: dict
    finished_at: str | None
    scores: dict[int, float | None]
    # The score of each system, from metrics.selectors.system_scores (the metric's corpus score):
    # {"label": ..., "aggregate": ..., "scores": {system: value}}; empty without the reader.
    systems: dict = field(default_factory=dict)


def metric_scores(*, dataset) -> list[RunScores]:
    runs = _latest_done_runs(dataset)
    found: list[RunScores] = []
    seen: dict[str, int] = {}
    for run in sorted(runs, key=lambda r: (r.metric, r.signature)):
        seen[run.metric] = seen.get(run.metric, 0) + 1
        key = run.metric if seen[run.metric] == 1 else f"{run.metric}#{seen[run.metric]}"
        found.append(
            RunScores(
                key=key,
                metric=run.metric,
                signature=run.signature,
                higher_is_better=run.higher_is_better,
                corpus={k: v for k, v in (run.corpus or {}).items() if k != "systems"},
                finished_at=run.finished_at.isoformat() if run.finished_at else None,
                scores=_scores_by_output(run),
                systems=_system_scores(run),
            )
        )
    return found


def _latest_done_runs(dataset) -> list:
    try:
        from metrics.selectors import latest_done_runs  # lazy: optional import guarded by try/except
    except ImportError:
        try:
            from metrics.models import MetricRun  # lazy: optional import guarded by try/except
        except ImportError:
            return []
        latest: dict = {}
        for run in MetricRun.objects.filter(dataset=dataset, status="done").order_by("-finished_at", "-id"):
            latest.setdefault(run.signature, run)
        return list(latest.values())
    return list(latest_done_runs(dataset=dataset))


def _scores_by_output(run) -> dict[int, float | None]:
    try:
        from metrics.selectors import scores_by_output  # lazy: optional import guarded by try/except
    except ImportError:
        return dict(run.scores.values_list("output_id", "score"))
    return scores_by_output(run=run)


def _system_scores(run) -> dict:
    try:
        from metrics.selectors import system_scores  # lazy: optional import guarded by try/except
    except ImportError:
        return {}
    return system_scores(run=run).as_dict()
