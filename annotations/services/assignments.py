"""The assignment engine: which unit an annotator judges next, in which order
the outputs are shown, and what happens to abandoned work.

Invariants, enforced by design on PostgreSQL rather than by timing:

- A unit is handed to at most k = `redundancy` annotators at a time: the pick
  locks the unit row (`FOR UPDATE SKIP LOCKED`, so concurrent annotators take
  different units instead of queueing) and raises its `n_taken` counter, which
  a check constraint keeps <= k. A unit is complete when k assignments are done.
- Nobody gets a unit twice: unique (unit, annotator), whatever the status.
- One annotator's requests in a campaign run one at a time: each locks the
  annotator's `Enrolment` row first (a double click cannot take two units).
- Lock order is always enrolment -> assignment -> unit, so no cycle can form.

Order: each annotator walks the campaign's units in their own order, a keyed
permutation of the units' planned positions with the seed recorded on their
enrolment (`annotations.services.walk`); the enrolment keeps their step. Units
full, held by a request in flight or already theirs when they reach them are
passed; once the next WALK_WINDOWS of their walk hold nothing for them (the
campaign nearly complete, or their walk at its end), the units left come in the
order of a hash of the unit id with the same seed. Output positions are counterbalanced
per annotator: among all orders of a unit's outputs, the one whose systems were
least often shown in those positions to this annotator (ties broken by the
recorded seed), so each system appears about equally often in each position.

Allocation (the campaign's `allocation`, annotations.allocation): the walk above is the `spread`
policy. `overlap-first` (the default) and `adaptive` hand out first the started units (some slot
taken, fewer than k) in the campaign's planned order, then fresh units in that order, each read from
its own partial index (`_overlap_sql`): units reach k one after the other instead of all at the end.
`adaptive` opens only fresh units still `wanted` (annotations.allocation.services closes those whose
system pairs are decided); started units always go on to k, so every judged unit keeps exactly k
annotators. A campaign a researcher stopped hands out nothing new.

Abandoned work: a pending assignment older than the campaign's timeout expires
when anyone next asks for work; its unit goes back to the pool and the
judgements already sent for it are marked `abandoned` (kept, never counted).
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import secrets
import time
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotations import rows
from annotations.allocation.services import allocation_check
from annotations.models import (
    Annotator,
    Assignment,
    BestWorstJudgement,
    Campaign,
    Enrolment,
    Item,
    JudgementBase,
    Output,
    PairwiseJudgement,
    RatingJudgement,
    SpanJudgement,
    Unit,
)
from annotations.protocols.base import document_segments
from annotations.quality.services import control_next
from annotations.selectors.batches import batch_from, batch_sql
from annotations.selectors.controls import controls_possible_sql, gold_sources_excluded_sql
from annotations.services.handout_clock import handed_out
from annotations.services.units import campaign_units_ensure
from annotations.services.walk import walk_positions
from annotations.services.waves import wave_enrolment_check
from annotations.timing import controls_in_play

JUDGEMENT_MODELS = (RatingJudgement, PairwiseJudgement, BestWorstJudgement, SpanJudgement)
# How many times a pick retries after losing a unit to a concurrent request.
MAX_PICK_ROUNDS = 100
# Timed-out assignments are looked for at most this often per campaign and
# process (and always before answering "nothing left"): timeouts are minutes,
# and the UPDATE costs three round trips on the busiest request.
EXPIRE_EVERY_S = 5.0
_last_expiry: dict[int, float] = {}


def retry_on_deadlock(fn):
    """Run a top-level transaction again (up to 3 times) if PostgreSQL chose it
    as the victim of a deadlock or a serialization failure; the engine's lock
    order makes that rare, this makes it harmless. Inside an outer
    transaction nothing can be retried, so the error goes up."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        for attempt in range(3):
            if connection.in_atomic_block:
                return fn(*args, **kwargs)
            try:
                return fn(*args, **kwargs)
            except OperationalError as exc:
                code = getattr(getattr(exc, "__cause__", None), "sqlstate", None)
                if code not in ("40P01", "40001") or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    return wrapper


def _enrolment_select(*, extra: str = "") -> str:
    return (
        f"SELECT {rows.columns(Enrolment, 'e')}{extra} FROM {rows.table(Enrolment)} e "
        "WHERE e.campaign_id = %s AND e.annotator_id = %s FOR UPDATE OF e"
    )


