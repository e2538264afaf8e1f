"""Done `llm-judge` runs for tests, stored directly (the metric itself is tested in tests/metrics):
the analysis reads runs by metric name. The options are resolved by the real metric class, as
`metrics.services.runs.create_run` stores them (defaults filled in; options the judge refuses,
such as `temperature` outside spans mode, fail here too); `pairwise_extras` writes the segment
JSON of pairwise mode as metrics/scorers/llm_judge.py does."""

from __future__ import annotations

import itertools

from django.utils import timezone

from annotations.models import Output
from metrics.models import MetricRun, OutputScore, RunStatus
from metrics.scorers import get_metric
from metrics.services.common import jsonable

_serial = itertools.count(1)


def judge_run(
    dataset,
    scores: dict[int, float],
    *,
    extras: dict[int, dict] | None = None,
    options: dict | None = None,
    metric: str = "llm-judge",
) -> MetricRun:
    options = {"model": "/models/judge", "mode": "score", **(options or {})}
    if options["mode"] == "score":
        options.setdefault("scale", "0-100")
    if metric == "llm-judge":
        options = jsonable(get_metric(metric, **options).options)
    run = MetricRun.objects.create(
        dataset=dataset,
        metric=metric,
        options=options,
        signature=f"{metric}|test:{next(_serial)}",
        higher_is_better=True,
        status=RunStatus.DONE,
        sync=True,
        total=len(scores),
        done=len(scores),
        started_at=timezone.now(),
        finished_at=timezone.now(),
        corpus={"score": None},
    )
    OutputScore.objects.bulk_create(
        [OutputScore(run=run, output_id=o, score=v, extra=(extras or {}).get(o, {})) for o, v in scores.items()]
    )
    return run


def outputs_by_key(dataset) -> dict[tuple[str, str], Output]:
    """(item external id, system name) -> output."""
    return {
        (o.item.external_id, o.system.name): o
        for o in Output.objects.filter(item__dataset=dataset).select_related("item", "system")
    }


def pairwise_extras(first: dict[tuple[int, int], float], order: list[list[int]]) -> tuple[dict, dict]:
    """Scores and segment JSON of a pairwise-mode judge, as llm_judge.py stores them.

    `order`: each item's output ids in the judge's plan order (system name, output id);
    `first[(a, b)]`: P(a is better | a shown first, b second), for both orders of every pair.
    Per output: `pairs` [{opponent: index in the item's plan order, preference: P(better | shown
    first), swapped: P(better | shown second) = 1 - P(opponent better | opponent first)}],
    `preference` / `swapped` their means over opponents, score the mean of the two."""
    scores, extras = {}, {}
    for members in order:
        for k, o in enumerate(members):
            pairs = [
                {"opponent": m, "preference": first[(o, other)], "swapped": 1.0 - first[(other, o)]}
                for m, other in enumerate(members)
                if other != o
            ]
            extra = {"pairs": pairs, "preference": None, "swapped": None}
            if pairs:
                extra["preference"] = sum(e["preference"] for e in pairs) / len(pairs)
                extra["swapped"] = sum(e["swapped"] for e in pairs) / len(pairs)
            scores[o] = (extra["preference"] + extra["swapped"]) / 2 if pairs else None
            extras[o] = extra
    return scores, extras
