"""Overlap-first's pick when the units it looks at change under it (issue 21), on real PostgreSQL
connections, step by step.

A pick reads the started and fresh units with the snapshot of its statement and then locks them one
after the other (FOR UPDATE SKIP LOCKED); a unit another request changed and committed meanwhile is
locked in its newest version and rechecked (EvalPlanQual). A unit that fails the recheck is passed
and yet stays locked until the pick's transaction ends, so every other request passes it too: a
recheck may drop a unit that filled up (k taken), never a started unit below k.

The two sessions: B declares a cursor over the pick's locking part (`picked` of `_overlap_sql`),
which fixes its snapshot without running it; A takes slots of started units and commits; B fetches,
so that B locks units changed since its snapshot, as a pick does when another request commits while
it runs. With the candidates joined into the locking scan (the pick before 4064ae0), a nested-loop
plan (PostgreSQL 15) dropped the second changed unit although it was still below k, after the
recheck of the first had dropped it for filling up: the pick kept both locked and took a later unit
(in other layouts it dropped unchanged started units after a recheck too, and opened a fresh one).
Hash and merge joins rechecked correctly; so did the join when the candidates were a materialized
CTE or no UNION ALL. The pick of `_overlap_sql` locks on a plain scan of the candidate ids and takes
the first started unit below k under every join method.
"""

import pytest
from django.db import connections

from annotations.models import Unit
from annotations.services.assignments import _overlap_params, _overlap_sql
from tests.annotations.apis.test_next_assignment_concurrency import _campaign

K = 3
PLANS = {  # the planner settings B runs under: the join methods it may use for the candidates
    "nestloop": ("enable_hashjoin", "enable_mergejoin"),
    "hashjoin": ("enable_nestloop", "enable_mergejoin"),
    "default": (),
}


def _picked_select() -> str:
    """The locking part of the pick as a SELECT (a cursor cannot hold the UPDATE around it)."""
    with_part, _, update = _overlap_sql().rpartition(") UPDATE ")
    with_part += ")"
    assert update.startswith(f"{Unit._meta.db_table} SET n_taken") and "picked AS (" in with_part
    return with_part + " SELECT id, tier FROM picked"


def _session():
    conn = connections.create_connection("default")
    conn.ensure_connection()
    conn.set_autocommit(True)
    return conn


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize(
    "taken,bumped,expected",
    [
        (
            (2, 1, 1),
            (1, 1, 0),
            1,
        ),  # the first fills up meanwhile, the next takes a slot: the next (the old pick failed)
        ((2, 1, 1), (1, 0, 0), 1),  # the first fills up meanwhile: the next one, unchanged
        ((1, 1, 1), (1, 0, 0), 0),  # the first takes a slot meanwhile, still below k: itself
    ],
)
def test_pick_takes_a_started_unit_that_changed_or_follows_a_changed_one(plan, taken, bumped, expected):
    campaign, (annotator,) = _campaign(n_items=8, redundancy=K, n_annotators=1)
    ids = list(Unit.objects.filter(campaign=campaign).order_by("position").values_list("id", flat=True))
    for unit_id, n in zip(ids, taken):
        Unit.objects.filter(pk=unit_id).update(n_taken=n)
    params = _overlap_params(campaign, annotator)
    a, b = _session(), _session()
    try:
        with b.cursor() as cb:
            cb.execute("BEGIN")
            for setting in PLANS[plan]:
                cb.execute(f"SET LOCAL {setting} = off")
            cb.execute("EXPLAIN " + b.ops.compose_sql(_picked_select(), params))
            explain = "\n".join(r[0] for r in cb.fetchall())
            cb.execute("DECLARE pick NO SCROLL CURSOR FOR " + b.ops.compose_sql(_picked_select(), params))
            with a.cursor() as ca:  # other requests take slots and commit after B's snapshot
                for unit_id, n in zip(ids, bumped):
                    if n:
                        ca.execute("UPDATE annotations_unit SET n_taken = n_taken + %s WHERE id = %s", [n, unit_id])
            cb.execute("FETCH 1 FROM pick")
            row = cb.fetchone()
            with a.cursor() as ca:
                ca.execute(
                    "SELECT id FROM annotations_unit WHERE campaign_id = %s FOR UPDATE SKIP LOCKED", [campaign.pk]
                )
                free = {r[0] for r in ca.fetchall()}
                ca.execute("SELECT id, n_taken FROM annotations_unit WHERE campaign_id = %s", [campaign.pk])
                n_taken = dict(ca.fetchall())
            cb.execute("ROLLBACK")
    finally:
        a.close()
        b.close()
    position = {unit_id: i for i, unit_id in enumerate(ids)}
    assert row is not None
    assert (position[row[0]], row[1]) == (expected, 0), (
        f"took position {position[row[0]]} (tier {row[1]}); n_taken by position {[n_taken[u] for u in ids]}, "
        f"B holds positions {[position[u] for u in ids if u not in free]}\n{explain}"
    )
    # Besides the unit it took, B holds only units that filled up (a recheck may drop those).
    held = [u for u in ids if u not in free and u != row[0]]
    assert all(n_taken[u] == K for u in held), [(position[u], n_taken[u]) for u in held]
