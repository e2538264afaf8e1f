"""Planning the units of work of a campaign.

A unit is what one annotator judges on one screen. Units are planned once per
campaign, from the campaign's seed, and bulk-created, so that handing one out
later is a single locked pick (`annotations.services.assignments`):

- Likert / direct assessment and ESA: one unit per output;
- RankME: the outputs of an item in groups of `tuple_size` (3-5), groups as
  even as possible, systems mixed differently per item;
- pairwise: every pair of an item's outputs (`pair_rounds` = 0) or
  `pair_rounds` rounds of a round-robin schedule per item, rotating over the
  items so that every pair of systems is compared equally often;
- best-worst: tuples of `tuple_size` from a balanced design: within an item,
  every output appears in the same number of tuples.

Unit order is shuffled with the seed; each annotator then walks the pool in
their own order (see `assignment_next`).
"""
from __future__ import annotations

import itertools
import math
import random
from collections import defaultdict

from django.db import connection, transaction
from django.utils import timezone

from annotations.models import Campaign, Output, Unit

ANALYZE_ABOVE_UNITS = 1000


def _chunks_even(values: list, size: int, largest: int = 5) -> list[list]:
    """Split into groups of about `size` (never more than `largest` unless
    `size` is larger) whose sizes differ by at most one: 4 outputs at size 3
    make one group of 4 rather than two of 2."""
    n = len(values)
    if n == 0:
        return []
    groups = max(1, n // size, math.ceil(n / max(size, largest)))
    base, extra = divmod(n, groups)
    out, start = [], 0
    for g in range(groups):
        length = base + (1 if g < extra else 0)
        out.append(values[start : start + length])
        start += length
    return out


def round_robin_rounds(n: int) -> list[list[tuple[int, int]]]:
    """The circle method: n-1 rounds (n even; a bye is added for odd n) in
    which every index meets every other exactly once, each at most once per round."""
    players = list(range(n)) + ([None] if n % 2 else [])
    m = len(players)
    rounds = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = players[i], players[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        rounds.append(pairs)
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def balanced_tuples(values: list, size: int, rng: random.Random) -> list[list]:
    """Tuples of `size` distinct values in which every value appears equally often.

    n values, tuple size t <= n: with t dividing n, two rounds of fresh random
    permutations cut into consecutive tuples (each value twice); otherwise the
    t/gcd(n, t) windows of a cyclic order that start at multiples of t, which
    are all different and cover every value exactly t/gcd(n, t) times.
    """
    n = len(values)
    if n <= size:
        return [list(values)] if n >= 2 else []
    if n % size == 0:
        first = values[:]
        rng.shuffle(first)
        tuples = [first[i : i + size] for i in range(0, n, size)]
        seen = {frozenset(t) for t in tuples}
        for _ in range(20):
            second = values[:]
            rng.shuffle(second)
            candidate = [second[i : i + size] for i in range(0, n, size)]
            if not seen & {frozenset(t) for t in candidate}:
                break
        return tuples + candidate
    order = values[:]
    rng.shuffle(order)
    rounds = size // math.gcd(n, size)
    count = n * rounds // size
    return [[order[(j * size + m) % n] for m in range(size)] for j in range(count)]


def _plan(campaign: Campaign, outputs_by_item: dict[int, list[tuple[int, int]]], rng: random.Random):
    """Yield (item_id, [(output_id, system_id), ...]) per unit."""
    protocol = campaign.protocol
    for item_index, (item_id, outputs) in enumerate(outputs_by_item.items()):
        if protocol in Campaign.SINGLE_OUTPUT_PROTOCOLS:
            for output in outputs:
                yield item_id, [output]
        elif protocol == Campaign.Protocol.RANKME:
            shuffled = outputs[:]
            rng.shuffle(shuffled)
            for group in _chunks_even(shuffled, max(1, campaign.tuple_size)):
                yield item_id, group
        elif protocol == Campaign.Protocol.PAIRWISE:
            if len(outputs) < 2:
                continue
            if campaign.pair_rounds <= 0:
                for a, b in itertools.combinations(outputs, 2):
                    yield item_id, [a, b]
            else:
                # Outputs sorted by system so that round r pairs the same systems on every item.
                by_system = sorted(outputs, key=lambda o: o[1])
                rounds = round_robin_rounds(len(by_system))
                for r in range(min(campaign.pair_rounds, len(rounds))):
                    for i, j in rounds[(item_index * campaign.pair_rounds + r) % len(rounds)]:
                        yield item_id, [by_system[i], by_system[j]]
        else:  # best-worst
            for group in balanced_tuples(outputs, max(2, campaign.tuple_size), rng):
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
