"""Writing a judgement import: what is already stored, and the insert of what is new.

A judgement already stored with the same value (same score, winner,
best/worst) is skipped, so re-importing a file is a no-op; one stored with a
different value is a line error (found by `judgements_import`).
"""
from __future__ import annotations

from collections import defaultdict

from annotations.models import (
    BestWorstJudgement,
    Campaign,
    ErrorSpan,
    JudgementBase,
    PairwiseJudgement,
    RatingJudgement,
    SpanJudgement,
)
from annotations.services import judgements as checks
from annotations.services.bulk import rows_insert
from annotations.services.imports.common import chunks
from annotations.services.imports.judgement_validate import JudgementRecord, spans_key


def stored_judgements(campaign: Campaign, kind: str, annotator_ids: dict[str, int]) -> dict[tuple, tuple]:
    """unit -> value of the judgements already stored for the file's annotators."""
    names = {pk: name for name, pk in annotator_ids.items()}
    stored: dict[tuple, tuple] = {}
    for chunk in chunks(list(names), 10_000):
        if kind == "rating":
            rows = RatingJudgement.objects.filter(campaign=campaign, annotator_id__in=chunk).values_list(
                "annotator_id", "output_id", "criterion", "score", "rank")
            stored.update(((names[a], o, c), (s, r)) for a, o, c, s, r in rows)
        elif kind == "esa":
            judged = list(SpanJudgement.objects.filter(campaign=campaign, annotator_id__in=chunk).values_list(
                "id", "annotator_id", "output_id", "criterion", "score"))
            spans = defaultdict(list)
            for row in ErrorSpan.objects.filter(judgement_id__in=[j[0] for j in judged]).values(
                    "judgement_id", "start", "end", "severity", "missing"):
                spans[row.pop("judgement_id")].append(row)
            stored.update(((names[a], o, c), (s, spans_key(spans[pk]))) for pk, a, o, c, s in judged)
        elif kind == "pairwise":
            rows = PairwiseJudgement.objects.filter(campaign=campaign, annotator_id__in=chunk).values_list(
                "annotator_id", "output_a_id", "output_b_id", "criterion", "winner")
            stored.update(((names[an], a, b, c), (w,)) for an, a, b, c, w in rows)
        else:
            rows = BestWorstJudgement.objects.filter(campaign=campaign, annotator_id__in=chunk).values_list(
                "annotator_id", "tuple_key", "criterion", "best_id", "worst_id")
            stored.update(((names[a], k, c), (b, w)) for a, k, c, b, w in rows)
    return stored


def judgements_write(campaign: Campaign, kind: str, records: list[JudgementRecord], annotators: dict[str, int]):
    common = ["campaign_id", "annotator_id", "item_id", "criterion", "time_spent_ms", "shown_order", "origin"]

    def base(r: JudgementRecord) -> tuple:
        return (campaign.pk, annotators[r.annotator], r.item_id, r.criterion, r.time_spent_ms, r.shown,
                JudgementBase.Origin.IMPORT)

    if kind == "rating":
        # The criterion's scale is copied onto each row so the database's check constraints enforce it too.
        rows_insert(RatingJudgement, common + ["output_id", "score", "rank", "scale_min", "scale_max"],
                    ((*base(r), r.output_id, r.score, r.rank, *campaign.criterion_scale(r.criterion))
                     for r in records))
    elif kind == "esa":
        # bulk_create rather than COPY: the spans need the judgements' ids.
        judgements = SpanJudgement.objects.bulk_create(
            [SpanJudgement(**dict(zip(common, base(r))), output_id=r.output_id, score=r.score,
                           scale_min=campaign.criterion_scale(r.criterion)[0],
                           scale_max=campaign.criterion_scale(r.criterion)[1]) for r in records],
            batch_size=2000,
        )
        ErrorSpan.objects.bulk_create(
            [ErrorSpan(judgement=j, **span) for j, r in zip(judgements, records) for span in r.spans],
            batch_size=2000,
        )
    elif kind == "pairwise":
        rows_insert(PairwiseJudgement, common + ["output_a_id", "output_b_id", "winner"],
                    ((*base(r), r.a_id, r.b_id, r.winner) for r in records))
    else:
        rows_insert(BestWorstJudgement, common + ["outputs", "tuple_key", "best_id", "worst_id"],
                    ((*base(r), sorted(r.shown), checks.tuple_key(r.shown), r.best_id, r.worst_id)
                     for r in records))
