"""Reads of quality control that the engine's hot statements and the unit pages need.

SQL conditions folded into the requests' own statements (so a campaign without quality control
costs no extra round trip) and the texts a control unit shows. Here, below the services, so that
selectors, `timing` and the engine read them without importing quality control's writes.
"""

from __future__ import annotations

from annotations.models import Campaign, Unit
from annotations.models.quality import ControlUnit, GoldUnit, QualitySettings


def gold_sources_excluded_sql(unit: str) -> str:
    """An SQL condition on a regular unit row `unit`, with one parameter (the annotator's id): the unit's
    item is not the item of a gold unit this annotator was given. Shown again as a regular unit, a gold
    unit's outputs would tell by their text which of the two was the control (issue 46). Read by every
    pick of the engine; an index read of the annotator's few control units."""
    control, units = ControlUnit._meta.db_table, Unit._meta.db_table
    return (
        f"NOT EXISTS (SELECT 1 FROM {control} gc JOIN {units} gu ON gu.id = gc.unit_id "
        f"WHERE gc.campaign_id = {unit}.campaign_id AND gc.annotator_id = %s AND gc.kind = 'gold' "
        f"AND gu.item_id = {unit}.item_id)"
    )


def controls_possible_sql(campaign_column: str) -> str:
    """An SQL condition on a campaign id column: whether `control_next` can return
    anything. False means no gold units, no degraded or repeat share and no relative checks, so the
    engine skips `control_next` and its queries; read in the engine's enrolment
    query, so a campaign without quality control costs no extra round trip."""
    gold, settings = GoldUnit._meta.db_table, QualitySettings._meta.db_table
    return (
        f"(EXISTS (SELECT 1 FROM {gold} g WHERE g.campaign_id = {campaign_column}) "
        f"OR EXISTS (SELECT 1 FROM {settings} qs WHERE qs.campaign_id = {campaign_column} "
        "AND (qs.degraded_share > 0 OR qs.repeat_share > 0)) "
        # Relative attention checks are a campaign option (issue 41 part 5).
        f"OR EXISTS (SELECT 1 FROM {Campaign._meta.db_table} rc WHERE rc.id = {campaign_column} "
        "AND COALESCE((rc.options->>'relative_checks')::float, 0) > 0))"
    )


def completion_codes_on_sql(campaign_column: str) -> str:
    """An SQL condition on a campaign id column: whether the campaign gives
    completion codes. The submit request reads it with the assignment and asks
    `completion_code_at_batch_end` only then."""
    return (
        f"EXISTS (SELECT 1 FROM {QualitySettings._meta.db_table} qs WHERE qs.campaign_id = {campaign_column} "
        "AND qs.completion_codes)"
    )


def unit_aliases(*, unit: Unit) -> dict[int, dict] | None:
    """A control unit's alias outputs: {alias: {"output": the real output, "text": what is shown,
    ...}}; None for a regular unit."""
    if unit.kind == Unit.Kind.REGULAR:
        return None
    control = ControlUnit.objects.filter(unit=unit).only("aliases").first()
    if control is None:
        return None
    return {int(alias): entry for alias, entry in control.aliases.items()}


def unit_texts(*, unit: Unit) -> dict[int, str] | None:
    """Texts to show for a control unit's (alias) outputs; None for a regular unit."""
    if unit.kind == Unit.Kind.REGULAR:
        return None
    control = ControlUnit.objects.filter(unit=unit).only("aliases").first()
    if control is None:
        return None
    return {int(alias): entry["text"] for alias, entry in control.aliases.items()}
