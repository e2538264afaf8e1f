"""An annotator's current batch: which of their units belong to it, and which may still be revised.

A batch is `Campaign.units_per_batch` units in the order the annotator finished them (the same
count `annotations.quality.services.completion_code_at_batch_end` uses: the n-th batch ends with
the annotator's (n * size)-th finished unit). Units of the batch in progress may be reopened and
resubmitted (`annotations.services.revisions.unit_revise`); once the batch is complete (its last
unit submitted) or a completion code was issued for it (nothing left after part of a batch), its
units are locked: the code the annotator pasted must stand for the answers stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from annotations import protocols, rows
from annotations.models import Annotator, Assignment, Campaign, UnitNote
from annotations.models.quality import CompletionCode, ControlJudgement


@dataclass
class Batch:
    number: int  # 1-based: "your batch n"
    size: int  # units per batch
    done: list[int] = field(default_factory=list)  # ids of this batch's finished assignments, in finishing order
    pending: int | None = None  # id of the assignment being worked on (not in `done`)
    closed: bool = False  # a completion code stands for this batch: nothing in it may change

    @property
    def revisable_ids(self) -> set[int]:
        return set() if self.closed else set(self.done)

    def slots(self, *, current_id: int | None = None) -> list[dict]:
        """The strip "1 2 3 … of N": one slot per unit done or in progress, then one "todo" slot for the
        units still to come, if any (the page draws none of them, only the "…" before "of N"): a batch of
        1,000 units made 1,000 slots on every unit page and submit (issue 45, CPU per annotator)."""
        out = []
        for position, assignment_id in enumerate(self.done, start=1):
            out.append(
                {
                    "position": position,
                    "state": "done",
                    "assignment": assignment_id,
                    "current": assignment_id == current_id,
                    "revisable": not self.closed,
                }
            )
        position = len(self.done) + 1
        if self.pending is not None and position <= self.size:
            out.append(
                {
                    "position": position,
                    "state": "pending",
                    "assignment": self.pending,
                    "current": self.pending == current_id or current_id is None,
                    "revisable": False,
                }
            )
            position += 1
        if position <= self.size:
            out.append(
                {"position": position, "state": "todo", "assignment": None, "current": False, "revisable": False}
            )
        return out


def annotator_batch(*, campaign: Campaign, annotator: Annotator | None) -> Batch:
    """The annotator's current batch, in one statement (read on every unit page and every submit):
    how many units they finished, the ones of the batch in progress (the last `done % size` in
    finishing order), their pending unit, and whether a completion code closes the batch."""

    size = max(1, campaign.units_per_batch)
    if annotator is None:
        return Batch(number=1, size=size)
    assignment = rows.table(Assignment)
    (cte, cte_params), (done, done_params), (closed, closed_params) = batch_sql(
        campaign_id=campaign.pk, annotator_id=annotator.pk, size=size
    )
    with rows.cursor() as cursor:
        cursor.execute(
            f"WITH {cte} SELECT d.n, {done}, (SELECT id FROM {assignment} WHERE campaign_id = %s AND annotator_id = %s "
            f"AND status = 'pending' ORDER BY id DESC LIMIT 1), {closed} FROM d",
            [*cte_params, *done_params, campaign.pk, annotator.pk, *closed_params],
        )
        done_count, done_ids, pending_id, closed = cursor.fetchone()
    return batch_from(size=size, done_count=done_count, done_ids=done_ids, pending_id=pending_id, closed=closed)


def batch_sql(*, campaign_id: int, annotator_id: int, size: int) -> tuple[tuple[str, list], ...]:
    """The batch's statement in parts, each (SQL, its parameters), for `annotator_batch` and for the
    hand-out that reads it with the new assignment's INSERT (`services.assignments._assignment_insert`):
    the CTE `d` (finished units), the column of the batch's finished ids (the last `d.n % size` by
    finishing time, given in finishing order) and the column "a completion code closes it" (issued
    after part of a batch, when nothing was left to hand out)."""

    assignment, code = rows.table(Assignment), rows.table(CompletionCode)
    mine = "campaign_id = %s AND annotator_id = %s"
    cte = f"d AS (SELECT count(*) AS n FROM {assignment} WHERE {mine} AND status = 'done')"
    done = (
        "(SELECT array_agg(id ORDER BY completed_at, id) FROM (SELECT id, completed_at "
        f"FROM {assignment} WHERE {mine} AND status = 'done' ORDER BY completed_at DESC, id DESC "
        "LIMIT d.n %% %s) b)"
    )
    closed = f"d.n %% %s > 0 AND EXISTS (SELECT 1 FROM {code} WHERE {mine} AND batch = d.n / %s)"
    return (
        (cte, [campaign_id, annotator_id]),
        (done, [campaign_id, annotator_id, size]),
        (closed, [size, campaign_id, annotator_id, size]),
    )


def batch_from(*, size: int, done_count: int, done_ids, pending_id: int | None, closed) -> Batch:
    index = done_count // size  # 0-based batch index
    return Batch(number=index + 1, size=size, done=list(done_ids or []), pending=pending_id, closed=bool(closed))


def assignment_answers(*, assignment: Assignment) -> list[dict]:
    """The answers stored for a finished unit, in the shape a submission sends them (output ids as
    shown with the unit; pairwise `winner` a / b / tie for the output shown first / second), for
    the page that reopens it. A control unit's answers come from quality control, as stored there."""

    campaign = assignment.campaign
    protocol = protocols.of(campaign)
    order = list(assignment.shown_order) or list(assignment.unit.outputs if assignment.unit_id else [])
    notes = _notes_answers(protocol, assignment)
    controls = list(ControlJudgement.objects.filter(assignment=assignment).order_by("-attempt", "id"))
    if controls:
        latest = controls[0].attempt
        return _control_answers(protocol, order, [c for c in controls if c.attempt == latest]) + notes
    judgements = protocol.model.objects.filter(assignment=assignment).order_by("id")
    if protocol.has_spans:
        judgements = judgements.prefetch_related("spans")
        if campaign.prefilled:
            judgements = judgements.prefetch_related("suggestion_decisions__suggestion")
    return [protocol.stored_answer(j, order=order, campaign=campaign) for j in judgements] + notes


def _notes_answers(protocol, assignment: Assignment) -> list[dict]:
    """The unit's special answers and comment (annotations.services.unit_notes) as a submission
    sends them: `{"criterion", "special"}` and `{"comment"}`. No query for a campaign offering neither."""
    if not assignment.unit_id or not protocol.notes_offered(assignment.campaign):
        return []
    key = "-".join(map(str, sorted(assignment.unit.outputs)))
    found = UnitNote.objects.filter(
        campaign_id=assignment.campaign_id, annotator_id=assignment.annotator_id, unit_key=key
    ).order_by("id")
    return [{"criterion": n.criterion, "special": n.special} if n.criterion else {"comment": n.text} for n in found]


def _control_answers(protocol, order: list[int], rows) -> list[dict]:
    """A control's answers (one record per criterion, see `Protocol.control_answer`) as a submission's."""
    return [answer for row in rows for answer in protocol.control_submission(row.criterion, row.answer or {}, order)]