def enrolment_lock(*, campaign: Campaign, annotator: Annotator) -> Enrolment:
    """The annotator's enrolment in the campaign, created if new, row-locked.

    In the same query (one round trip on the busiest request): `pending_id`,
    the annotator's oldest pending assignment in the campaign, and
    `qc_possible`, whether quality control may place a control unit now.
    """
    sql = _enrolment_select(
        extra=(
            f", (SELECT a.id FROM {rows.table(Assignment)} a WHERE a.campaign_id = e.campaign_id "
            f"AND a.annotator_id = e.annotator_id AND a.status = '{Assignment.Status.PENDING.value}' "
            f"ORDER BY a.seq, a.id LIMIT 1), {controls_possible_sql('e.campaign_id')}"
        )
    )
    for attempt in range(2):
        with rows.cursor() as cursor:
            cursor.execute(sql, [campaign.pk, annotator.pk])
            row = cursor.fetchone()
        if row is not None:
            enrolment = rows.from_row(Enrolment, row)
            enrolment.pending_id, enrolment.qc_possible = row[-2:]
            controls_in_play(enrolment.qc_possible)  # answers in such campaigns are held to a floor
            return enrolment
        wave_enrolment_check(campaign=campaign, annotator=annotator)  # second waves: other annotators only
        Enrolment.objects.bulk_create(
            [Enrolment(campaign=campaign, annotator=annotator, seed=secrets.randbits(62))], ignore_conflicts=True
        )
    raise Enrolment.DoesNotExist()


def _expires_at(campaign: Campaign, now=None):
    return (now or timezone.now()) + timedelta(minutes=campaign.assignment_timeout_minutes)


# The most milliseconds a time field holds (PositiveIntegerField).
MAX_TIME_MS = 2**31 - 1
# `server_time_ms` plus the open stretch since `active_since` up to a time (the parameter), counted up
# to the deadline at most; SQL for the statement that resumes a pending unit (Python: assignment_time_ms).
_RESUME_SQL = (
    "server_time_ms = LEAST(a.server_time_ms + COALESCE(GREATEST(0, floor(extract(epoch FROM "
    f"(LEAST(%s::timestamptz, a.expires_at) - a.active_since)) * 1000))::bigint, 0), {MAX_TIME_MS})"
)


def _units_free(unit_counts: dict[int, int]) -> None:
    """Give slots back to units, in id order (a fixed lock order)."""
    with rows.cursor() as cursor:
        for unit_id in sorted(unit_counts):
            cursor.execute(
                f"UPDATE {Unit._meta.db_table} SET n_taken = n_taken - %s WHERE id = %s",
                [unit_counts[unit_id], unit_id],
            )


def _judgements_mark(assignment_ids: list[int], status: str) -> None:
    for model in JUDGEMENT_MODELS:
        # updated_at too: the cached figures and progress follow the newest change (selectors.figures_cache.stamp).
        model.objects.filter(assignment_id__in=assignment_ids).exclude(status=status).update(
            status=status, updated_at=timezone.now()
        )


@retry_on_deadlock
@transaction.atomic(savepoint=False)
def assignments_expire(*, campaign: Campaign) -> int:
    """Expire the campaign's pending assignments past their deadline; returns how many.

    A conditional UPDATE: concurrent callers each expire different rows, and a
    row being submitted right now is waited for and then left alone.
    """
    with rows.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Assignment._meta.db_table} SET status = %s, updated_at = now() "
            "WHERE campaign_id = %s AND status = %s AND expires_at < now() RETURNING id, unit_id",
            [Assignment.Status.EXPIRED, campaign.pk, Assignment.Status.PENDING],
        )
        expired = cursor.fetchall()
    if not expired:
        return 0
    counts: dict[int, int] = {}
    for _, unit_id in expired:
        if unit_id is not None:
            counts[unit_id] = counts.get(unit_id, 0) + 1
    _units_free(counts)
    _judgements_mark([assignment_id for assignment_id, _ in expired], JudgementBase.Status.ABANDONED)
    return len(expired)


# How many of the annotator's next units (in their order) the fast pick tries
# to lock: PostgreSQL keeps only these in its sort (a bounded heap), instead
# of sorting every free unit under the row locks.
PICK_CANDIDATES = 16
# The steps of the annotator's walk looked at, window by window, before the
# full scan: each window is one statement that reads its units by index.
WALK_WINDOWS = (16, 64)


