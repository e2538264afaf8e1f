"""Overlap-first under fifty concurrent annotators on PostgreSQL: a unit is opened only when no
started unit below k was free for the annotator (each was theirs already, or held by a request in
flight), so units reach k one after the other. The same check flags most openings under `spread`,
which shows it can fail.

Each request's interval [start, end] is recorded around `assignment_next` (it commits before it
returns). A taker of a unit commits before the next taker can lock it (SKIP LOCKED) and inserts its
assignment before that, so the event with the lowest assignment id on a unit opened it (end times
recorded by threads can come out of order). Opening event E of annotator A violates the rule when some
other unit V, at E's pick, certainly:
- was started: an event on V ended before E started;
- was below k: fewer than k events on V started before E ended;
- was not A's: A's own events are sequential, none on V before E;
- was held by nobody: no other annotator's event on V overlaps E (only a taker holds a unit's lock).

"Only a taker holds a unit's lock" is what the engine has to make true: a request that locks a
started unit below k takes it (or waits for it and then takes it); a pick that locked such a unit
and then dropped it would hide it from every other request until it commits (issue 21).
"""

import threading
import time
from collections import Counter, defaultdict

import pytest
from django.db import connection

from annotations.models import Assignment
from annotations.services.assignments import assignment_next
from tests.annotations.apis.test_next_assignment_concurrency import TIMEOUT, _campaign


def _race(campaign, annotators):
    events, errors = [], []
    lock = threading.Lock()
    start = threading.Barrier(len(annotators))

    def work(annotator):
        try:
            start.wait(TIMEOUT)
            while True:
                began = time.monotonic()
                assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
                ended = time.monotonic()
                if assignment is None:
                    return
                with lock:
                    events.append((annotator.pk, assignment.unit_id, began, ended, assignment.pk))
                Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.DONE)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(a,), daemon=True) for a in annotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 8)
    assert not errors, errors[:3]
    assert not any(t.is_alive() for t in threads)
    return events


def _violations(events, k):
    by_unit = defaultdict(list)
    for event in events:
        by_unit[event[1]].append(event)
    opening = [min(unit_events, key=lambda e: e[4]) for unit_events in by_unit.values()]
    found = []
    for annotator, unit, s, e, _ in opening:
        for other, v_events in by_unit.items():
            if other == unit:
                continue
            started = any(ve < s for _, _, _, ve, _ in v_events)
            below_k = sum(1 for _, _, vs, _, _ in v_events if vs < e) < k
            mine = any(va == annotator and vs < s for va, _, vs, _, _ in v_events)
            held = any(va != annotator and vs <= e and ve >= s for va, _, vs, ve, _ in v_events)
            if started and below_k and not mine and not held:
                found.append(unit)
                break
    return found


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("allocation,n_annotators", [("overlap-first", 50), ("adaptive", 50), ("spread", 12)])
def test_overlap_first_completes_started_units_before_opening_new_ones(allocation, n_annotators):
    k = 3
    campaign, annotators = _campaign(n_items=60, redundancy=k, n_annotators=n_annotators, allocation=allocation)
    events = _race(campaign, annotators)
    per_unit = Counter(event[1] for event in events)
    assert len(per_unit) == 60 and set(per_unit.values()) == {k}
    assert len({(event[0], event[1]) for event in events}) == len(events)  # nobody twice on a unit
    violations = _violations(events, k)
    # For the record (pytest -s): units with all k slots taken after a quarter of the assignments.
    quarter = sorted(events, key=lambda e: e[4])[: len(events) // 4]
    full = sum(1 for n in Counter(event[1] for event in quarter).values() if n == k)
    print(
        f"{allocation}: {full} units with k after {len(quarter)} of {len(events)} assignments; "
        f"{len(violations)} of {len(per_unit)} openings while a started unit was free"
    )
    if allocation == "spread":
        assert len(violations) > 30  # of 60 openings: its annotators open units all over the campaign
    else:
        # None, under any load (issue 21: with the pick's lock taken on a join with its candidates, a
        # loaded PostgreSQL showed up to 13 of 60; see `_overlap_sql` for why, and the fix).
        assert violations == [], violations
