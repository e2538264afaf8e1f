"""The submit's one-statement lock (`assignment_work._lock_both`) keeps the engine's lock order,
enrolment before assignment: while it waits for an enrolment another request holds, it holds no lock
on the assignment. Shown with real PostgreSQL sessions; the same check catches the statement with
the order reversed, so it can fail."""

import threading

import pytest
from django.db import DatabaseError, connection, transaction

from annotations import rows
from annotations.models import Annotator, Assignment, Enrolment, Membership
from annotations.services.assignment_work import _lock_both_sql, _own_lock_sql, assignment_lock_for, assignment_lock_own
from annotations.services.assignments import assignment_next
from tests.annotations.apis.test_next_assignment_concurrency import (
    TIMEOUT,
    _campaign,
    _in_thread,
    _wait_until_blocked,
)
from tests.annotations.factories import MembershipFactory, UserFactory


class RowHolder(threading.Thread):
    """Another request: holds a row's lock (`model`, `pk`) until released."""

    def __init__(self, model, pk):
        super().__init__(daemon=True)
        self.model, self.pk = model, pk
        self.holding, self.release = threading.Event(), threading.Event()

    def run(self):
        try:
            with transaction.atomic():
                self.model.objects.select_for_update().get(pk=self.pk)
                self.holding.set()
                self.release.wait(TIMEOUT)
        finally:
            self.holding.set()
            connection.close()


def locked_elsewhere(model, pk) -> bool:
    """Whether another session holds the row's lock (asked without waiting)."""
    try:
        with transaction.atomic():
            model.objects.select_for_update(nowait=True).get(pk=pk)
        return False
    except DatabaseError:
        return True


def _while_enrolment_held(lock):
    campaign, (annotator,) = _campaign(n_items=2, redundancy=1, n_annotators=1)
    assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
    holder = RowHolder(Enrolment, Enrolment.objects.get(campaign=campaign, annotator=annotator).pk)
    holder.start()
    assert holder.holding.wait(TIMEOUT)
    thread, box = _in_thread(lambda: transaction.atomic()(lock)(campaign, annotator, assignment))
    try:
        _wait_until_blocked(box)
        locked = locked_elsewhere(Assignment, assignment.pk)
    finally:
        holder.release.set()
        holder.join(TIMEOUT)
        thread.join(TIMEOUT)
    assert not thread.is_alive()
    if "error" in box:
        raise box["error"]
    return locked, box["result"], assignment


@pytest.mark.django_db(transaction=True)
def test_the_submit_lock_waits_for_the_enrolment_holding_no_assignment():
    def lock(campaign, annotator, assignment):
        return assignment_lock_for(
            assignment_id=assignment.pk, annotator=annotator, campaign=campaign, with_partials=True
        )

    locked, (got, enrolment), assignment = _while_enrolment_held(lock)
    assert not locked
    assert got.pk == assignment.pk and enrolment.annotator_id == assignment.annotator_id


@pytest.mark.django_db(transaction=True)
def test_the_same_check_catches_the_reversed_order():
    def reversed_lock(campaign, annotator, assignment):
        sql = _lock_both_sql(False).replace("FOR UPDATE OF e, a", "FOR UPDATE OF a, e")
        with rows.cursor() as cursor:
            cursor.execute(sql, [campaign.pk, annotator.pk, assignment.pk])
            return cursor.fetchone()

    locked, row, _ = _while_enrolment_held(reversed_lock)
    assert locked and row is not None


def _own_user(campaign, annotator):
    user = UserFactory()
    annotator.user, annotator.namespace = user, Annotator.Namespace.ACCOUNT  # an account's annotator
    annotator.save(update_fields=["user", "namespace"])
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    return user


@pytest.mark.django_db(transaction=True)
def test_the_api_submits_one_statement_lock_keeps_the_order_too():
    """`assignment_lock_own` (the assignment found by its user, with the campaign and role) locks as
    `_lock_both` does: while the enrolment is held elsewhere it holds no lock on the assignment."""

    def lock(campaign, annotator, assignment):
        return assignment_lock_own(user=_own_user(campaign, annotator), assignment_id=assignment.pk)

    locked, (got, enrolment), assignment = _while_enrolment_held(lock)
    assert not locked
    assert got.pk == assignment.pk and enrolment.annotator_id == assignment.annotator_id
    assert got.member_role == Membership.Role.ANNOTATOR and got.campaign.dataset.project_id


@pytest.mark.django_db(transaction=True)
def test_the_same_check_catches_the_own_lock_reversed():
    def reversed_lock(campaign, annotator, assignment):
        user = _own_user(campaign, annotator)
        sql = _own_lock_sql().replace("FOR UPDATE OF e, a", "FOR UPDATE OF a, e")
        with rows.cursor() as cursor:
            cursor.execute(sql, [user.pk, assignment.pk, user.pk])
            return cursor.fetchone()

    locked, row, _ = _while_enrolment_held(reversed_lock)
    assert locked and row is not None