@functools.cache
def _walk_sql() -> str:
    """The first unit of a window of the annotator's walk (positions with their
    steps) that has a free slot, is not theirs and that nobody holds, locked,
    its slot taken in the same statement; RETURNING the unit and its step."""
    unit, assignment = Unit._meta.db_table, Assignment._meta.db_table
    return (
        "WITH w AS (SELECT * FROM unnest(%s::integer[], %s::integer[]) AS w(position, step)), "
        f"c AS (SELECT u.id, w.step FROM w JOIN {unit} u ON u.campaign_id = %s AND u.position = w.position "
        "WHERE u.n_taken < u.redundancy AND u.kind = 'regular' AND (u.n_taken > 0 OR u.wanted) "
        f"AND NOT EXISTS (SELECT 1 FROM {assignment} a WHERE a.unit_id = u.id AND a.annotator_id = %s) "
        f"AND {gold_sources_excluded_sql('u')}), "
        f"picked AS (SELECT u.id, c.step FROM {unit} u JOIN c ON c.id = u.id WHERE u.n_taken < u.redundancy "
        "ORDER BY c.step LIMIT 1 FOR UPDATE OF u SKIP LOCKED) "
        f"UPDATE {unit} SET n_taken = {unit}.n_taken + 1 FROM picked WHERE {unit}.id = picked.id "
        f"RETURNING {unit}.id, {unit}.item_id, {unit}.outputs, {unit}.systems, picked.step"
    )


def _pick_sql(*, lock: str, candidates: int | None = None) -> str:
    """The annotator's next unit with a free slot, locked, its slot taken
    (n_taken + 1) in the same statement; RETURNING the unit."""
    unit, assignment = Unit._meta.db_table, Assignment._meta.db_table
    free = (
        f"FROM {unit} u WHERE u.campaign_id = %s AND u.n_taken < u.redundancy "
        "AND u.kind = 'regular' AND (u.n_taken > 0 OR u.wanted) "  # controls: one annotator's (annotations.quality)
        f"AND NOT EXISTS (SELECT 1 FROM {assignment} a WHERE a.unit_id = u.id AND a.annotator_id = %s) "
        f"AND {gold_sources_excluded_sql('u')} "
    )
    if candidates:
        # The first `candidates` in the annotator's order (no locks), then the
        # first of them nobody holds; the others were looked at for nothing.
        picked = (
            f"WITH c AS (SELECT u.id, hashint8extended(u.id, %s) AS h {free} ORDER BY h, u.id LIMIT {candidates}), "
            f"picked AS (SELECT u.id FROM {unit} u JOIN c ON c.id = u.id WHERE u.n_taken < u.redundancy "
            f"ORDER BY c.h, c.id LIMIT 1 FOR UPDATE OF u {lock}) "
        )
    else:
        picked = f"WITH picked AS (SELECT u.id {free} ORDER BY hashint8extended(u.id, %s), u.id LIMIT 1 {lock}) "
    return (
        picked + f"UPDATE {unit} SET n_taken = {unit}.n_taken + 1 FROM picked WHERE {unit}.id = picked.id "
        f"RETURNING {unit}.id, {unit}.item_id, {unit}.outputs, {unit}.systems"
    )


# Overlap-first: started units looked at per pick (more than the annotators that can hold one at once,
# so a unit held by a request in flight does not make the pick open a new unit while another is free),
# and the started units walked at most to find them (those the annotator already did are passed; the
# bound keeps the pick an index read even for one annotator far ahead of everyone else).
STARTED_CANDIDATES = 64
STARTED_WINDOW = 512


def _overlap_candidates() -> str:
    """The candidates of overlap-first's pick, with their tier (0 started, 1 fresh) and position:
    the first started units (0 < n_taken < k) not theirs, then the first fresh units (n_taken = 0,
    still wanted) not theirs, each read in planned order from its partial index."""
    unit, assignment = Unit._meta.db_table, Assignment._meta.db_table
    mine = (
        f"NOT EXISTS (SELECT 1 FROM {assignment} a WHERE a.unit_id = u.id AND a.annotator_id = %s) "
        f"AND {gold_sources_excluded_sql('u')}"
    )
    return (
        f"WITH s AS (SELECT u.id, u.position, 0 AS tier FROM (SELECT id, position, item_id, campaign_id FROM {unit} "
        "WHERE campaign_id = %s AND n_taken > 0 AND n_taken < redundancy AND kind = 'regular' "
        f"ORDER BY position LIMIT {STARTED_WINDOW}) u WHERE {mine} ORDER BY u.position LIMIT {STARTED_CANDIDATES}), "
        f"f AS (SELECT u.id, u.position, 1 AS tier FROM {unit} u WHERE u.campaign_id = %s AND u.n_taken = 0 "
        f"AND u.kind = 'regular' AND u.wanted AND {mine} ORDER BY u.position LIMIT {PICK_CANDIDATES}), "
        "c AS (SELECT * FROM s UNION ALL SELECT * FROM f) "
    )


