"""Control units in each annotator's batch: degraded copies, repeats and gold units.

Where controls go: each annotator's batch (``units_per_batch`` units, counted
by their assignment sequence) gets ``round(share * batch size)`` degraded
copies and repeats, plus up to ``GOLD_PER_BATCH`` silent gold units, at slot
positions drawn from the annotator's recorded seed. A control needs a source;
when none is there yet, the control is owed and comes at the next chance. Loud
gold units (tutorials) come before anything else. The engine
(`assignment_next`) asks `control_next` first and hands out what it returns
like any other unit.

What a control's text must not give away (issue 46: comparing a unit's texts
with the outputs of the same item the annotator saw before spotted 92 % of the
controls):

- a degraded copy is made of a regular unit of an item (source) the annotator
  has been shown nothing of, so it matches no earlier text; its original may
  come to them later as a regular unit, which tells nothing at the control,
  answered by then; it is compared with the annotator's own answer to the
  original when there is one, else with the other annotators' (selectors);
- a silent gold unit goes only to an annotator who has seen nothing of its
  item, and that item never comes to them as a regular unit afterwards
  (`gold_sources_excluded_sql`, read by every pick of the engine);
- a repeat is drawn at random among the units the annotator finished at least
  ``REPEAT_MIN_GAP`` units earlier. It shows texts seen before, by definition:
  in designs where regular units show an annotator an output again (pairwise
  and tuple designs with overlapping tuples) so do they; in designs of one
  output per unit nothing else does, and a repeat can be told by memory
  (docs/quality-control.md).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, Max, OuterRef
from django.db.models.expressions import RawSQL

from annotations import protocols
from annotations.models import Annotator, Assignment, Campaign, Enrolment, Item, Output, Unit
from annotations.models.quality import ControlUnit, GoldUnit, QualitySettings
from annotations.protocols.base import document_segments
from annotations.quality.degrade import TEXT_KINDS, NotApplicable, degrade_any
from workbench.exceptions import DomainError

GOLD_PER_BATCH = 2
CONTROL_POSITION_BASE = 1_000_000_000
# A repeat copies a unit handed out at least this many units before it, never the one just judged.
REPEAT_MIN_GAP = 3
# Degraded copies: how many candidate source units are looked at (in the annotator's seeded order).
DEGRADED_CANDIDATES = 20


def _kinds_for(campaign: Campaign, configured: list[str]) -> list[str]:
    """The configured kinds, or by default every text kind plus `fact` when the dataset has data."""
    if configured:
        return list(configured)
    has_data = Item.objects.filter(dataset_id=campaign.dataset_id).exclude(data=[]).exists()
    return list(TEXT_KINDS) + (["fact"] if has_data else [])


# --- control units ------------------------------------------------------------------------


def alias_ids_allocate(n: int) -> list[int]:
    """`n` fresh ids from the output id sequence: they look like output ids and never become one."""
    table = Output._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [table, n])
        return [row[0] for row in cursor.fetchall()]


def _unit_create(*, campaign: Campaign, item_id: int, aliases: dict, systems: list[int], kind: str) -> Unit:
    outputs = sorted(int(a) for a in aliases)
    for _ in range(20):
        position = max(
            CONTROL_POSITION_BASE, (Unit.objects.filter(campaign=campaign).aggregate(m=Max("position"))["m"] or 0) + 1
        )
        try:
            with transaction.atomic():
                return Unit.objects.create(
                    campaign=campaign,
                    item_id=item_id,
                    outputs=outputs,
                    systems=systems,
                    kind=kind,
                    position=position,
                    redundancy=1,
                    n_taken=0,
                )
        except IntegrityError:
            continue  # another annotator's control took that position at the same moment
    raise DomainError("The campaign is too busy right now; please try again in a moment.")


def relative_share(campaign: Campaign) -> float:
    """The campaign's share of relative attention checks (0 where its protocol offers none): no query."""
    protocol = protocols.of(campaign)
    return float(protocol.option(campaign, "relative_checks") or 0) if protocol.relative_checks else 0.0


