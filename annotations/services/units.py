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

import logging
import random
from collections import defaultdict
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.db.models import Count
from django.utils import timezone

from annotations import protocols
from annotations.models import Campaign, Output, Unit
from annotations.protocols.bws import balanced_tuples  # noqa: F401  (planning helpers, re-exported)
from annotations.protocols.common_options import CONTEXT_DOCUMENT
from annotations.protocols.pairwise import round_robin_rounds  # noqa: F401
from workbench.broker import celery_app
from workbench.exceptions import DomainError

ANALYZE_ABOVE_UNITS = 1000
# Units per INSERT batch (and per progress step).
WRITE_BATCH = 10_000
PLAN_QUEUED, PLAN_RUNNING, PLAN_FAILED = "queued", "running", "failed"

logger = logging.getLogger(__name__)
# Sent by name (`annotations.tasks` registers it): services never import the tasks, which import them.
PLAN_TASK = "annotations.campaign_plan"


def _plan(campaign: Campaign, outputs_by_item: dict[int, list[tuple[int, int]]], rng: random.Random):
    """Yield (item_id, [(output_id, system_id), ...]) per unit: the protocol decides the groups."""
    protocol = protocols.of(campaign)
    for item_index, (item_id, outputs) in enumerate(outputs_by_item.items()):
        for group in protocol.plan_item(campaign, item_index, outputs, rng):
            yield item_id, group


class PlanningInProgress(DomainError):
    """The campaign's units are being planned by a worker (or that failed): nothing to hand out yet."""


def plan_limits() -> tuple[int, int]:
    """(most units a campaign may have, size above which a worker plans it)."""
    return (settings.WORKBENCH_CAMPAIGN_MAX_UNITS, settings.WORKBENCH_CAMPAIGN_PLAN_ASYNC_UNITS)


def campaign_units_count(*, campaign: Campaign, system_ids: list[int] | None = None) -> int:
    """How many units planning would make, from each item's number of outputs (one grouped
    query; no unit is made). `system_ids`: the campaign's systems before they are saved."""
    if system_ids is None:
        system_ids = list(campaign.systems.values_list("id", flat=True)) if campaign.pk else []
    outputs = Output.objects.filter(item__dataset_id=campaign.dataset_id)
    if system_ids:
        outputs = outputs.filter(system_id__in=system_ids)
    protocol = protocols.of(campaign)
    if protocol.option(campaign, "context") == CONTEXT_DOCUMENT:
        # Document units depend on the documents' lengths: counted by planning them (no unit is made).
        rng = random.Random(campaign.seed)
        return sum(1 for doc in _documents(campaign, outputs) for _ in protocol.plan_document(campaign, doc, rng))
    sizes = outputs.values("item_id").annotate(n=Count("id")).values_list("n", flat=True).order_by()
    counts: dict[int, int] = defaultdict(int)
    for n in sizes:
        counts[n] += 1
    return sum(items * protocol.units_of_item(campaign, n) for n, items in counts.items())


def units_cap_check(n_units: int) -> None:
    cap, _ = plan_limits()
    if n_units > cap:
        raise ValidationError(
            f"This campaign would have {n_units:,} units; at most {cap:,} are allowed "
            "(WORKBENCH_CAMPAIGN_MAX_UNITS). Choose fewer systems or items, or for pairwise campaigns a few "
            "balanced pair rounds per item instead of every pair."
        )


def _documents(campaign: Campaign, outputs) -> list[list[tuple[int, list[tuple[int, int]]]]]:
    """The dataset's documents (context=document), each its segments in document order:
    [(item id, [(output id, system id), ...]), ...]. An item of no document is one of its own."""
    by_item: dict[int, list[tuple[int, int]]] = defaultdict(list)
    docs: dict[object, list[tuple]] = {}
    rows = outputs.order_by("item__position", "item_id", "id").values_list(
        "id", "item_id", "system_id", "item__doc", "item__doc_pos", "item__position"
    )
    for output_id, item_id, system_id, doc, doc_pos, position in rows:
        if item_id not in by_item:
            key = doc if doc else ("", item_id)
            docs.setdefault(key, []).append((doc_pos if doc_pos is not None else position, position, item_id))
        by_item[item_id].append((output_id, system_id))
    return [[(item_id, by_item[item_id]) for *_, item_id in sorted(segments)] for segments in docs.values()]


def _planned_units(campaign: Campaign) -> list[Unit]:
    systems = list(campaign.systems.values_list("id", flat=True))
    outputs = Output.objects.filter(item__dataset_id=campaign.dataset_id)
    if systems:
        outputs = outputs.filter(system_id__in=systems)
    rng = random.Random(campaign.seed)
    protocol = protocols.of(campaign)
    documents = protocol.option(campaign, "context") == CONTEXT_DOCUMENT
    if documents:
        # Whole documents (issue 41): outputs listed segment by segment, kept in that order.
        planned = [unit for doc in _documents(campaign, outputs) for unit in protocol.plan_document(campaign, doc, rng)]
    else:
        outputs_by_item: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for output_id, item_id, system_id in outputs.order_by("item__position", "item_id", "id").values_list(
            "id", "item_id", "system_id"
        ):
            outputs_by_item[item_id].append((output_id, system_id))
        planned = list(_plan(campaign, outputs_by_item, rng))
    positions = list(range(len(planned)))
    rng.shuffle(positions)
    units = []
    for position, (item_id, group) in zip(positions, planned):
        group = group if documents else sorted(group)
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
    return units