def _overlap_params(campaign: Campaign, annotator: Annotator) -> list[int]:
    """The parameters of `_overlap_sql` and `_overlap_first_candidate_sql`."""
    return [campaign.pk, annotator.pk, annotator.pk, campaign.pk, annotator.pk, annotator.pk]


@functools.cache
def _overlap_sql() -> str:
    """Overlap-first: the first candidate (`_overlap_candidates`) that nobody holds, locked, its slot
    taken in the same statement; RETURNING the unit and its tier (0 started, 1 opened).

    The lock is taken on a plain scan of the units whose ids the candidates give (an array computed
    once), ordered by the units' own columns (started first, then planned position), not on a join
    with the candidates: a row changed since the statement began is rechecked (EvalPlanQual) and,
    when the recheck drops it, it stays locked until the transaction ends. Under load, the recheck of
    the join dropped started units below k that still qualified (issue 21: pgrowlocks showed a pick
    holding FOR UPDATE on several of them, taken in its own statement, while it opened a fresh unit);
    every request that came by meanwhile skipped them too and opened fresh units while they were free.
    Two sessions reproduce it (tests/annotations/services/test_overlap_pick_recheck.py): with the
    candidates (a UNION ALL) joined by a nested loop, once the recheck of one unit had dropped it for
    filling up, the recheck of the next changed unit dropped it too although it was below k (hash and
    merge joins rechecked correctly). Here the recheck reads only the unit's own columns (n_taken <
    k), so only a unit that filled up is dropped (none of the former in 8 loaded runs of 180 picks,
    nor in 30 more per policy under pgbench, a CPU hog or both; the join's pick opened 1-7 of 60
    units that way in 5 of 32 such runs)."""
    unit = Unit._meta.db_table
    return (
        _overlap_candidates()[:-1] + ", "
        f"picked AS (SELECT u.id, (u.n_taken = 0)::int AS tier FROM {unit} u "
        "WHERE u.id = ANY(ARRAY(SELECT id FROM c)) AND u.n_taken < u.redundancy AND (u.n_taken > 0 OR u.wanted) "
        "ORDER BY u.n_taken = 0, u.position LIMIT 1 FOR UPDATE OF u SKIP LOCKED) "
        f"UPDATE {unit} SET n_taken = {unit}.n_taken + 1 FROM picked WHERE {unit}.id = picked.id "
        f"RETURNING {unit}.id, {unit}.item_id, {unit}.outputs, {unit}.systems, picked.tier, " + shown_with_sql(unit)
    )


def output_texts_sql(unit: str) -> str:
    """The texts of the unit's outputs as a JSON object {output id: text} (an SQL expression over the
    unit row `unit`), for statements that read them along with something else."""
    ids = f"ARRAY(SELECT jsonb_array_elements_text({unit}.outputs)::bigint)"
    return f"(SELECT jsonb_object_agg(o.id, o.text) FROM {rows.table(Output)} o WHERE o.id = ANY({ids}))"


def shown_with_sql(unit: str) -> str:
    """What the annotator is shown with a unit (`annotations.selectors.units`), read by the statement that
    takes it: the item's external id, source and data, the texts of the unit's outputs and the item's media, as JSON
    text (one round trip less on every hand-out)."""
    return (
        f"(SELECT jsonb_build_array(i.external_id, i.source, i.data, {output_texts_sql(unit)}, i.media)::text "
        f"FROM {rows.table(Item)} i WHERE i.id = {unit}.item_id)"
    )


@functools.cache
def _overlap_first_candidate_sql() -> str:
    """The first candidate with a free slot, held or not (no lock): the one to wait for."""
    unit = Unit._meta.db_table
    return (
        _overlap_candidates() + f"SELECT u.id FROM {unit} u JOIN c ON c.id = u.id WHERE "
        "u.n_taken < u.redundancy AND (u.n_taken > 0 OR u.wanted) ORDER BY c.tier, c.position LIMIT 1"
    )


