"""The assignment engine: which item an annotator judges next, and when it is done.

An assignment is one item of a campaign handed to one annotator. Each item is
handed to at most `campaign.redundancy` different annotators, never twice to
the same one. Concurrent requests are made safe by row locks on the items
(`SELECT ... FOR UPDATE SKIP LOCKED`), so two annotators asking at the same
moment get different items rather than queueing behind each other, and an
item is never given out more often than the redundancy allows.
"""
from __future__ import annotations

from django.db import transaction
from django.db.models import Count, Exists, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from annotations.models import (
    Annotator,
    Assignment,
    BestWorstJudgement,
    Campaign,
    Item,
    Output,
    PairwiseJudgement,
    RatingJudgement,
)


def _open_items(*, campaign: Campaign, annotator: Annotator) -> QuerySet[Item]:
    """Items of the campaign with a free slot that this annotator has not had.

    Correlated subqueries rather than GROUP BY: PostgreSQL refuses FOR UPDATE
    on grouped queries.
    """
    taken = (
        Assignment.objects.filter(campaign=campaign, item=OuterRef("pk"))
        .order_by()
        .values("item")
        .annotate(n=Count("id"))
        .values("n")
    )
    mine = Assignment.objects.filter(campaign=campaign, item=OuterRef("pk"), annotator=annotator)
    return (
        Item.objects.filter(dataset_id=campaign.dataset_id)
        .annotate(n_taken=Coalesce(Subquery(taken, output_field=IntegerField()), Value(0)))
        .filter(n_taken__lt=campaign.redundancy)
        .filter(~Exists(mine))
        .order_by("position", "id")
    )


def _slot_free(*, campaign: Campaign, annotator: Annotator, item: Item) -> bool:
    """Re-count under the item's lock, in a fresh statement.

    The candidate query's snapshot may predate the commit of whoever held the
    lock just before us (READ COMMITTED takes a snapshot per statement and
    does not re-check a subquery on a row that was only locked, not updated).
    """
    taken = Assignment.objects.filter(campaign=campaign, item=item)
    return taken.count() < campaign.redundancy and not taken.filter(annotator=annotator).exists()


@transaction.atomic
def assignment_next(*, campaign: Campaign, annotator: Annotator) -> tuple[Assignment | None, bool]:
    """The annotator's next unit of work in `campaign`: `(assignment, created)`.

    Returns the annotator's oldest pending assignment if there is one (a page
    reload does not skip work); otherwise hands out the first item (by
    position) that has fewer than `campaign.redundancy` assignments and none
    for this annotator. `(None, False)` when nothing is left for them.
    """
    # One request at a time per annotator, so a double click cannot create two
    # pending assignments. Different annotators do not wait for each other.
    # (`of` and a plain order: the default ordering joins the project, whose
    # row FOR UPDATE would lock too, serialising every annotator.)
    list(Annotator.objects.select_for_update(of=("self",)).filter(pk=annotator.pk).order_by().values_list("pk"))

    pending = (
        Assignment.objects.filter(campaign=campaign, annotator=annotator, status=Assignment.Status.PENDING)
        .order_by("id")
        .first()
    )
    if pending is not None:
        return pending, False

    rejected: list[int] = []
    # First pass skips items other requests hold right now; if that finds
    # nothing, the second pass waits for those locks (their holders may leave
    # a slot free when redundancy > 1), so "nothing left" is never a mere
    # artefact of timing. Waiting cannot deadlock: a holder of an item lock
    # never waits for another item.
    for skip_locked in (True, False):
        while True:
            item = (
                _open_items(campaign=campaign, annotator=annotator)
                .exclude(pk__in=rejected)
                .select_for_update(skip_locked=skip_locked, of=("self",))
                .first()
            )
            if item is None:
                break
            if _slot_free(campaign=campaign, annotator=annotator, item=item):
                assignment = Assignment(campaign=campaign, annotator=annotator, item=item)
                assignment.full_clean(validate_unique=False, validate_constraints=False)
                assignment.save()
                return assignment, True
            rejected.append(item.pk)
    return None, False


def assignment_is_complete(*, assignment: Assignment) -> bool:
    """Whether the annotator has judged every output of the item for every criterion.

    One rule for all protocols, kept simple on purpose: for each criterion of
    the campaign, each output of the item appears in at least one of this
    annotator's judgements (rated, or part of a judged pair or best-worst
    tuple). An item without outputs is complete as soon as it is opened.
    """
    campaign = assignment.campaign
    output_ids = set(Output.objects.filter(item_id=assignment.item_id).values_list("id", flat=True))
    mine = {"campaign": campaign, "annotator_id": assignment.annotator_id, "item_id": assignment.item_id}
    for criterion in campaign.criteria:
        seen: set[int] = set()
        if campaign.protocol in Campaign.RATING_PROTOCOLS:
            seen.update(
                RatingJudgement.objects.filter(**mine, criterion=criterion).values_list("output_id", flat=True)
            )
        elif campaign.protocol == Campaign.Protocol.PAIRWISE:
            for a_id, b_id in PairwiseJudgement.objects.filter(**mine, criterion=criterion).values_list(
                "output_a_id", "output_b_id"
            ):
                seen.update((a_id, b_id))
        else:
            for ids in BestWorstJudgement.objects.filter(**mine, criterion=criterion).values_list(
                "outputs", flat=True
            ):
                seen.update(ids)
        if not output_ids <= seen:
            return False
    return True


@transaction.atomic
def assignment_complete_if_judged(*, assignment: Assignment) -> Assignment:
    """Mark the assignment done once `assignment_is_complete` holds.

    Called after every judgement submitted through the API; a conditional
    update, so concurrent submissions for the same assignment are harmless.
    """
    if assignment.status != Assignment.Status.DONE and assignment_is_complete(assignment=assignment):
        Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.PENDING).update(
            status=Assignment.Status.DONE
        )
        assignment.status = Assignment.Status.DONE
    return assignment

