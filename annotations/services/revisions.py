"""Revising a unit already submitted, while its batch is still open.

An annotator may reopen any finished unit of the batch they are working on and send its answers
again: the new answers replace that annotator's judgements of that assignment in one
transaction. The assignment stays done and is not counted again (unit and enrolment `n_done`
are untouched, so a unit keeps exactly k judgements). Once the batch is complete, or a
completion code was issued for it, its units are locked (`RevisionLocked`, a 400).

The answers are checked exactly as a first submission's (`submissions._rows`, the protocol's
rules); a control unit's answers go to quality control as on a first submission, replacing the
control's accepted answer, so a revision looks the same for every unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from annotations.models import Annotator, Assignment, Campaign, JudgementBase
from annotations.models.quality import ControlJudgement
from annotations.protocols import registry as protocols
from annotations.quality.services import control_answers_record
from annotations.selectors.batches import annotator_batch
from annotations.selectors.controls import unit_texts
from annotations.services.assignment_work import assignment_lock_for
from annotations.services.assignments import retry_on_deadlock
from annotations.services.submissions import (  # noqa: I001
    LISTENED_MAX_MS,
    UnitSubmitResult,
    _output_texts,
    _partials_delete,
    _rows,
    _shown_order_verify,
    listened_check,
    listened_kept,
    unit_rows_insert,
)

# The first submission's checks and statements, shared so both paths apply one set of rules.
from annotations.services.unit_notes import unit_notes_split, unit_notes_write
from workbench.exceptions import DomainError


class RevisionLocked(DomainError):
    """The unit's batch is complete (or was never this annotator's current one): it can no longer change."""


LOCKED_MESSAGE = (
    "This unit's batch is complete, so its answers can no longer be changed. "
    "Only units of the batch you are working on can be revised."
)


def _control_answers_replace(*, assignment: Assignment, rows: list, time_spent_ms: int | None, origin: str) -> int:
    """A control unit's new answers replace its accepted ones (earlier failed tutorial tries stay)."""

    mine = ControlJudgement.objects.filter(assignment=assignment)
    latest = mine.order_by("-attempt").values_list("attempt", flat=True).first()
    if latest is not None:
        mine.filter(attempt=latest).delete()
    checked = control_answers_record(assignment=assignment, rows=rows, time_spent_ms=time_spent_ms, origin=origin)
    if checked.retry:
        # A tutorial unit revised to a wrong answer: refused (the transaction rolls back, the old answer stays).
        raise ValidationError(
            ["Not the expected answer. " + (checked.explanation or "")] + [str(p) for p in checked.problems]
        )
    return checked.judgements


@retry_on_deadlock
@transaction.atomic
def unit_revise(
    *,
    annotator: Annotator,
    assignment_id: int,
    campaign: Campaign | None = None,
    judgements: list,
    shown_order: Sequence[int] | None = None,
    origin: str = JudgementBase.Origin.API,
    listened_ms: int | None = None,
) -> UnitSubmitResult:
    """Replace the answers of one of the annotator's finished units of their open batch.

    Same body as a first submission; 404 for someone else's assignment, 400 for a unit not yet
    submitted (submit it instead), for a locked batch and for any answer the protocol refuses.
    The time spent stays the first submission's (measured then); the judgements keep it.
    `listened_ms`, the audio played while revising, is checked as on a first submission and added to
    the unit's listening time when plausible for the time since its answers were last stored (the
    revision page measures no time of its own); written by the statement that marks the revision.
    """
    try:
        assignment, _ = assignment_lock_for(
            assignment_id=assignment_id, annotator=annotator, campaign_id=campaign.pk if campaign is not None else None
        )
    except Assignment.DoesNotExist:
        raise Http404() from None
    if campaign is not None:
        assignment.campaign = campaign
    campaign = assignment.campaign
    if assignment.unit_id is None:
        raise ValidationError("This assignment predates units; it cannot be revised.")
    if assignment.status != Assignment.Status.DONE:
        raise ValidationError("This unit is not submitted yet: submit it instead of revising it.")
    # Read under the enrolment lock assignment_lock_for took: no submit of this annotator can end the batch meanwhile.
    if assignment.pk not in annotator_batch(campaign=campaign, annotator=annotator).revisable_ids:
        raise RevisionLocked(LOCKED_MESSAGE)
    _shown_order_verify(assignment=assignment, reported=shown_order)
    listened_ms = listened_check(listened_ms)
    protocol = protocols.of(campaign)
    control_texts = unit_texts(unit=assignment.unit)  # quality control: None for a regular unit
    texts = {}
    if protocol.has_spans:
        texts = control_texts or _output_texts(assignment.unit.outputs)
    judgements, notes = unit_notes_split(campaign, judgements)
    rows = _rows(campaign=campaign, assignment=assignment, answers=judgements, texts=texts, notes=notes)
    time_spent_ms = assignment.time_spent_ms
    now = timezone.now()
    changes: dict = {"updated_at": now}
    since_ms = max(0, (now - assignment.updated_at) // timedelta(milliseconds=1)) if assignment.updated_at else 0
    listened_ms = listened_kept(listened_ms, time_ms=since_ms)
    if listened_ms:
        # Added to what the unit's earlier visits played (the row is locked: no other writer meanwhile).
        changes["listened_ms"] = min((assignment.listened_ms or 0) + listened_ms, LISTENED_MAX_MS)
    Assignment.objects.filter(pk=assignment.pk).update(**changes)
    for field, value in changes.items():
        setattr(assignment, field, value)
    if control_texts is not None:
        stored = _control_answers_replace(assignment=assignment, rows=rows, time_spent_ms=time_spent_ms, origin=origin)
        unit_notes_write(assignment=assignment, notes=notes, replace=True)
        return UnitSubmitResult(assignment=assignment, judgements=stored)

    _partials_delete(protocol.model, assignment)  # every judgement of this assignment (spans first)
    stored = unit_rows_insert(
        protocol, rows, origin=origin, time_spent_ms=time_spent_ms, then="this unit cannot be revised"
    )
    unit_notes_write(assignment=assignment, notes=notes, replace=True)
    return UnitSubmitResult(assignment=assignment, judgements=stored)