def _overlap_unit(*, campaign: Campaign, annotator: Annotator, wait: bool = True) -> Unit | None:
    """Overlap-first's pick: one statement (`_overlap_sql`) on the fast path. When every candidate is
    held by a request in flight, wait for the first of them in overlap order (as `_pick_unit` does in
    its own order, one row at a time, holding no other unit), so that a started unit freed a moment
    later is still preferred to a fresh one. None when the candidates hold nothing (the full scan,
    `_pick_unit`, then decides)."""
    params = _overlap_params(campaign, annotator)
    with rows.cursor() as cursor:
        for round_ in range(MAX_PICK_ROUNDS):
            if round_ == 0:
                # No savepoint around the first try (two round trips less on every hand-out): its lock is
                # taken on the units' own columns, so a unit it locks and then drops on recheck is one that
                # filled up (or, under adaptive, was closed), which nobody can take anyway; holding it until
                # the commit hides nothing from other requests. Later rounds roll such locks back (`_take`).
                cursor.execute(_overlap_sql(), params)
                row = cursor.fetchone()
            else:
                row = _take(cursor, _overlap_sql(), params)
            if row is not None:
                unit = _unit_from_row(row[:4], campaign)
                unit.shown_with = json.loads(row[5]) if row[5] else None  # for the payload (selectors.units)
                return unit
            cursor.execute(_overlap_first_candidate_sql(), params)
            candidate = cursor.fetchone()
            if candidate is None:
                return None
            if not wait:
                raise _WouldWait()
            row = _take(
                cursor,
                f"UPDATE {Unit._meta.db_table} SET n_taken = n_taken + 1 WHERE id = %s "
                "AND n_taken < redundancy AND (n_taken > 0 OR wanted) "
                "RETURNING id, item_id, outputs, systems",
                [candidate[0]],
            )
            if row is not None:
                return _unit_from_row(row, campaign)
    raise ValidationError("The campaign is too busy right now; please try again in a moment.")


class _Filled(Exception):
    """The unit waited for filled up meanwhile."""


def _take(cursor, sql: str, params: list):
    """Run a statement that locks a unit and takes its slot, in a savepoint:
    its row, or None. On None the savepoint is rolled back, which lets go of a
    row that filled up under the lock attempt (it would stay locked otherwise)."""
    try:
        with transaction.atomic():
            cursor.execute(sql, params)
            row = cursor.fetchone()
            if row is None:
                raise _Filled()
        return row
    except _Filled:
        return None


def _unit_from_row(row, campaign: Campaign) -> Unit:
    unit_id, item_id, outputs, systems = row
    # Django has psycopg hand jsonb over as text (its JSONField decodes it); so do we.
    if isinstance(outputs, str):
        outputs = json.loads(outputs)
    if isinstance(systems, str):
        systems = json.loads(systems)
    return Unit(id=unit_id, campaign_id=campaign.pk, item_id=item_id, outputs=outputs, systems=systems)


def _walk_unit(*, campaign: Campaign, annotator: Annotator, enrolment: Enrolment) -> tuple[Unit | None, int]:
    """The next unit of the annotator's walk with a free slot that nobody holds,
    locked, its slot taken (or None), and the step the walk goes on from.

    Looks at WALK_WINDOWS steps, one statement each (`_take`).
    """
    step, n = enrolment.walk_step, campaign.n_units or 0
    with rows.cursor() as cursor:
        for size in WALK_WINDOWS:
            window = walk_positions(enrolment.seed, n, step, size)
            if not window:
                break
            row = _take(
                cursor,
                _walk_sql(),
                [[p for _, p in window], [s for s, _ in window], campaign.pk, annotator.pk, annotator.pk],
            )
            if row is not None:
                return _unit_from_row(row[:4], campaign), row[4] + 1
            step = window[-1][0] + 1
    return None, step


def _pick_unit(*, campaign: Campaign, annotator: Annotator, seed: int, wait: bool = True) -> Unit | None:
    """Lock the annotator's next unit with a free slot, take the slot, and return the unit (or None).

    The full scan, for when the annotator's walk holds nothing for them
    (`_walk_unit`): the next unit (in the order of the seeded hash) that nobody else holds,
    without waiting (`SKIP LOCKED`): among the first PICK_CANDIDATES, then
    among all. When every free slot is held by requests in flight, which may
    still give theirs up, wait for the first such unit alone, in a savepoint:
    if it filled up meanwhile, rolling back the savepoint drops the lock and
    we look again. Waiting on one row at a time, and never while holding
    another unit, keeps the pick free of deadlocks; each round follows
    another transaction's commit, so the loop ends.
    """
    with rows.cursor() as cursor:
        for _ in range(MAX_PICK_ROUNDS):
            for candidates in (PICK_CANDIDATES, None):
                args = (
                    [campaign.pk, annotator.pk, annotator.pk, seed]
                    if candidates is None
                    else [seed, campaign.pk, annotator.pk, annotator.pk]
                )
                row = _take(
                    cursor,
                    _pick_sql(lock="SKIP LOCKED" if candidates else "FOR UPDATE SKIP LOCKED", candidates=candidates),
                    args,
                )
                if row is not None:
                    return _unit_from_row(row, campaign)
            cursor.execute(
                f"SELECT u.id FROM {Unit._meta.db_table} u WHERE u.campaign_id = %s AND u.n_taken < u.redundancy "
                "AND u.kind = 'regular' AND (u.n_taken > 0 OR u.wanted) AND NOT EXISTS (SELECT 1 FROM "
                f"{Assignment._meta.db_table} a WHERE a.unit_id = u.id AND a.annotator_id = %s) "
                f"AND {gold_sources_excluded_sql('u')} ORDER BY hashint8extended(u.id, %s), u.id LIMIT 1",
                [campaign.pk, annotator.pk, annotator.pk, seed],
            )
            candidate = cursor.fetchone()
            if candidate is None:
                return None
            if not wait:
                raise _WouldWait()
            row = _take(
                cursor,
                f"UPDATE {Unit._meta.db_table} SET n_taken = n_taken + 1 "
                "WHERE id = %s AND n_taken < redundancy AND (n_taken > 0 OR wanted) "
                "RETURNING id, item_id, outputs, systems",
                [candidate[0]],
            )
            if row is not None:
                return _unit_from_row(row, campaign)
    raise ValidationError("The campaign is too busy right now; please try again in a moment.")


