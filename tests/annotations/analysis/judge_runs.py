"""Done `llm-judge` runs for tests, stored directly (the metric itself is tested in tests/metrics):
the analysis reads runs by metric name, so any stored scores and per-output JSON will do."""
from __future__ import annotations

import itertools

from django.utils import timezone

from annotations.models import Output
from metrics.models import MetricRun, OutputScore, RunStatus

_serial = itertools.count(1)


def judge_run(dataset, scores: dict[int, float], *, extras: dict[int, dict] | None = None,
              options: dict | None = None, metric: str = "llm-judge") -> MetricRun:
    options = {"model": "/models/judge", "mode": "score", "scale": "0-100", **(options or {})}
    run = MetricRun.objects.create(
        dataset=dataset, metric=metric, options=options, signature=f"{metric}|test:{next(_serial)}",
        higher_is_better=True, status=RunStatus.DONE, sync=True, total=len(scores), done=len(scores),
        started_at=timezone.now(), finished_at=timezone.now(), corpus={"score": None})
    OutputScore.objects.bulk_create([OutputScore(run=run, output_id=o, score=v, extra=(extras or {}).get(o, {}))
                                     for o, v in scores.items()])
    return run


def outputs_by_key(dataset) -> dict[tuple[str, str], Output]:
    """(item external id, system name) -> output."""
    return {(o.item.external_id, o.system.name): o
            for o in Output.objects.filter(item__dataset=dataset).select_related("item", "system")}