def _analyze(n_units: int) -> None:
    if n_units >= ANALYZE_ABOVE_UNITS:
        # Fresh statistics before the first annotators arrive: with the table's old
        # ones the planner takes a many-unit campaign for a tiny one and picks a
        # plan for `assignment_next` that is ten times slower, until autovacuum
        # gets round to it.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Unit._meta.db_table}")


@transaction.atomic
def campaign_units_plan(*, campaign: Campaign, progress: Callable[[int, int], None] | None = None) -> int:
    """Plan and bulk-create the campaign's units (once; later calls do nothing), in this process.

    Takes the campaign's row lock, so two first requests cannot both plan.
    Returns the number of units created by this call. `progress(done, total)` is called
    after each batch written (the command's progress bar).
    """
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.planned_at is not None:
        return 0
    units = _planned_units(campaign)
    for start in range(0, len(units), WRITE_BATCH):
        Unit.objects.bulk_create(units[start : start + WRITE_BATCH], batch_size=2000)
        if progress is not None:
            progress(min(start + WRITE_BATCH, len(units)), len(units))
    _analyze(len(units))
    Campaign.objects.filter(pk=campaign.pk).update(
        planned_at=timezone.now(), n_units=len(units), plan_status="", plan_done=len(units), plan_total=len(units)
    )
    return len(units)


def campaign_units_plan_queue(*, campaign: Campaign, total: int) -> None:
    """Leave the planning to a worker (when the transaction commits); the campaign's page
    shows its progress. A broker that cannot be reached fails the planning with a message."""
    Campaign.objects.filter(pk=campaign.pk).update(
        plan_status=PLAN_QUEUED, plan_done=0, plan_total=total, plan_error=""
    )

    def send() -> None:
        try:
            celery_app.send_task(PLAN_TASK, args=[campaign.pk])
        except Exception as exc:  # noqa: BLE001 - any broker failure: say so on the campaign
            logger.warning("campaign %s: planning could not be queued: %s: %s", campaign.pk, type(exc).__name__, exc)
            Campaign.objects.filter(pk=campaign.pk, planned_at__isnull=True).update(
                plan_status=PLAN_FAILED,
                plan_error="the planning could not be handed to a worker (the task queue "
                "is unreachable); plan it with `manage.py plan_campaign`.",
            )

    transaction.on_commit(send)


def campaign_units_plan_worker(*, campaign_id: int) -> int:
    """The worker's side: plan in batches, each committed with the count so far, so the page
    shows progress. A re-delivered task (its worker died) starts again from nothing: units
    of an unfinished plan are deleted first, and no unit is handed out before planned_at."""
    claimed = Campaign.objects.filter(
        pk=campaign_id, planned_at__isnull=True, plan_status__in=[PLAN_QUEUED, PLAN_RUNNING]
    ).update(plan_status=PLAN_RUNNING)
    if not claimed:
        return 0
    campaign = Campaign.objects.get(pk=campaign_id)
    try:
        Unit.objects.filter(campaign_id=campaign_id).delete()
        units = _planned_units(campaign)
        Campaign.objects.filter(pk=campaign_id).update(plan_total=len(units), plan_done=0)
        for start in range(0, len(units), WRITE_BATCH):
            with transaction.atomic():
                Unit.objects.bulk_create(units[start : start + WRITE_BATCH], batch_size=2000)
                Campaign.objects.filter(pk=campaign_id).update(plan_done=min(start + WRITE_BATCH, len(units)))
        _analyze(len(units))
        Campaign.objects.filter(pk=campaign_id).update(
            planned_at=timezone.now(), n_units=len(units), plan_status="", plan_done=len(units)
        )
    except DatabaseError:
        raise  # transient: the task is re-delivered and starts again
    except Exception as exc:  # noqa: BLE001 - say so on the campaign; the log keeps the details
        logger.exception("campaign %s: planning failed", campaign_id)
        Campaign.objects.filter(pk=campaign_id).update(
            plan_status=PLAN_FAILED, plan_error=f"planning failed: {type(exc).__name__}"
        )
        return 0
    return len(units)


def campaign_units_ensure(*, campaign: Campaign) -> None:
    """Plan the units if that has not happened yet (campaigns made before units existed);
    a campaign a worker is planning has none to hand out yet (PlanningInProgress)."""
    if campaign.planned_at is None:
        status, done, total, error = Campaign.objects.values_list(
            "plan_status", "plan_done", "plan_total", "plan_error"
        ).get(pk=campaign.pk)
        if status in (PLAN_QUEUED, PLAN_RUNNING):
            raise PlanningInProgress(
                f"This campaign's units are being planned ({done:,} of {total or 0:,}); try again in a minute."
            )
        if status == PLAN_FAILED:
            raise PlanningInProgress(f"This campaign's units could not be planned: {error}")
        campaign_units_plan(campaign=campaign)
        campaign.planned_at, campaign.n_units = Campaign.objects.values_list("planned_at", "n_units").get(
            pk=campaign.pk
        )