def shown_order_choose(*, unit: Unit, counts: dict, rng: random.Random) -> list[int]:
    """The order to show the unit's outputs: the assignment of outputs to
    positions whose systems this annotator has least often seen there
    (sum of their past counts), ties broken at random. A document unit (context=document: a system
    appears in several segments) keeps its segments in document order and shows the systems of
    every segment in the one order chosen for its screen."""
    outputs, systems = list(unit.outputs), list(unit.systems)
    screen = sorted(set(systems))
    if len(screen) < len(systems):
        ranked = _best_order(screen, screen, counts, rng)
        rank = {system: position for position, system in enumerate(ranked)}
        starts = document_segments(systems) + [len(outputs)]
        order = []
        for start, end in zip(starts, starts[1:]):
            order.extend(o for o, _ in sorted(zip(outputs[start:end], systems[start:end]), key=lambda p: rank[p[1]]))
        return order
    return _best_order(outputs, systems, counts, rng)


def _best_order(outputs: list[int], systems: list[int], counts: dict, rng: random.Random) -> list[int]:
    m = len(outputs)
    if m <= 1:
        return outputs
    cost = [
        [(counts.get(str(systems[i])) or [])[p] if p < len(counts.get(str(systems[i])) or []) else 0 for p in range(m)]
        for i in range(m)
    ]
    if m <= 6:
        best, best_orders = None, []
        for perm in itertools.permutations(range(m)):  # perm[p] = output index shown at position p
            c = sum(cost[perm[p]][p] for p in range(m))
            if best is None or c < best:
                best, best_orders = c, [perm]
            elif c == best:
                best_orders.append(perm)
        perm = rng.choice(best_orders)
    else:
        from scipy.optimize import linear_sum_assignment  # lazy: scipy costs each web worker ~0.5 s and ~40 MB

        jitter = [[cost[i][p] + rng.random() * 1e-3 for p in range(m)] for i in range(m)]
        rows, cols = linear_sum_assignment(jitter)
        perm = [0] * m
        for i, p in zip(rows, cols):
            perm[p] = i
    return [outputs[i] for i in perm]


def screen_systems(unit: Unit, order: list[int]) -> list[int]:
    """The systems of a unit's screen in the order shown (left to right). A document unit shows
    each segment's systems in one order: read from its fullest segment (segments short of a system
    keep the others' order), any system not in it after."""
    system_of = dict(zip(unit.outputs, unit.systems))
    shown = [system_of[o] for o in order]
    if len(set(shown)) == len(shown):
        return shown
    starts = document_segments(list(unit.systems)) + [len(unit.outputs)]
    # The segments of `order` are those of the unit (the same outputs per segment, reordered).
    segments = [shown[a:b] for a, b in zip(starts, starts[1:])]
    fullest = max(segments, key=len)
    return fullest + [s for s in dict.fromkeys(shown) if s not in fullest]


def _count_positions(counts: dict, unit: Unit, order: list[int]) -> dict:
    screen = screen_systems(unit, order)
    m = len(screen)
    for position, system in enumerate(screen):
        key = str(system)
        row = list(counts.get(key) or [])
        row.extend([0] * (m - len(row)))
        row[position] += 1
        counts[key] = row
    return counts


