"""What the export says about quality controls: intra-annotator agreement on repeats and the
contents of the gold units (shown to the same project staff who may see the controls and export)."""

from __future__ import annotations

import statistics

from annotations import protocols
from annotations.models import Campaign, Output
from annotations.models.quality import ControlJudgement, ControlUnit
from annotations.protocols.base import RELATIVE_COPY

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


def relative_check_lines(campaign: Campaign, *, pseudonym, annotators: set[int] | None = None) -> list[dict]:
    """The campaign's answered relative attention checks (issue 41) as `import_judgements` control
    lines (annotations.quality.imports): the screen's answer with systems named, `degraded` the
    system shown damaged, and `passed` (recomputed on import). Those answered in the workbench name
    alias ids, mapped back to the outputs they showed; imported ones name the outputs. `annotators`:
    only these (None: all). Empty for protocols without relative checks in files."""
    protocol = protocols.of(campaign)
    if not protocol.relative_checks or protocol.relative_file_refused:
        return []
    answers = ControlJudgement.objects.filter(campaign=campaign, kind=ControlUnit.Kind.RELATIVE, passed__isnull=False)
    if annotators is not None:
        answers = answers.filter(annotator_id__in=annotators)
    answers = list(answers.select_related("control", "item").order_by("item__position", "item_id", "id"))
    wanted: set[int] = set()
    for cj in answers:
        if cj.control is not None:
            wanted |= {v["output"] for v in cj.control.aliases.values()}
        else:
            keys = set(cj.answer.get("scores") or {}) | set(cj.answer.get("outputs") or [])
            wanted |= {int(o) for o in keys} | {cj.output_id}
    system_of = dict(Output.objects.filter(pk__in=wanted).values_list("pk", "system__name"))
    lines = []
    for cj in answers:
        if cj.control is not None:
            # Shown in the workbench: alias ids, each standing for the output it showed.
            control = cj.control

            def name(alias: int, control=control) -> str:
                return system_of[control.real_output(alias)]

            copy, degraded = control.degraded_alias, name(control.degraded_alias)
        else:

            def name(output: int) -> str:
                return system_of[output]

            copy, degraded = RELATIVE_COPY, system_of[cj.output_id]
        line = {
            "item": cj.item.external_id,
            "annotator": pseudonym(cj.annotator_id),
            "criterion": cj.criterion,
            "control": "relative",
            "degraded": degraded,
            **protocol.relative_file_line(cj.answer, name, copy),
            "passed": cj.passed,
        }
        if cj.time_spent_ms is not None:
            line["time_spent_ms"] = cj.time_spent_ms
        lines.append(line)
    return lines