def _batch_plan(
    *, campaign: Campaign, qs: QualitySettings, enrolment: Enrolment, batch: int, silent_gold_left: int
) -> list[tuple[int, str]]:
    """(slot in the batch, control kind) for one annotator's batch, drawn from their seed."""
    size = max(1, campaign.units_per_batch)
    kinds = (
        ["degraded"] * round(qs.degraded_share * size)
        + ["repeat"] * round(qs.repeat_share * size)
        + ["gold"] * min(silent_gold_left, GOLD_PER_BATCH)
    )
    # Relative checks are planned from their own seed so that adding them leaves the other
    # controls' slots of a batch where they were.
    relative = round(relative_share(campaign) * size)
    kinds = kinds[: max(0, size - 1)]  # at least one regular unit per batch
    rng = random.Random(f"controls:{enrolment.seed}:{batch}")
    # Not the first slot of the first batch: a degraded copy or repeat needs a finished unit first.
    slots = sorted(rng.sample(range(1 if batch == 0 else 0, size), min(len(kinds), size - (batch == 0))))
    rng.shuffle(kinds)
    plan = list(zip(slots, kinds))
    if relative:
        taken = {slot for slot, _ in plan}
        free = [slot for slot in range(1 if batch == 0 else 0, size) if slot not in taken]
        relative = min(relative, size - 1 - len(plan), len(free))  # still at least one regular unit per batch
        rel_rng = random.Random(f"relative:{enrolment.seed}:{batch}")
        plan += [(slot, "relative") for slot in rel_rng.sample(free, max(0, relative))]
        plan.sort()
    return plan


def _sources(*, campaign: Campaign, annotator: Annotator, kind: str, before_seq: int | None = None) -> list[Unit]:
    """Regular units the annotator finished that no control of `kind` copied yet for them (with
    `before_seq`: handed out to them before that sequence number)."""
    used = ControlUnit.objects.filter(campaign=campaign, annotator=annotator, kind=kind).values("source_id")
    mine = Assignment.objects.filter(unit_id=OuterRef("pk"), annotator=annotator, status=Assignment.Status.DONE)
    if before_seq is not None:
        mine = mine.filter(seq__lt=before_seq)
    return list(
        Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR)
        .filter(Exists(mine))
        .exclude(pk__in=used)
        .order_by("id")
    )


def _items_seen(*, campaign: Campaign, annotator: Annotator):
    """The items of every unit handed to the annotator in the campaign (a subquery)."""
    return Assignment.objects.filter(campaign=campaign, annotator=annotator).values("item_id")


def _unseen_sources(*, campaign: Campaign, annotator: Annotator, seed: int) -> list[Unit]:
    """Up to DEGRADED_CANDIDATES regular units of items the annotator has been shown nothing of, in an
    order drawn from `seed` over their planned positions (ids differ from run to run): first those another annotator finished (their answers are the original's
    to compare with), then any."""
    units = (
        Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR)
        .exclude(item_id__in=_items_seen(campaign=campaign, annotator=annotator))
        .annotate(order=RawSQL(f"hashint8extended({Unit._meta.db_table}.position, %s)", [seed]))
    )
    judged = Exists(Assignment.objects.filter(unit_id=OuterRef("pk"), status=Assignment.Status.DONE))
    found = list(units.filter(judged).order_by("order", "id")[:DEGRADED_CANDIDATES])
    if not found:
        found = list(units.order_by("order", "id")[:DEGRADED_CANDIDATES])
    return found


def _degraded_control(
    *, campaign: Campaign, annotator: Annotator, qs: QualitySettings, rng: random.Random, batch: int
) -> Unit | None:
    kinds = _kinds_for(campaign, qs.degrade_kinds)
    sources = _unseen_sources(campaign=campaign, annotator=annotator, seed=rng.randrange(2**62))
    for source in sources:
        texts = dict(Output.objects.filter(pk__in=source.outputs).values_list("id", "text"))
        data = Item.objects.filter(pk=source.item_id).values_list("data", flat=True).first()
        victims = list(source.outputs)
        rng.shuffle(victims)
        for victim in victims:
            try:
                damage = degrade_any(
                    texts[victim], kinds=kinds, strength=qs.degrade_strength, seed=rng.randrange(2**31), data=data
                )
            except NotApplicable:
                continue
            system_of = dict(zip(source.outputs, source.systems))
            shown = [
                (o, damage.text, damage.as_json()) if damaged else (o, texts[o], None)
                for o, damaged in protocols.of(campaign).degraded_shown(list(source.outputs), victim)
            ]
            return _control_create(
                campaign=campaign,
                annotator=annotator,
                kind=ControlUnit.Kind.DEGRADED,
                source=source,
                item_id=source.item_id,
                shown=shown,
                systems=[system_of[o] for o, _, _ in shown],
                batch=batch,
            )
    return None


