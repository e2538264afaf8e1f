"""Planning the units of work of a campaign.

A unit is what one annotator judges on one screen. Units are planned once per
campaign, from the campaign's seed, and bulk-created, so that handing one out
later is a single locked pick (`annotations.services.assignments`):

each protocol's `plan_item` (annotations.protocols) says what the units of one
item are: one per output (Likert, ESA), groups of 3-5 (RankME), pairs from a
round-robin schedule (pairwise), balanced tuples (best-worst).

Unit order is shuffled with the seed; each annotator then walks the pool in
their own order (see `assignment_next`).
"""
from __future__ import annotations

import random
from collections import defaultdict

from django.db import connection, transaction
from django.utils import timezone

from annotations import protocols
from annotations.models import Campaign, Output, Unit
from annotations.protocols.bws import balanced_tuples  # noqa: F401  (planning helpers, re-exported)
from annotations.protocols.pairwise import round_robin_rounds  # noqa: F401

ANALYZE_ABOVE_UNITS = 1000


def _plan(campaign: Campaign, outputs_by_item: dict[int, list[tuple[int, int]]], rng: random.Random):
    """Yield (item_id, [(output_id, system_id), ...]) per unit: the protocol decides the groups."""
    protocol = protocols.of(campaign)
    for item_index, (item_id, outputs) in enumerate(outputs_by_item.items()):
        for group in protocol.plan_item(campaign, item_index, outputs, rng):
            yield item_id, group


@transaction.atomic
def campaign_units_plan(*, campaign: Campaign) -> int:
    """Plan and bulk-create the campaign's units (once; later calls do nothing).

    Takes the campaign's row lock, so two first requests cannot both plan.
    Returns the number of units created by this call.
    """
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.planned_at is not None:
        return 0
    systems = list(campaign.systems.values_list("id", flat=True))
    outputs = Output.objects.filter(item__dataset_id=campaign.dataset_id)
    if systems:
        outputs = outputs.filter(system_id__in=systems)
    outputs_by_item: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for output_id, item_id, system_id in outputs.order_by("item__position", "item_id", "id").values_list(
        "id", "item_id", "system_id"
    ):
        outputs_by_item[item_id].append((output_id, system_id))

    rng = random.Random(campaign.seed)
    planned = list(_plan(campaign, outputs_by_item, rng))
    positions = list(range(len(planned)))
    rng.shuffle(positions)
    units = []
    for position, (item_id, group) in zip(positions, planned):
        group = sorted(group)
        units.append(
            Unit(
                campaign=campaign,
                item_id=item_id,
                outputs=[o for o, _ in group],
                systems=[s for _, s in group],
                position=position,
                redundancy=campaign.redundancy,
            )
        )
    Unit.objects.bulk_create(units, batch_size=2000)
    if len(units) >= ANALYZE_ABOVE_UNITS:
        # Fresh statistics before the first annotators arrive: with the table's old
        # ones the planner takes a many-unit campaign for a tiny one and picks a
        # plan for `assignment_next` that is ten times slower, until autovacuum
        # gets round to it.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Unit._meta.db_table}")
    Campaign.objects.filter(pk=campaign.pk).update(planned_at=timezone.now(), n_units=len(units))
    return len(units)


def campaign_units_ensure(*, campaign: Campaign) -> None:
    """Plan the units if that has not happened yet (campaigns made before units existed)."""
    if campaign.planned_at is None:
        campaign_units_plan(campaign=campaign)
        campaign.planned_at, campaign.n_units = Campaign.objects.values_list("planned_at", "n_units").get(pk=campaign.pk)
