"""Reads of second waves: which two campaigns form a pair, and who judged in both.

The analysis (`annotations.analysis.report`) reads them; `annotations.services.waves` creates
waves and keeps their annotators apart.
"""

from __future__ import annotations

from annotations import protocols
from annotations.models import Campaign


def wave_pair(campaign: Campaign) -> tuple[Campaign, Campaign] | None:
    """(first wave, second wave) when `campaign` is either of them, else None."""
    if campaign.wave_of_id:
        return campaign.wave_of, campaign
    second = Campaign.objects.filter(wave_of=campaign).select_related("dataset").order_by("id").first()
    return (campaign, second) if second else None


def wave_annotators_overlap(*, first: Campaign, second: Campaign) -> int:
    """How many annotators (records or accounts) judged in both waves: 0 when the engine kept them apart
    (imports can still mix them; the analysis reports the number)."""

    def people(c: Campaign) -> set:
        model = protocols.of(c).model
        found = set()
        for a, u in model.objects.filter(campaign=c).values_list("annotator_id", "annotator__user_id").distinct():
            found.add(("u", u) if u else ("a", a))
        return found

    return len(people(first) & people(second))
