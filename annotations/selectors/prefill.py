"""Reads of ESA^AI's suggested spans for the unit an annotator is shown."""

from __future__ import annotations

from collections import defaultdict

from annotations.models import Campaign, SpanSuggestion


def suggestions_for(*, campaign: Campaign, output_ids) -> dict[int, list[dict]]:
    """The suggestions shown with each output (none for a held-back output): offsets and severity
    only, never where they came from."""
    if not campaign.prefilled:
        return {}
    out: dict[int, list[dict]] = defaultdict(list)
    for o, start, end, severity, missing in (
        SpanSuggestion.objects.filter(campaign=campaign, output_id__in=list(output_ids), held_back=False)
        .order_by("output_id", "position")
        .values_list("output_id", "start", "end", "severity", "missing")
    ):
        out[o].append({"start": start, "end": end, "severity": severity, "missing": missing})
    return dict(out)