def _relative_control(*, campaign: Campaign, annotator: Annotator, rng: random.Random, batch: int) -> Unit | None:
    """A relative attention check (issue 41 part 5, WMT 2026): a regular screen of an item the
    annotator has been shown nothing of, one of its outputs replaced by a degraded copy of another
    output of the same source. The copy is made of an output the screen does not show when the
    campaign has one for that source (no near-identical pair of texts on the screen, and every
    system once, as on a regular screen), else of one of the screen's own (pairwise and tuples of
    every system). Nothing marks it: the outputs keep their systems and the engine counterbalances
    their order as for any screen."""
    protocol = protocols.of(campaign)
    kinds = list(protocol.option(campaign, "relative_damage") or ["shuffle5"])
    for source in _unseen_sources(campaign=campaign, annotator=annotator, seed=rng.randrange(2**62)):
        outputs = list(source.outputs)
        if len(outputs) < 2:
            continue
        if len(document_segments(list(source.systems))) > 1:
            unit = _relative_document(
                campaign=campaign, annotator=annotator, source=source, kinds=kinds, rng=rng, batch=batch
            )
            if unit is not None:
                return unit
            continue
        # The campaign's outputs of this source: those of its regular units (its systems only).
        pool = {
            o
            for unit_outputs in Unit.objects.filter(
                campaign=campaign, item_id=source.item_id, kind=Unit.Kind.REGULAR
            ).values_list("outputs", flat=True)
            for o in unit_outputs
        }
        found = Output.objects.filter(pk__in=pool | set(outputs)).values_list("id", "text", "system_id")
        texts = {pk: text for pk, text, _ in found}
        system_of = {pk: system for pk, _, system in found}
        data = Item.objects.filter(pk=source.item_id).values_list("data", flat=True).first()
        off_screen = sorted(pool - set(outputs))
        on_screen = list(outputs)
        rng.shuffle(off_screen)
        rng.shuffle(on_screen)
        for victim in off_screen + on_screen:
            try:
                damage = degrade_any(texts[victim], kinds=kinds, seed=rng.randrange(2**31), data=data)
            except NotApplicable:
                continue
            replaced = rng.choice([o for o in outputs if o != victim])
            shown = [(victim, damage.text, damage.as_json()) if o == replaced else (o, texts[o], None) for o in outputs]
            return _control_create(
                campaign=campaign,
                annotator=annotator,
                kind=ControlUnit.Kind.RELATIVE,
                source=source,
                item_id=source.item_id,
                shown=shown,
                systems=[system_of[o] for o, _, _ in shown],
                batch=batch,
            )
    return None


