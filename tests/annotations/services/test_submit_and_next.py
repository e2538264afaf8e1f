"""A submit with `next` hands out the annotator's next unit inside its own transaction, under the
enrolment lock the submit took (`submissions._and_next`, `assignments.assignment_take_in_submit`):
the same unit `assignment_next` would give after the commit, with one commit and one lock statement
fewer. Where the pick would have to wait for a unit another request holds, it is left to
`assignment_next` after the commit, so that no submit waits while holding its own unit's lock."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotations.models import Assignment, Enrolment, RatingJudgement, Unit
from annotations.services import assignments as engine
from annotations.services.assignments import assignment_next, assignments_expire
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from tests.annotations.apis.test_next_assignment_concurrency import TIMEOUT, _in_thread, _wait_until_blocked
from tests.annotations.factories import AnnotatorFactory, DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.annotations.services.test_lock_order import RowHolder, locked_elsewhere


@pytest.fixture
def no_expiry_due(monkeypatch):
    """The periodic expiry (every EXPIRE_EVERY_S per campaign) not due during the test, however slow
    the machine: when it is due, the submit leaves the pick to `assignment_next` (tested apart)."""
    monkeypatch.setattr(engine, "EXPIRE_EVERY_S", 3600.0)


def _campaign(n_items: int, redundancy: int = 1):
    dataset = DatasetFactory()
    system = SystemFactory(dataset=dataset)
    for i in range(n_items):
        OutputFactory(item=ItemFactory(dataset=dataset, position=i), system=system)
    campaign = campaign_create(
        dataset=dataset, name="n", protocol="likert", criteria=["f"], scale_min=1, scale_max=5, redundancy=redundancy
    )
    return campaign, AnnotatorFactory(project=dataset.project)


def _submit(campaign, annotator, assignment, *, and_next=True):
    unit = Unit.objects.get(pk=assignment.unit_id)
    return unit_submit(
        annotator=annotator,
        assignment_id=assignment.pk,
        campaign=campaign,
        and_next=and_next,
        judgements=[{"criterion": "f", "output": output, "score": 3} for output in unit.outputs],
    )


@pytest.mark.django_db
def test_the_next_unit_comes_with_the_submit_counted_as_assignment_next_counts_it(no_expiry_due):
    campaign, annotator = _campaign(n_items=3)
    first, _ = assignment_next(campaign=campaign, annotator=annotator)
    result = _submit(campaign, annotator, first)
    following = result.next_assignment
    assert following is not None and following.status == "pending" and following.unit_id != first.unit_id
    stored = Assignment.objects.get(pk=following.pk)
    assert (stored.annotator_id, stored.seq, stored.unit_id) == (annotator.pk, 1, following.unit_id)
    enrolment = Enrolment.objects.get(campaign=campaign, annotator=annotator)
    assert (enrolment.n_assigned, enrolment.n_done) == (2, 1)
    assert following.enrolment.n_done == 1  # the progress the answer shows counts the submit
    assert Unit.objects.get(pk=following.unit_id).n_taken == 1
    # The unit handed out is the pending one from now on: asking again gives it back, not another.
    assert assignment_next(campaign=campaign, annotator=annotator) == (following, False)


@pytest.mark.django_db
def test_an_other_pending_unit_is_handed_out_again_not_a_new_one(no_expiry_due):
    """Coming back to a timed-out unit after getting another one: the submit takes the old one back, and
    `next` is the one still pending, as `assignment_next` would answer, never a third unit."""
    campaign, annotator = _campaign(n_items=3)
    late, _ = assignment_next(campaign=campaign, annotator=annotator)
    Assignment.objects.filter(pk=late.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert assignments_expire(campaign=campaign) == 1
    pending, created = assignment_next(campaign=campaign, annotator=annotator)
    assert created and pending.unit_id != late.unit_id
    result = _submit(campaign, annotator, late)
    assert result.assignment.status == "done"
    assert result.next_assignment is not None and result.next_assignment.pk == pending.pk
    assert Assignment.objects.filter(annotator=annotator).count() == 2


@pytest.mark.django_db
def test_when_the_expiry_is_due_the_pick_is_left_to_assignment_next(monkeypatch):
    monkeypatch.setattr(engine, "EXPIRE_EVERY_S", 0.0)
    campaign, annotator = _campaign(n_items=2)
    first, _ = assignment_next(campaign=campaign, annotator=annotator)
    result = _submit(campaign, annotator, first)
    assert result.assignment.status == "done" and result.next_assignment is None
    assert Assignment.objects.filter(annotator=annotator).count() == 1


@pytest.mark.django_db
def test_nothing_left_is_not_answered_by_the_submit(no_expiry_due):
    """The last unit: the submit hands out nothing and says so by None, for `assignment_next` to confirm
    (it expires timed-out units first and may find one)."""
    campaign, annotator = _campaign(n_items=1)
    first, _ = assignment_next(campaign=campaign, annotator=annotator)
    assert _submit(campaign, annotator, first).next_assignment is None
    assert assignment_next(campaign=campaign, annotator=annotator) == (None, False)


@pytest.mark.django_db
def test_without_next_nothing_is_handed_out(no_expiry_due):
    campaign, annotator = _campaign(n_items=2)
    first, _ = assignment_next(campaign=campaign, annotator=annotator)
    assert _submit(campaign, annotator, first, and_next=False).next_assignment is None
    assert Assignment.objects.filter(annotator=annotator).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_submit_whose_pick_must_wait_commits_first_and_waits_holding_no_unit(no_expiry_due):
    """The only free unit is held by another request: the submit's judgements are stored and its unit's
    lock let go before the pick waits (two such submits waiting for each other's unit would deadlock)."""
    campaign, annotator = _campaign(n_items=2)
    first, _ = assignment_next(campaign=campaign, annotator=annotator)
    other = Unit.objects.filter(campaign=campaign).exclude(pk=first.unit_id).get()
    holder = RowHolder(Unit, other.pk)  # a request in flight holding the only free unit
    holder.start()
    assert holder.holding.wait(TIMEOUT)

    def submit_then_next():  # as the API and the page do: `assignment_next` when the submit gave no unit
        result = _submit(campaign, annotator, first)
        return result, assignment_next(campaign=campaign, annotator=annotator)[0]

    thread, box = _in_thread(submit_then_next)
    try:
        _wait_until_blocked(box)
        stored = RatingJudgement.objects.filter(assignment_id=first.pk, status="complete").count()
        held = locked_elsewhere(Unit, first.unit_id)
    finally:
        holder.release.set()
        holder.join(TIMEOUT)
        thread.join(TIMEOUT)
    assert not thread.is_alive()
    if "error" in box:
        raise box["error"]
    assert stored == 1 and not held
    # The submit handed out nothing itself; once the other request let go, `assignment_next` took the unit.
    result, following = box["result"]
    assert result.next_assignment is None
    assert following is not None and following.unit_id == other.pk
