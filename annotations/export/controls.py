"""What the export says about quality controls: intra-annotator agreement on repeats and the
contents of the gold units (shown to the same project staff who may see the controls and export)."""

from __future__ import annotations

import statistics

from annotations.models import Campaign, Output

INTRA_LABEL = (
    "self-consistency on repeated units (annotations.quality.reliability.self_consistency): per annotator, "
    "1 − mean |first − repeat| / scale range for scores (min/max ratio for unbounded magnitudes), the share "
    "of identical answers for choices; mean over the annotators who judged repeats"
)


def intra_annotator(quality: dict, annotators: set[int]) -> dict:
    """Mean self-consistency over the exported annotators with repeats (None when nobody judged one)."""
    values, repeats = [], 0
    for pk in annotators:
        q = quality.get(pk)
        if q is None:
            continue
        found = q.as_json()
        if found.get("self_consistency") is not None:
            values.append(found["self_consistency"])
            repeats += found.get("repeats") or 0
    return {
        "label": INTRA_LABEL,
        "value": statistics.fmean(values) if values else None,
        "n_annotators": len(values),
        "n_repeats": repeats,
    }


def gold_unit_contents(campaign: Campaign) -> list[dict]:
    """Every gold unit in the data's own terms: item external id, the outputs' system names, the
    expected answer (output ids replaced by system names), mode and explanation."""
    units = list(campaign.gold_units.select_related("item").order_by("position", "id"))
    ids = {o for u in units for o in (u.outputs or [])}
    system = dict(Output.objects.filter(pk__in=ids).values_list("pk", "system__name"))

    def named(value):
        return system.get(value, value) if isinstance(value, int) and not isinstance(value, bool) else value

    return [
        {
            "item": u.item.external_id,
            "outputs": [system.get(o, o) for o in u.outputs or []],
            "expected": {
                criterion: {k: named(v) for k, v in answer.items()} if isinstance(answer, dict) else answer
                for criterion, answer in (u.expected or {}).items()
            },
            "mode": u.mode,
            "explanation": u.explanation,
        }
        for u in units
    ]