def _relative_document(
    *, campaign: Campaign, annotator: Annotator, source: Unit, kinds: list[str], rng: random.Random, batch: int
) -> Unit | None:
    """A relative attention check made of a document unit (context=document, several systems per
    screen): the same document part, the same systems in the same places, one system's copy of the
    document degraded. In every segment where the damage applies, that system's output is replaced
    by a degraded copy of another output of the segment: of a system the screen does not show when
    the campaign has one (the same one for the whole document), else of another system on the screen;
    the other segments keep its clean output. At least one segment is degraded, else None. The check
    passes when, in every degraded segment, the copy scores below every clean output of that segment
    (annotations.quality.services.answers)."""
    outputs, systems = list(source.outputs), list(source.systems)
    starts = document_segments(systems) + [len(outputs)]
    segments = [list(zip(outputs[a:b], systems[a:b])) for a, b in zip(starts, starts[1:])]
    on_screen = sorted(set(systems))
    if len(on_screen) < 2:
        return None
    found = list(Output.objects.filter(pk__in=outputs).values_list("id", "item_id", "text"))
    item_of = {pk: item for pk, item, _ in found}
    texts = {pk: text for pk, _, text in found}
    items = sorted({item_of[o] for o in outputs if o in item_of})
    campaign_systems = set(campaign.systems.values_list("id", flat=True))
    others = Output.objects.filter(item_id__in=items)
    if campaign_systems:
        others = others.filter(system_id__in=campaign_systems)
    by_item: dict[int, dict[int, tuple[int, str]]] = {}
    for pk, item_id, system_id, text in others.values_list("id", "item_id", "system_id", "text"):
        by_item.setdefault(item_id, {})[system_id] = (pk, text)
    data_of = dict(Item.objects.filter(pk__in=items).values_list("id", "data"))
    off_screen = sorted({s for found in by_item.values() for s in found} - set(on_screen))
    replaced = rng.choice(on_screen)
    donors = [rng.choice(off_screen)] if off_screen else []
    donors += rng.sample([s for s in on_screen if s != replaced], len(on_screen) - 1)
    shown, damaged = [], 0
    for segment in segments:
        item_id = item_of.get(segment[0][0])
        for output_id, system_id in segment:
            entry = (output_id, texts.get(output_id, ""), None)
            if system_id == replaced and item_id is not None:
                for donor in donors:
                    victim = by_item.get(item_id, {}).get(donor)
                    if victim is None:
                        continue
                    try:
                        damage = degrade_any(
                            victim[1], kinds=kinds, seed=rng.randrange(2**31), data=data_of.get(item_id)
                        )
                    except NotApplicable:
                        continue
                    entry = (victim[0], damage.text, damage.as_json())
                    damaged += 1
                    break
            shown.append(entry)
    if not damaged:
        return None
    return _control_create(
        campaign=campaign,
        annotator=annotator,
        kind=ControlUnit.Kind.RELATIVE,
        source=source,
        item_id=source.item_id,
        shown=shown,
        # The systems as planned: the engine finds the segments and orders the systems by them.
        systems=systems,
        batch=batch,
    )


def _repeat_control(
    *, campaign: Campaign, annotator: Annotator, rng: random.Random, batch: int, seq: int
) -> Unit | None:
    sources = _sources(
        campaign=campaign, annotator=annotator, kind=ControlUnit.Kind.REPEAT, before_seq=seq - REPEAT_MIN_GAP + 1
    )
    if not sources:
        return None
    source = rng.choice(sources)
    texts = dict(Output.objects.filter(pk__in=source.outputs).values_list("id", "text"))
    return _control_create(
        campaign=campaign,
        annotator=annotator,
        kind=ControlUnit.Kind.REPEAT,
        source=source,
        item_id=source.item_id,
        shown=[(o, texts[o], None) for o in source.outputs],
        systems=list(source.systems),
        batch=batch,
    )


def _gold_control(*, campaign: Campaign, annotator: Annotator, gold_unit: GoldUnit, batch: int) -> Unit:
    # In the gold unit's order: a gold document's outputs segment by segment (context=document).
    rank = {o: k for k, o in enumerate(gold_unit.outputs)}
    outputs = sorted(
        Output.objects.filter(pk__in=gold_unit.outputs).values_list("id", "text", "system_id"),
        key=lambda row: rank[row[0]],
    )
    return _control_create(
        campaign=campaign,
        annotator=annotator,
        kind=ControlUnit.Kind.GOLD,
        gold=gold_unit,
        item_id=gold_unit.item_id,
        shown=[(o, text, None) for o, text, _ in outputs],
        systems=[s for _, _, s in outputs],
        batch=batch,
    )


def _control_create(*, campaign, annotator, kind, item_id, shown, systems, batch, source=None, gold=None) -> Unit:
    """shown: [(real output id, text, degradation or None)] in the unit's order."""
    # Ascending, so that Unit.outputs (sorted) keeps the order shown: a document unit's segments.
    alias_ids = sorted(alias_ids_allocate(len(shown)))
    aliases = {}
    for alias, (real, text, damage) in zip(alias_ids, shown):
        aliases[str(alias)] = {"output": real, "text": text, **({"degraded": damage} if damage else {})}
    # Unit.outputs is sorted by id; keep the systems aligned with it.
    system_of_alias = dict(zip(alias_ids, systems))
    unit = _unit_create(
        campaign=campaign,
        item_id=item_id,
        aliases=aliases,
        systems=[system_of_alias[a] for a in sorted(alias_ids)],
        kind=kind,
    )
    ControlUnit.objects.create(
        unit=unit,
        campaign=campaign,
        annotator=annotator,
        kind=kind,
        source=source,
        gold=gold,
        aliases=aliases,
        batch=batch,
    )
    return unit