def assignment_next(*, campaign: Campaign, annotator: Annotator) -> tuple[Assignment | None, bool]:
    """The annotator's next unit of work in `campaign`: `(assignment, created)`.

    Their pending assignment if they have one (a reload does not skip work;
    its deadline is renewed), else a new one; `(None, False)` when nothing is
    left for them. Timed-out assignments are expired first, in their own
    transaction, so the pick never waits while holding their units.
    """
    campaign_units_ensure(campaign=campaign)
    now = time.monotonic()
    checked = now - _last_expiry.get(campaign.pk, float("-inf")) >= EXPIRE_EVERY_S
    if checked:
        _last_expiry[campaign.pk] = now
        assignments_expire(campaign=campaign)
    assignment, created = _assignment_take(campaign=campaign, annotator=annotator)
    if assignment is None and not checked and assignments_expire(campaign=campaign):
        assignment, created = _assignment_take(campaign=campaign, annotator=annotator)
    if assignment is None and _adaptive_starved(campaign):
        # The units of its last undecided pairs ran out after the last check, so no submit will reach
        # the next one: check now. Those pairs are out of reach; the campaign then confirms its
        # clusters on the units the check reopens, or stops.

        allocation_check(campaign_id=campaign.pk)
        assignment, created = _assignment_take(campaign=campaign, annotator=annotator)
    return assignment, created


def _adaptive_starved(campaign: Campaign) -> bool:
    """An adaptive campaign, not stopped, whose last check closed fresh units, with no unit left that
    anyone can take: nothing is wanted any more, yet the stopping rule has not fired. Asked only by a
    request that found nothing (one index read)."""
    if (
        campaign.allocation != Campaign.Allocation.ADAPTIVE
        or campaign.stopped_by
        or not (campaign.allocation_state or {}).get("closed_units")
    ):
        return False
    with rows.cursor() as cursor:
        cursor.execute(
            f"SELECT EXISTS (SELECT 1 FROM {rows.table(Unit)} u WHERE u.campaign_id = %s "
            "AND u.n_taken < u.redundancy AND u.kind = 'regular' AND (u.n_taken > 0 OR u.wanted))",
            [campaign.pk],
        )
        return not cursor.fetchone()[0]


class _WouldWait(Exception):
    """Every unit the pick would take is held by a request in flight: waiting for one is for a
    transaction that holds no unit (`assignment_take_in_submit` then leaves the pick to `assignment_next`)."""


def assignment_take_in_submit(
    *, campaign: Campaign, annotator: Annotator, enrolment: Enrolment, with_batch: bool = False
) -> Assignment | None:
    """The annotator's next unit handed out inside the transaction of the submit that just finished
    their assignment, under the enrolment lock it holds (read by its lock statement, with `pending_id`
    and `qc_possible`): one commit and the enrolment's lock statement fewer than `assignment_next`
    after the commit, on every submit with `next`. None when it is not done here, for the caller to ask
    `assignment_next` once committed: nothing left (which that confirms, after expiring timed-out
    units), the periodic expiry due, units still being planned, or every free unit held by a request
    in flight (`_WouldWait`: holding the submitted unit's lock while waiting for another's could
    deadlock with a request doing the same). The enrolment must be the locked one, before the
    finishing update counted this submit (`n_done` is brought up to date here). `with_batch`: a new
    unit comes with its batch (`current_batch`, read by the INSERT, `_assignment_insert`)."""
    if campaign.planned_at is None or time.monotonic() - _last_expiry.get(campaign.pk, float("-inf")) >= EXPIRE_EVERY_S:
        return None
    enrolment.n_done += 1  # the finishing statement's count, on the row this transaction locked
    try:
        assignment, _ = _take_locked(
            campaign=campaign, annotator=annotator, enrolment=enrolment, wait=False, with_batch=with_batch
        )
    except _WouldWait:
        return None
    return assignment


@retry_on_deadlock
@transaction.atomic
def _assignment_take(*, campaign: Campaign, annotator: Annotator) -> tuple[Assignment | None, bool]:
    return _take_locked(
        campaign=campaign, annotator=annotator, enrolment=enrolment_lock(campaign=campaign, annotator=annotator)
    )


