"""`assignment_next` under concurrency, on real PostgreSQL connections.

Each thread has its own database connection (Django opens one per thread),
so these are genuinely concurrent transactions; `transactional_db` lets the
threads see each other's committed rows. Where a test is about a request that
must wait for a lock, it polls `pg_locks` until that request's backend is
actually waiting, so the lock-wait path always runs (no sleeping and hoping).
"""

import threading
from collections import Counter

import pytest
from django.db import connection, connections, transaction

from annotations.models import Assignment
from annotations.services.assignments import assignment_next
from annotations.services.units import campaign_units_plan
from tests.annotations.factories import (
    AnnotatorFactory,
    CampaignFactory,
    DatasetFactory,
    ItemFactory,
    OutputFactory,
    SystemFactory,
)
from tests.waiting import wait_until

TIMEOUT = 30


def _campaign(n_items: int, redundancy: int, n_annotators: int, allocation: str = "overlap-first"):
    """A Likert campaign of one system: one unit per item."""
    dataset = DatasetFactory()
    system = SystemFactory(dataset=dataset)
    for i in range(n_items):
        OutputFactory(item=ItemFactory(dataset=dataset, position=i), system=system)
    campaign = CampaignFactory(dataset=dataset, redundancy=redundancy, allocation=allocation)
    campaign_units_plan(campaign=campaign)  # planned before the race: only unit and enrolment locks are in play
    campaign.refresh_from_db()
    annotators = [AnnotatorFactory(project=dataset.project) for _ in range(n_annotators)]
    return campaign, annotators


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _wait_until_blocked(box: dict) -> None:
    """Poll pg_locks until the thread's backend waits for a lock (or fail after TIMEOUT)."""
    wait_until(lambda: "pid" in box, TIMEOUT, "the thread to start its request", interval=0.01)
    with connections["default"].cursor() as cursor:

        def waiting() -> bool:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", [box["pid"]])
            if cursor.fetchone()[0]:
                return True
            assert "result" not in box and "error" not in box, "the request finished without waiting for the lock"
            return False

        wait_until(waiting, TIMEOUT, "the request to wait for the lock", interval=0.01)


class Holder(threading.Thread):
    """Takes an assignment and keeps its transaction open until released."""

    def __init__(self, campaign, annotator):
        super().__init__(daemon=True)
        self.campaign, self.annotator = campaign, annotator
        self.holding, self.release = threading.Event(), threading.Event()
        self.result = None

    def run(self):
        try:
            with transaction.atomic():
                self.result = assignment_next(campaign=self.campaign, annotator=self.annotator)
                self.holding.set()
                self.release.wait(TIMEOUT)
        finally:
            self.holding.set()
            connection.close()


def _in_thread(fn):
    box = {}

    def run():
        try:
            box["pid"] = _backend_pid()
            box["result"] = fn()
        except BaseException as exc:  # surfaced in the test thread
            box["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def _finish(thread, box, holder):
    holder.release.set()
    holder.join(TIMEOUT)
    thread.join(TIMEOUT)
    assert not thread.is_alive() and not holder.is_alive()
    if "error" in box:
        raise box["error"]
    return box["result"]


ALLOCATIONS = ["overlap-first", "spread", "adaptive"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("allocation", ALLOCATIONS)
def test_a_concurrent_annotator_gets_another_item_without_waiting(allocation):
    campaign, (a1, a2) = _campaign(n_items=3, redundancy=1, n_annotators=2, allocation=allocation)
    holder = Holder(campaign, a1)
    holder.start()
    assert holder.holding.wait(TIMEOUT)
    # While a1's transaction is open, a2 is served at once (the holder is
    # released only after a2 returns, so a blocking lock would time out here).
    thread, box = _in_thread(lambda: assignment_next(campaign=campaign, annotator=a2))
    thread.join(10)
    served_while_held = not thread.is_alive()
    second = _finish(thread, box, holder)
    assert served_while_held, "a2 waited for a1's transaction"
    (first_assignment, created1), (second_assignment, created2) = holder.result, second
    assert created1 and created2
    assert first_assignment.item_id != second_assignment.item_id
    assert Assignment.objects.filter(campaign=campaign).count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("allocation", ALLOCATIONS)
@pytest.mark.parametrize("redundancy,expect_item", [(1, False), (2, True)])
def test_the_last_open_item_is_neither_duplicated_nor_lost(redundancy, expect_item, allocation):
    """One unit; a1 holds it uncommitted while a2 asks. a2 waits for a1's
    commit (checked in pg_locks), then looks again: with redundancy 1 nothing
    is left for a2, with redundancy 2 a2 gets the second slot."""
    campaign, (a1, a2) = _campaign(n_items=1, redundancy=redundancy, n_annotators=2, allocation=allocation)
    holder = Holder(campaign, a1)
    holder.start()
    assert holder.holding.wait(TIMEOUT)
    thread, box = _in_thread(lambda: assignment_next(campaign=campaign, annotator=a2))
    _wait_until_blocked(box)
    assignment, created = _finish(thread, box, holder)
    assert holder.result[1] is True
    assert (assignment is not None) == expect_item and created == expect_item
    assert Assignment.objects.filter(campaign=campaign).count() == (2 if expect_item else 1)


@pytest.mark.django_db(transaction=True)
def test_one_annotator_double_request_gets_one_assignment():
    campaign, (a1,) = _campaign(n_items=3, redundancy=1, n_annotators=1)
    holder = Holder(campaign, a1)
    holder.start()
    assert holder.holding.wait(TIMEOUT)
    thread, box = _in_thread(lambda: assignment_next(campaign=campaign, annotator=a1))
    _wait_until_blocked(box)  # on a1's enrolment row
    assignment, created = _finish(thread, box, holder)
    assert not created and assignment.pk == holder.result[0].pk
    assert Assignment.objects.filter(campaign=campaign).count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("allocation", ALLOCATIONS)
@pytest.mark.parametrize("n_items,redundancy,n_annotators", [(24, 1, 2), (12, 2, 3)])
def test_racing_annotators_cover_every_item_exactly_redundancy_times(n_items, redundancy, n_annotators, allocation):
    campaign, annotators = _campaign(
        n_items=n_items, redundancy=redundancy, n_annotators=n_annotators, allocation=allocation
    )
    start = threading.Barrier(n_annotators)
    errors = []

    def work(annotator):
        try:
            start.wait(TIMEOUT)
            while True:
                assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
                if assignment is None:
                    return
                Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.DONE)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(a,), daemon=True) for a in annotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 2)
    assert not errors and not any(t.is_alive() for t in threads)
    rows = list(Assignment.objects.filter(campaign=campaign).values_list("item_id", "annotator_id"))
    per_item = Counter(item for item, _ in rows)  # one unit per item here
    assert len(per_item) == n_items and set(per_item.values()) == {redundancy}
    assert len(set(rows)) == len(rows)  # never the same item twice to one annotator
