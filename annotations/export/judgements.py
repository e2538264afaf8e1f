"""Loading a campaign's judgements item chunk by item chunk, in one light shape for every protocol.

Each chunk is a handful of queries on `item_id IN (...)` (values_list, no
model instances), so an export holds one chunk of items at a time however
large the campaign is.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from annotations.models import (
    BestWorstJudgement,
    Campaign,
    ErrorSpan,
    PairwiseJudgement,
    RatingJudgement,
    SpanJudgement,
)

MODELS = {"rating": RatingJudgement, "esa": SpanJudgement, "pairwise": PairwiseJudgement, "bws": BestWorstJudgement}
_COMMON = ("id", "annotator_id", "item_id", "criterion", "status", "origin", "time_spent_ms", "shown_order",
           "created_at")
_SPECIFIC = {
    "rating": ("output_id", "score", "rank"),
    "esa": ("output_id", "score"),
    "pairwise": ("output_a_id", "output_b_id", "winner"),
    "bws": ("outputs", "best_id", "worst_id"),
}


def kind_of(campaign: Campaign) -> str:
    if campaign.protocol in Campaign.RATING_PROTOCOLS:
        return "rating"
    return str(campaign.protocol)  # esa, pairwise, bws


@dataclass(slots=True)
class Judgement:
    id: int
    annotator_id: int
    item_id: int
    criterion: str
    status: str
    origin: str
    time_spent_ms: int | None
    shown_order: list
    created_at: object
    # rating / esa: the output and its score; pairwise: the canonical pair and winner; bws: tuple, best, worst
    output_id: int | None = None
    score: float | None = None
    rank: int | None = None
    a_id: int | None = None
    b_id: int | None = None
    winner: str | None = None
    outputs: list = field(default_factory=list)
    best_id: int | None = None
    worst_id: int | None = None
    spans: list = field(default_factory=list)

    def output_ids(self) -> list[int]:
        """Every output the judgement is about."""
        if self.output_id is not None:
            return [self.output_id]
        if self.a_id is not None:
            return [self.a_id, self.b_id]
        return list(self.outputs)

    def unit(self) -> tuple:
        """What several annotators judge alike: the output, the pair or the tuple (sorted)."""
        if self.output_id is not None:
            return (self.output_id,)
        if self.a_id is not None:
            return (self.a_id, self.b_id)
        return tuple(sorted(self.outputs))

    def value(self):
        """The answer, comparable across annotators of the same unit."""
        if self.output_id is not None:
            return self.score
        if self.a_id is not None:
            return self.winner
        return (self.best_id, self.worst_id)


def judgements_of_items(*, campaign: Campaign, kind: str, item_ids: list[int]) -> list[Judgement]:
    """Every judgement (any status) of the campaign on these items, ordered by item then id."""
    model = MODELS[kind]
    rows = (model.objects.filter(campaign=campaign, item_id__in=item_ids).order_by("item_id", "id")
            .values_list(*_COMMON, *_SPECIFIC[kind]))
    found = []
    for row in rows:
        j = Judgement(*row[:len(_COMMON)])
        rest = row[len(_COMMON):]
        if kind == "rating":
            j.output_id, j.score, j.rank = rest
        elif kind == "esa":
            j.output_id, j.score = rest
        elif kind == "pairwise":
            j.a_id, j.b_id, j.winner = rest
        else:
            j.outputs, j.best_id, j.worst_id = list(rest[0]), rest[1], rest[2]
        found.append(j)
    if kind == "esa" and found:
        by_id = {j.id: j for j in found}
        spans = defaultdict(list)
        for judgement_id, start, end, severity, missing in ErrorSpan.objects.filter(
                judgement_id__in=list(by_id)).order_by("judgement_id", "id").values_list(
                "judgement_id", "start", "end", "severity", "missing"):
            spans[judgement_id].append(
                {"missing": True, "severity": severity} if missing
                else {"start": start, "end": end, "severity": severity})
        for pk, found_spans in spans.items():
            by_id[pk].spans = found_spans
    return found
