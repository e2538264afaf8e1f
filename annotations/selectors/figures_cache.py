"""The figures cache: analysis, quality and severity figures computed once per state of a campaign.

The cache key holds the campaign, the newest judgement, the newest done metric
run and the newest quality decision, so a new judgement, run or decision
invalidates every figure, while pages reloaded without changes answer from
the cache. A low module (it reads; the cache is Django's), so that quality control's
selectors and the analysis pages share it without importing each other.
"""

from __future__ import annotations

import hashlib
import json

from django.core.cache import cache
from django.db.models import Max

from annotations.models import (
    BestWorstJudgement,
    Campaign,
    PairwiseJudgement,
    PostEditJudgement,
    RatingJudgement,
    SpanJudgement,
)
from annotations.models.quality import AnnotatorDecision, ControlJudgement, GoldUnit, QualitySettings
from metrics.selectors import latest_done_runs

TIMEOUT = 60 * 60


def stamp(campaign: Campaign) -> str:
    """The campaign's state as far as figures go: the newest change of its judgements, control
    answers, gold units, decisions and settings, and its done runs. Each part is one probe of a
    (campaign, updated_at) index, so the key costs the same at a million judgements as at ten."""
    parts = []
    for model in (
        RatingJudgement,
        PairwiseJudgement,
        BestWorstJudgement,
        SpanJudgement,
        PostEditJudgement,
        ControlJudgement,
        GoldUnit,
    ):
        parts.append(str(model.objects.filter(campaign=campaign).aggregate(t=Max("updated_at"))["t"]))
    runs = latest_done_runs(dataset=campaign.dataset)
    parts.append(",".join(str(pk) for pk in runs.values_list("pk", flat=True)))
    parts.append(str(AnnotatorDecision.objects.filter(campaign=campaign).aggregate(t=Max("id"))["t"]))
    parts.append(str(QualitySettings.objects.filter(campaign=campaign).values_list("updated_at", flat=True).first()))
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


def cached(campaign: Campaign, name: str, params: dict, compute):
    key = "analysis:%s:%s:%s:%s" % (
        campaign.pk,
        name,
        stamp(campaign),
        hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16],
    )
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, TIMEOUT)
    return value
