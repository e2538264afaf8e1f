"""Database reads for the analysis: complete judgements of a campaign as plain rows.

Only judgements that count (`annotations.selectors.counted`: complete units
and imports) are read, and only those of included annotators when quality
control is in use for the campaign (`included_annotator_ids`); every result
says which judgements it used.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from annotations.models import (
    Annotator, BestWorstJudgement, Campaign, ErrorSpan, Output, PairwiseJudgement, RatingJudgement, SpanJudgement,
)
from annotations.quality.selectors import included_annotator_ids
from annotations.selectors import counted

INCLUDED, ALL = "included", "all"


@dataclass
class Judgements:
    campaign: Campaign
    protocol: str
    used: str  # says which judgements were used
    annotator_names: dict[int, str]
    # rating / ESA: (output, item, system, annotator, criterion, score)
    ratings: list[tuple] = field(default_factory=list)
    # pairwise: (item, output_a, output_b, annotator, criterion, winner)
    pairs: list[tuple] = field(default_factory=list)
    # best-worst: (item, outputs, best, worst, annotator, criterion)
    tuples: list[tuple] = field(default_factory=list)
    # ESA spans: {span judgement id: (output, annotator, criterion, [(start, end, severity)], n_missing)}
    spans: dict[int, tuple] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)

    def describe(self) -> dict:
        n = len(self.ratings) + len(self.pairs) + len(self.tuples)
        return {"judgements": n, "status": "complete only", "annotators": self.used,
                "excluded_annotators": self.excluded}


def campaign_judgements(*, campaign: Campaign, annotators: str = INCLUDED, criterion: str | None = None,
                        systems: list[str] | None = None) -> Judgements:
    keep = included_annotator_ids(campaign=campaign) if annotators == INCLUDED else None
    protocol = campaign.protocol

    def base(model):
        qs = counted(model.objects.filter(campaign=campaign))
        if keep is not None:
            qs = qs.filter(annotator_id__in=keep)
        if criterion:
            qs = qs.filter(criterion=criterion)
        return qs

    all_ids: set[int] = set()
    result = Judgements(campaign=campaign, protocol=protocol, used="", annotator_names={})
    if protocol in (Campaign.Protocol.LIKERT, Campaign.Protocol.RANKME):
        qs = base(RatingJudgement)
        if systems:
            qs = qs.filter(output__system__name__in=systems)
        result.ratings = list(qs.values_list("output_id", "item_id", "output__system__name", "annotator_id",
                                             "criterion", "score"))
    elif protocol == Campaign.Protocol.ESA:
        qs = base(SpanJudgement)
        if systems:
            qs = qs.filter(output__system__name__in=systems)
        rows = list(qs.values_list("id", "output_id", "item_id", "output__system__name", "annotator_id",
                                   "criterion", "score"))
        result.ratings = [r[1:] for r in rows]
        result.spans = {r[0]: (r[1], r[4], r[5], [], 0) for r in rows}
        for jid, start, end, severity, missing in ErrorSpan.objects.filter(
                judgement_id__in=list(result.spans)).values_list("judgement_id", "start", "end", "severity",
                                                                  "missing"):
            out, ann, crit, spans, n_missing = result.spans[jid]
            if missing:
                result.spans[jid] = (out, ann, crit, spans, n_missing + 1)
            else:
                spans.append((start, end, severity))
    elif protocol == Campaign.Protocol.PAIRWISE:
        qs = base(PairwiseJudgement)
        if systems:
            qs = qs.filter(output_a__system__name__in=systems, output_b__system__name__in=systems)
        result.pairs = list(qs.values_list("item_id", "output_a_id", "output_b_id", "annotator_id", "criterion",
                                           "winner"))
    elif protocol == Campaign.Protocol.BWS:
        result.tuples = list(base(BestWorstJudgement).values_list("item_id", "outputs", "best_id", "worst_id",
                                                                  "annotator_id", "criterion"))
    for rows, col in ((result.ratings, 3), (result.pairs, 3), (result.tuples, 4)):
        all_ids.update(r[col] for r in rows)
    result.annotator_names = dict(Annotator.objects.filter(pk__in=all_ids).values_list("id", "name"))
    if keep is None:
        result.used = ("all annotators (no quality control in use)" if annotators == INCLUDED
                       else "all annotators")
    else:
        everyone = set()
        for model in (RatingJudgement, PairwiseJudgement, BestWorstJudgement, SpanJudgement):
            everyone.update(counted(model.objects.filter(campaign=campaign)).values_list("annotator_id", flat=True)
                            .distinct())
        dropped = everyone - keep
        result.excluded = sorted(Annotator.objects.filter(pk__in=dropped).values_list("name", flat=True))
        result.used = f"included annotators only ({len(everyone) - len(dropped)} of {len(everyone)})"
    return result


def output_index(*, campaign: Campaign) -> dict[int, dict]:
    """Every output of the campaign's dataset (its systems when the campaign names some): id -> info."""
    qs = Output.objects.filter(item__dataset=campaign.dataset)
    chosen = list(campaign.systems.values_list("pk", flat=True))
    if chosen:
        qs = qs.filter(system_id__in=chosen)
    return {pk: {"item": item, "item_ext": ext, "system": system, "position": pos}
            for pk, item, ext, system, pos in qs.values_list("pk", "item_id", "item__external_id", "system__name",
                                                            "item__position")}