def _take_locked(
    *, campaign: Campaign, annotator: Annotator, enrolment: Enrolment, wait: bool = True, with_batch: bool = False
) -> tuple[Assignment | None, bool]:
    """`_assignment_take` once the enrolment is locked; with `wait` False, `_WouldWait` instead of
    waiting for a unit another request holds; `with_batch` as `_assignment_insert`'s."""
    if enrolment.pending_id is not None:
        # A reload does not skip work: the same unit, its deadline renewed, and its time on the server
        # resumed (the stretch since it was last handed out closed, counted up to the old deadline at
        # most, as `assignment_time_ms` does), in one statement.
        now = timezone.now()
        with rows.cursor() as cursor:
            cursor.execute(
                f"UPDATE {rows.table(Assignment)} a SET expires_at = %s, {_RESUME_SQL}, "
                f"active_since = %s WHERE a.id = %s RETURNING {rows.columns(Assignment, 'a')}",
                [_expires_at(campaign, now), now, now, enrolment.pending_id],
            )
            pending = rows.from_row(Assignment, cursor.fetchone())
        handed_out(pending.pk, now)
        pending.enrolment = enrolment  # for the caller's progress display, saves a query
        return pending, False

    # Quality control: a control unit when one is due in this annotator's batch.
    unit = None
    if enrolment.qc_possible:
        unit = control_next(campaign=campaign, annotator=annotator, enrolment=enrolment)
        if unit is not None:
            Unit.objects.filter(pk=unit.pk).update(n_taken=F("n_taken") + 1)
    walk_step = enrolment.walk_step
    if unit is None and campaign.stopped_by == Campaign.StoppedBy.RESEARCHER:
        return None, False  # stopped early: the pending unit (above) can still be finished, nothing new
    if unit is None:  # each takes the unit's slot
        if campaign.allocation == Campaign.Allocation.SPREAD:
            unit, walk_step = _walk_unit(campaign=campaign, annotator=annotator, enrolment=enrolment)
        else:
            unit = _overlap_unit(campaign=campaign, annotator=annotator, wait=wait)
    if unit is None:
        unit = _pick_unit(campaign=campaign, annotator=annotator, seed=enrolment.seed, wait=wait)
    if unit is None:
        return None, False
    rng = random.Random(enrolment.seed * 1_000_003 + enrolment.n_assigned)
    order = shown_order_choose(unit=unit, counts=enrolment.position_counts, rng=rng)
    now = timezone.now()
    assignment = Assignment(
        campaign=campaign,
        annotator=annotator,
        item_id=unit.item_id,
        unit=unit,
        seq=enrolment.n_assigned,
        shown_order=order,
        expires_at=_expires_at(campaign, now),
        active_since=now,  # the server's clock of the time spent on the unit starts here
    )
    _assignment_insert(
        assignment=assignment,
        enrolment=enrolment,
        walk_step=walk_step,
        position_counts=_count_positions(dict(enrolment.position_counts), unit, order),
        with_batch=with_batch,
    )
    handed_out(assignment.pk, now)
    assignment.enrolment = enrolment
    return assignment, True


def _assignment_insert(
    *, assignment: Assignment, enrolment: Enrolment, walk_step: int, position_counts: dict, with_batch: bool = False
) -> None:
    """INSERT the new assignment and count it on the enrolment, with the step
    its walk goes on from, in one statement (the ORM would take two round
    trips, on the busiest request). With `with_batch`, the same statement reads
    the annotator's batch the new unit belongs to (`current_batch`, as
    `selectors.batches.annotator_batch` reads it: the page draws its strip)."""
    insert, params = rows.insert_sql(Assignment, [assignment])
    count = (
        f"e AS (UPDATE {rows.table(Enrolment)} SET n_assigned = n_assigned + 1, position_counts = %s, "
        "walk_step = %s WHERE id = %s)"
    )
    params = [rows.json_param(Enrolment, "position_counts", position_counts), walk_step, enrolment.pk, *params]
    if not with_batch:
        with rows.cursor() as cursor:
            cursor.execute(f"WITH {count} {insert}", params)
            rows.saved([assignment], cursor.fetchall())
        return
    size = max(1, assignment.campaign.units_per_batch)
    (cte, cte_params), (done, done_params), (closed, closed_params) = batch_sql(
        campaign_id=assignment.campaign_id, annotator_id=assignment.annotator_id, size=size
    )
    # The new row is not visible to the statement's other parts (one snapshot): it is the pending unit.
    with rows.cursor() as cursor:
        cursor.execute(
            f"WITH {count}, n AS ({insert}), {cte} SELECT n.{rows.q(Assignment._meta.pk.column)}, "
            f"d.n, {done}, {closed} FROM n, d",
            [*params, *cte_params, *done_params, *closed_params],
        )
        pk, done_count, done_ids, closed_now = cursor.fetchone()
    rows.saved([assignment], [(pk,)])
    assignment.current_batch = batch_from(
        size=size, done_count=done_count, done_ids=done_ids, pending_id=pk, closed=closed_now
    )