def control_next(*, campaign: Campaign, annotator: Annotator, enrolment: Enrolment) -> Unit | None:
    """The control unit this annotator gets next, created now, or None for a regular unit.

    Called by the engine under the annotator's enrolment lock, so one
    annotator's controls are planned one at a time.
    """
    # One query for campaigns that use no quality control (most of the engine's requests).
    qs = (
        QualitySettings.objects.filter(campaign=campaign)
        .annotate(gold=Exists(GoldUnit.objects.filter(campaign=campaign)))
        .first()
    )
    relative = relative_share(campaign)
    if qs is None and not relative and not GoldUnit.objects.filter(campaign=campaign).exists():
        return None
    if qs is not None and not qs.gold and not (qs.degraded_share or qs.repeat_share or relative):
        return None
    seen_gold = set(
        ControlUnit.objects.filter(campaign=campaign, annotator=annotator, kind=ControlUnit.Kind.GOLD).values_list(
            "gold_id", flat=True
        )
    )
    golds = list(GoldUnit.objects.filter(campaign=campaign).exclude(pk__in=seen_gold).order_by("position", "id"))
    size = max(1, campaign.units_per_batch)
    seq = enrolment.n_assigned
    batch = seq // size
    loud = [g for g in golds if g.mode == GoldUnit.Mode.LOUD]
    if loud:  # the tutorial comes first
        return _gold_control(campaign=campaign, annotator=annotator, gold_unit=loud[0], batch=batch)
    silent = [g for g in golds if g.mode == GoldUnit.Mode.SILENT]
    if qs is None and not silent and not relative:
        return None
    qs = qs or QualitySettings(campaign=campaign)
    made = Counter(
        ControlUnit.objects.filter(campaign=campaign, annotator=annotator, batch=batch)
        .exclude(gold__mode=GoldUnit.Mode.LOUD)
        .values_list("kind", flat=True)
    )
    # The plan must not change within a batch: count the silent gold units as they were when it began.
    plan = _batch_plan(
        campaign=campaign, qs=qs, enrolment=enrolment, batch=batch, silent_gold_left=len(silent) + made["gold"]
    )
    due = Counter(kind for slot, kind in plan if slot <= seq % size)
    rng = random.Random(f"control:{enrolment.seed}:{seq}")
    for kind in ("gold", "degraded", "relative", "repeat"):
        if due[kind] <= made[kind]:
            continue
        if kind == "gold" and silent:
            # Only a gold unit of an item the annotator has seen nothing of: its texts match nothing earlier.
            seen = set(_items_seen(campaign=campaign, annotator=annotator).values_list("item_id", flat=True))
            # Every item a gold unit shows (a gold document's every segment, context=document).
            shows = defaultdict(set)
            for output_id, item_id in Output.objects.filter(pk__in=[o for g in silent for o in g.outputs]).values_list(
                "id", "item_id"
            ):
                shows[output_id].add(item_id)
            fresh = next(
                (g for g in silent if not ({g.item_id} | {i for o in g.outputs for i in shows[o]}) & seen), None
            )
            if fresh is not None:
                return _gold_control(campaign=campaign, annotator=annotator, gold_unit=fresh, batch=batch)
        if kind == "degraded":
            unit = _degraded_control(campaign=campaign, annotator=annotator, qs=qs, rng=rng, batch=batch)
            if unit is not None:
                return unit
        if kind == "relative":
            unit = _relative_control(campaign=campaign, annotator=annotator, rng=rng, batch=batch)
            if unit is not None:
                return unit
        if kind == "repeat":
            unit = _repeat_control(campaign=campaign, annotator=annotator, rng=rng, batch=batch, seq=seq)
            if unit is not None:
                return unit
    return None
