"""Database reads for the analysis beyond the judgements (those come from the one reader,
`annotations.selectors.judgements`)."""

from __future__ import annotations

from annotations.models import Campaign, Output


def output_index(*, campaign: Campaign) -> dict[int, dict]:
    """Every output of the campaign's dataset (its systems when the campaign names some): id -> info."""
    qs = Output.objects.filter(item__dataset=campaign.dataset)
    chosen = list(campaign.systems.values_list("pk", flat=True))
    if chosen:
        qs = qs.filter(system_id__in=chosen)
    return {
        pk: {"item": item, "item_ext": ext, "system": system, "position": pos}
        for pk, item, ext, system, pos in qs.values_list(
            "pk", "item_id", "item__external_id", "system__name", "item__position"
        )
    }


def output_identities(*, dataset) -> dict[int, tuple[str, str]]:
    """Every output of the dataset in the data's own terms: id -> (item external id, system name).
    Resampling and ordering go by these, never by database ids or import order."""
    return {
        pk: (ext, system)
        for pk, ext, system in Output.objects.filter(item__dataset=dataset).values_list(
            "pk", "item__external_id", "system__name"
        )
    }


def output_texts(*, ids) -> dict[int, str]:
    """Output id -> its text (span scores need each output's length and token offsets)."""
    return dict(Output.objects.filter(pk__in=list(ids)).values_list("pk", "text"))
