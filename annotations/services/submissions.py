"""Submitting work for an assignment: one judgement at a time, or a whole unit at once.

Both paths check that the submitter holds the assignment, that the outputs
are the unit's, and that the order they report is the order the server chose
(`Assignment.shown_order`, stored with every judgement); both take the
engine's locks (enrolment, then assignment), so a double submission, a
submission racing the timeout, or two browser tabs cannot store a unit twice.

`unit_submit` writes all judgements of a unit in one transaction with a few
bulk statements (the fast path the pages use); `judgement_submit` keeps the
one-judgement endpoints working: their judgements are `partial` until the unit
is covered, then `complete`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.http import Http404

from annotations import rows as rows_sql
from annotations.models import (
    Annotator,
    Assignment,
    Campaign,
    ErrorSpan,
    JudgementBase,
    Output,
    SpanJudgement,
    Unit,
)
from annotations.protocols import registry as protocols
from annotations.protocols.base import document_segments
from annotations.protocols.common_options import CONTEXT_DOCUMENT
from annotations.quality.services import control_answers_record, control_judgement_submit
from annotations.selectors import annotator_for_user, campaign_list, own_assignment, project_role
from annotations.selectors.controls import unit_texts
from annotations.services import judgements as checks
from annotations.services.assignment_work import (
    assignment_complete_if_judged,
    assignment_finish,
    assignment_finish_inserting,
    assignment_lock_for,
    assignment_lock_join,
    assignment_lock_own,
    assignment_reclaim,
    assignment_time_ms,
)
from annotations.services.assignments import assignment_take_in_submit, retry_on_deadlock
from annotations.services.prefill import decisions_record
from annotations.services.unit_notes import UnitNotes, unit_notes_split, unit_notes_write


def _shown_order_verify(*, assignment: Assignment, reported) -> list[int] | None:
    """The server's order; a reported order must be the same (the client only reports it back)."""
    if assignment.unit_id is None:  # assignments made before units existed: as reported
        return list(reported) if reported else None
    if reported and list(reported) != list(assignment.shown_order):
        raise ValidationError({"shown_order": "shown_order differs from the order this unit was shown in."})
    return list(assignment.shown_order)


def _assignment_for(*, annotator: Annotator, campaign: Campaign, output_ids: Sequence[int], item_id: int) -> Assignment:
    """The submitter's assignment whose unit holds these outputs (a pending one first)."""
    qs = Assignment.objects.filter(campaign=campaign, annotator=annotator)
    ids = sorted(set(output_ids))
    candidates = list(qs.filter(unit__outputs__contains=ids).order_by("-status", "-id")[:5])
    pending = [a for a in candidates if a.status == Assignment.Status.PENDING]
    if pending:
        return pending[0]
    if candidates:
        return candidates[0]
    legacy = qs.filter(unit__isnull=True, item_id=item_id).first()
    if legacy is not None:
        return legacy
    raise PermissionDenied("You have no assignment for these outputs in this campaign.")


def _require_annotator(*, user, campaign: Campaign) -> Annotator:
    if project_role(user=user, project=campaign.project) is None:
        raise Http404()
    annotator = annotator_for_user(user=user, project=campaign.project)
    if annotator is None:
        raise PermissionDenied("You have no assignment in this campaign.")
    return annotator


def judgement_submit(
    *,
    user,
    campaign_id: int,
    output_ids: Sequence[int],
    create: Callable[..., JudgementBase],
    shown_order: Sequence[int] | None = None,
    origin: str = JudgementBase.Origin.API,
) -> JudgementBase:
    """One judgement for one of the submitter's assignments.

    Resolves the campaign (404 if the user cannot see it) and the outputs
    (400 if they are not the campaign's or not of one item), checks the
    assignment (403), then writes the judgement as `partial` and completes the
    assignment once its unit is covered, all in one transaction.
    `create(campaign=, annotator=, outputs=, assignment=, shown_order=, status=, origin=, time_spent_ms=)`
    writes the judgement; its `time_spent_ms` is the server's figure for the unit so far (from
    handing out to this judgement), never the client's.
    """
    campaign = campaign_list(user=user).filter(pk=campaign_id).first()
    if campaign is None:
        raise Http404()
    outputs = {o.pk: o for o in Output.objects.filter(item__dataset_id=campaign.dataset_id, pk__in=output_ids)}
    unknown = sorted(set(output_ids) - set(outputs))
    if unknown:
        # The outputs of a control unit (annotations.quality) are not in the dataset: its answers go there.
        with transaction.atomic():
            routed = control_judgement_submit(
                user=user,
                campaign=campaign,
                output_ids=output_ids,
                create=create,
                shown_order=shown_order,
                origin=origin,
            )
        if routed is not None:
            return routed
        raise ValidationError({"output": [f"Output {i} is not part of this campaign's dataset." for i in unknown]})
    item_ids = {o.item_id for o in outputs.values()}
    if len(item_ids) != 1:
        raise ValidationError({"output": ["The outputs judged together must belong to the same item."]})
    annotator = _require_annotator(user=user, campaign=campaign)
    found = _assignment_for(annotator=annotator, campaign=campaign, output_ids=list(outputs), item_id=item_ids.pop())
    with transaction.atomic():
        assignment, enrolment = assignment_lock_for(assignment_id=found.pk, annotator=annotator)
        if assignment.status == Assignment.Status.DONE:
            raise checks.DuplicateJudgement("You already submitted this unit.")
        assignment_reclaim(assignment=assignment)
        order = _shown_order_verify(assignment=assignment, reported=shown_order)
        if order and protocols.of(campaign).option(campaign, "context") == CONTEXT_DOCUMENT:
            # A document unit: the judgement is its segment's (that item, shown with that segment's
            # outputs), as when the whole unit is submitted at once.
            segments = {s[1][0]: s for s in _segments(assignment, order).values() if s[1]}
            segment_of = {o: seg for seg in segments.values() for o in seg[1]}
            found = {segment_of[o][1][0] for o in outputs if o in segment_of}
            if len(found) == 1:
                order = segments[found.pop()][1]
        judgement = create(
            campaign=campaign,
            annotator=annotator,
            outputs=outputs,
            assignment=assignment,
            shown_order=order,
            status=JudgementBase.Status.PARTIAL,
            origin=origin,
            time_spent_ms=assignment_time_ms(assignment=assignment),
        )
        assignment_complete_if_judged(assignment=assignment, enrolment=enrolment)
    judgement.refresh_from_db(fields=["status"])
    return judgement


# --- a whole unit in one request ------------------------------------------------


@dataclass
class UnitSubmitResult:
    assignment: Assignment
    judgements: int
    # A loud gold (tutorial) unit answered wrongly: try again, with the explanation.
    retry: bool = False
    explanation: str = ""
    problems: list = field(default_factory=list)
    # With `and_next`: the next unit, handed out in the submit's transaction; None when it was not
    # (the caller then asks `assignment_next`, which also tells "nothing left").
    next_assignment: Assignment | None = None
    # The annotator's units done in the campaign once this submit commits, when the submit's own lock
    # read it (`unit_submit_join`); None: not known, ask the database.
    n_done: int | None = None


def _answer_keys(answer, index: int, allowed: set[str]) -> dict:
    if not isinstance(answer, dict):
        raise ValidationError({"judgements": [f"judgement {index}: must be an object"]})
    unknown = set(answer) - allowed
    if unknown:
        raise ValidationError({"judgements": [f"judgement {index}: unknown keys {', '.join(sorted(unknown))}"]})
    return answer


def _fail(index: int, message) -> ValidationError:
    text = "; ".join(message.messages) if isinstance(message, ValidationError) else str(message)
    return ValidationError({"judgements": [f"judgement {index}: {text}"]})


def _rows(
    *, campaign: Campaign, assignment: Assignment, answers: list, texts: dict[int, str], notes: UnitNotes | None = None
) -> list:
    """Validate the answers of a unit; return unsaved judgement rows (and spans for ESA).

    Every criterion must be answered exactly once per output (ratings, ESA)
    or once per unit (pairwise, best-worst). The rules of each answer are the
    protocol's (`check_answer`); the reason is prefixed with `judgement N:`. A criterion with a
    special answer (`notes`, annotations.services.unit_notes) needs none.
    """
    special = notes.special if notes else {}
    if not isinstance(answers, list) or (not answers and not special):
        raise ValidationError({"judgements": ["judgements must be a non-empty list"]})
    unit_outputs = list(assignment.unit.outputs)
    order = list(assignment.shown_order) or unit_outputs
    protocol = protocols.of(campaign)
    base = {
        "campaign": campaign,
        "annotator_id": assignment.annotator_id,
        "item_id": assignment.item_id,
        "shown_order": order,
        "origin": None,
        "assignment": assignment,
        "status": JudgementBase.Status.COMPLETE,
    }
    # A document unit (context=document): each answer is stored as a judgement of its own segment (the
    # output's item), shown with that segment's outputs; one statement, only for document campaigns.
    segment_of = _segments(assignment, order) if protocol.option(campaign, "context") == CONTEXT_DOCUMENT else {}
    rows, seen = [], set()
    per_output = protocol.per_output
    criteria = [c for c in campaign.criteria if c not in special]
    expected = {(c, o) for c in criteria for o in unit_outputs} if per_output else set(criteria)
    keys = {"criterion"} | protocol.answer_keys
    for index, answer in enumerate(answers, start=1):
        answer = _answer_keys(answer, index, keys)
        try:
            checked = protocol.check_answer(
                answer, campaign=campaign, criterion=answer.get("criterion"), unit_outputs=unit_outputs, texts=texts
            )
        except ValidationError as exc:
            raise _fail(index, exc) from None
        key = (checked["criterion"], checked["output"]) if per_output else checked["criterion"]
        if key in seen:
            raise _fail(index, "answers the same question twice")
        seen.add(key)
        segment = segment_of.get(checked.get("output")) if per_output else None
        if segment is not None:
            item_id, segment_order = segment
            rows.append(
                protocol.judgement_row(
                    campaign, {**base, "item_id": item_id, "shown_order": segment_order}, checked, segment_order
                )
            )
            continue
        rows.append(protocol.judgement_row(campaign, base, checked, order))
    missing = expected - seen
    if missing:
        raise ValidationError(
            {
                "judgements": [
                    f"{len(missing)} answer(s) missing: every criterion must be answered"
                    + (" for every output" if per_output else "")
                ]
            }
        )
    if protocol.magnitudes_ranked:
        # The implied ranking, per criterion, from the magnitudes.
        for criterion in campaign.criteria:
            mine = [row for row, _ in rows if row.criterion == criterion]
            for row, rank in zip(mine, checks.ranks_of([r.score for r in mine])):
                row.rank = rank
    return rows


def _segments(assignment: Assignment, order: list[int]) -> dict[int, tuple[int, list[int]]]:
    """{output id: (its item id, the outputs of its segment as shown)} of a document unit's outputs;
    empty for a unit of one segment (the unit's item and order are the segment's; no query)."""
    unit = assignment.unit
    if len(set(unit.systems)) == len(unit.systems):
        return {}
    with rows_sql.cursor() as cursor:
        cursor.execute(
            f"SELECT o.id, o.item_id FROM {rows_sql.table(Output)} o WHERE o.id = ANY(%s)", [list(unit.outputs)]
        )
        item_of = dict(cursor.fetchall())
    starts = document_segments(list(unit.systems)) + [len(unit.outputs)]
    found = {}
    for start, end in zip(starts, starts[1:]):
        segment = list(order[start:end])
        for output_id in segment:
            if output_id in item_of:
                found[output_id] = (item_of[output_id], segment)
    return found


def _output_texts(output_ids: list[int]) -> dict[int, str]:
    """The texts of a unit's outputs (ESA checks spans against them), as SQL: every ESA submit reads them."""
    with rows_sql.cursor() as cursor:
        cursor.execute(f"SELECT o.id, o.text FROM {rows_sql.table(Output)} o WHERE o.id = ANY(%s)", [list(output_ids)])
        return dict(cursor.fetchall())


def _partials_delete(model, assignment: Assignment) -> None:
    """Judgements sent one by one earlier for this assignment: replaced by the unit's answers.

    Plain DELETEs (no Django collector round trip); ESA spans first, their
    foreign key has no database-side cascade.
    """

    table = model._meta.db_table
    with connection.cursor() as cursor:
        if model is SpanJudgement:
            cursor.execute(
                f"DELETE FROM {ErrorSpan._meta.db_table} WHERE judgement_id IN "
                f"(SELECT id FROM {table} WHERE assignment_id = %s)",
                [assignment.pk],
            )
        cursor.execute(f"DELETE FROM {table} WHERE assignment_id = %s", [assignment.pk])


@retry_on_deadlock
@transaction.atomic
def unit_submit(
    *,
    annotator: Annotator,
    assignment_id: int,
    campaign_id: int | None = None,
    campaign: Campaign | None = None,
    judgements: list,
    shown_order: Sequence[int] | None = None,
    time_spent_ms: int | None = None,
    origin: str = JudgementBase.Origin.API,
    and_next: bool = False,
    listened_ms: int | None = None,
) -> UnitSubmitResult:
    """All judgements of a unit at once, atomically; completes the assignment.

    Judgements already sent one by one for this assignment are replaced (the
    unit's answers are stored once). An assignment that timed out is taken
    back if its unit still has a free slot. The time stored with the unit and
    its judgements is the server's (`assignment_time_ms`); `time_spent_ms`, the
    client's own figure, is kept on the assignment only when plausible; so is `listened_ms`, the
    milliseconds of the unit's audio the page played (issue 41).

    With `and_next`, the annotator's next unit is handed out in the same transaction, under the
    enrolment lock the submit took (`next_assignment`; see `_and_next`).
    """
    if campaign is not None:
        campaign_id = campaign.pk
    try:
        # The caller's campaign, when given (with its dataset and project loaded), is not read again.
        assignment, enrolment = assignment_lock_for(
            assignment_id=assignment_id,
            annotator=annotator,
            campaign_id=campaign_id,
            with_partials=True,
            campaign=campaign,
            with_texts=campaign is not None and protocols.of(campaign).has_spans,
        )
    except Assignment.DoesNotExist:
        raise Http404() from None
    result = _unit_submit_locked(
        assignment,
        enrolment,
        judgements=judgements,
        shown_order=shown_order,
        time_spent_ms=time_spent_ms,
        origin=origin,
        listened_ms=listened_ms,
    )
    if and_next:
        _and_next(result, enrolment, annotator=annotator)
    return result


@retry_on_deadlock
@transaction.atomic
def unit_submit_own(
    *,
    user,
    assignment_id: int,
    answer: Callable,
    time_spent_ms: int | None = None,
    origin: str = JudgementBase.Origin.API,
    and_next: bool = False,
    with_batch: bool = False,
    listened_ms: int | None = None,
) -> UnitSubmitResult:
    """`unit_submit` for the requesting account's own assignment, found and locked by one statement
    (`assignment_lock_own`): the round trip that looked it up first is saved. `answer(assignment)`
    gives (judgements, shown_order) in output ids once the assignment is known (its handles). 404
    for an assignment that is not theirs, or in a project they no longer belong to. The result's
    assignment carries its annotator, campaign (dataset, project), `member_role` and `codes_on`.
    `and_next` as `unit_submit`'s, except in campaigns that give completion codes (the code is
    worked out between the submit and the next unit); `with_batch`: a new next unit comes with the
    batch it belongs to (`current_batch`, read by its INSERT), for the page's strip."""
    found = assignment_lock_own(user=user, assignment_id=assignment_id)
    if found is None:
        # Not theirs, or not enrolled (the engine enrols at hand-out): the two-step way sorts it out.
        own = own_assignment(user=user, assignment_id=assignment_id)
        if own is None or own.member_role is None:
            raise Http404()
        judgements, shown_order = answer(own)
        result = unit_submit(
            annotator=own.annotator,
            assignment_id=own.pk,
            campaign=own.campaign,
            judgements=judgements,
            shown_order=shown_order,
            time_spent_ms=time_spent_ms,
            origin=origin,
            listened_ms=listened_ms,
        )
        result.assignment.annotator, result.assignment.campaign = own.annotator, own.campaign
        result.assignment.member_role, result.assignment.codes_on = own.member_role, own.codes_on
        return result
    assignment, enrolment = found
    if assignment.member_role is None:
        raise Http404()
    judgements, shown_order = answer(assignment)
    result = _unit_submit_locked(
        assignment,
        enrolment,
        judgements=judgements,
        shown_order=shown_order,
        time_spent_ms=time_spent_ms,
        origin=origin,
        listened_ms=listened_ms,
    )
    if and_next and not assignment.codes_on:
        _and_next(result, enrolment, annotator=assignment.annotator, with_batch=with_batch)
    return result


@retry_on_deadlock
@transaction.atomic
def unit_submit_join(
    *,
    binding: dict,
    assignment_id: int,
    answer: Callable,
    time_spent_ms: int | None = None,
    origin: str = JudgementBase.Origin.BROWSER,
    listened_ms: int | None = None,
) -> UnitSubmitResult | None:
    """`unit_submit_own` for a join session (`binding`, annotations.studies.session): its assignment
    found, checked as the session's and locked by one statement (`assignment_lock_join`), submitted,
    and the next unit handed out in the same transaction (with its batch, for the page's strip)
    unless this unit ends the visitor's batch (a join visitor does one: `units_per_batch`; its
    completion code, if the campaign gives codes, is worked out after the commit). The result says `n_done` (read
    under the lock), so the caller need not read the enrolment again. None when the one statement
    finds nothing (not theirs, the link revoked, not enrolled): the caller takes the two-step way,
    which refuses or sorts it out as ever."""
    found = assignment_lock_join(binding=binding, assignment_id=assignment_id)
    if found is None:
        return None
    assignment, enrolment = found
    judgements, shown_order = answer(assignment)
    done_before = enrolment.n_done
    result = _unit_submit_locked(
        assignment,
        enrolment,
        judgements=judgements,
        shown_order=shown_order,
        time_spent_ms=time_spent_ms,
        origin=origin,
        listened_ms=listened_ms,
    )
    if result.retry or assignment.status != Assignment.Status.DONE:
        return result
    result.n_done = done_before + 1  # the finishing statement's count, on the row locked above
    if result.n_done < max(1, assignment.campaign.units_per_batch):
        # Mid-batch: no completion code to work out first (one is issued at a batch's end only).
        _and_next(result, enrolment, annotator=assignment.annotator, with_batch=True)
    return result


def _and_next(result: UnitSubmitResult, enrolment, *, annotator: Annotator, with_batch: bool = False) -> None:
    """Hand out the next unit in the submit's transaction, when the submit finished a regular unit
    (not a control, whose answers can change what quality control plans next; not a tutorial to
    answer again) under the lock of its enrolment."""
    assignment = result.assignment
    # `pending_id`: read by the one-statement locks only (assignment_work._locked_columns); the rare
    # two-statement lock leaves the pick to `assignment_next`.
    if (
        result.retry
        or not hasattr(enrolment, "pending_id")
        or assignment.status != Assignment.Status.DONE
        or assignment.unit.kind != Unit.Kind.REGULAR
    ):
        return
    result.next_assignment = assignment_take_in_submit(
        campaign=assignment.campaign, annotator=annotator, enrolment=enrolment, with_batch=with_batch
    )


LISTENED_MAX_MS = 24 * 3600 * 1000
LISTENED_MAX_SPEED = 1.5  # the player's fastest speed (static/js/media_player.js)


def listened_check(value) -> int | None:
    """The page's count of audio played (ms): a whole number from 0 to a day, or absent (None)."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= LISTENED_MAX_MS:
        raise ValidationError({"listened_ms": ["listened_ms must be a whole number of milliseconds from 0 to a day."]})
    return value


LISTENED_SLACK_MS = 2000  # the player's ticks and the request's way: a little more than the clock allows


def listened_kept(listened_ms: int | None, *, time_ms: int) -> int | None:
    """The page's count of audio played (checked by `listened_check`), kept only when plausible: no
    more than `time_ms` (the time the unit was open to the annotator) allows at the player's fastest
    speed. None: not kept. The one rule of the first submit and of a revision."""
    if listened_ms is not None and listened_ms > time_ms * LISTENED_MAX_SPEED + LISTENED_SLACK_MS:
        return None
    return listened_ms


def _unit_submit_locked(
    assignment: Assignment, enrolment, *, judgements: list, shown_order, time_spent_ms, origin: str, listened_ms=None
) -> UnitSubmitResult:
    """The submit once the assignment and its enrolment are locked (`unit_submit`, `unit_submit_own`)."""
    if assignment.unit_id is None:
        raise ValidationError("This assignment predates units; submit its judgements one by one.")
    if assignment.status == Assignment.Status.DONE:
        raise checks.DuplicateJudgement("You already submitted this unit.")
    campaign = assignment.campaign
    try:
        time_spent_ms = checks.time_spent_check(time_spent_ms)
    except ValidationError as exc:
        raise ValidationError({"time_spent_ms": exc.messages}) from None
    listened_ms = listened_check(listened_ms)
    _shown_order_verify(assignment=assignment, reported=shown_order)
    texts = {}
    control_texts = unit_texts(unit=assignment.unit)  # quality control: None for a regular unit
    if protocols.of(campaign).has_spans:
        # The texts came with the lock when the caller gave the campaign (assignment_lock_for).
        texts = control_texts or assignment.output_texts or _output_texts(assignment.unit.outputs)
    judgements, notes = unit_notes_split(campaign, judgements)
    rows = _rows(campaign=campaign, assignment=assignment, answers=judgements, texts=texts, notes=notes)
    assignment_reclaim(assignment=assignment)
    server_ms = assignment_time_ms(assignment=assignment)
    listened_ms = listened_kept(listened_ms, time_ms=server_ms)
    if control_texts is not None:
        # A control unit: the answers go to quality control, never to the judgement tables.
        checked = control_answers_record(assignment=assignment, rows=rows, time_spent_ms=server_ms, origin=origin)
        if checked.retry:
            return UnitSubmitResult(
                assignment=assignment,
                judgements=0,
                retry=True,
                explanation=checked.explanation,
                problems=checked.problems,
            )
        assignment_finish(
            assignment=assignment,
            enrolment=enrolment,
            time_spent_ms=time_spent_ms,
            server_ms=server_ms,
            listened_ms=listened_ms,
        )
        if notes:  # kept as on a regular unit (a loud gold unit's failed try keeps none: it is answered again)
            unit_notes_write(assignment=assignment, notes=notes)
        return UnitSubmitResult(assignment=assignment, judgements=len(rows))

    protocol = protocols.of(campaign)
    if assignment.has_partials:
        _partials_delete(protocol.model, assignment)
    # The rows and the assignment's finishing updates go in one statement (assignment_finish_inserting).
    stored = unit_rows_insert(
        protocol,
        rows,
        origin=origin,
        time_spent_ms=server_ms,
        then="skip this unit",
        finish=functools.partial(
            assignment_finish_inserting,
            assignment=assignment,
            enrolment=enrolment,
            time_spent_ms=time_spent_ms,
            server_ms=server_ms,
            listened_ms=listened_ms,
        ),
    )
    if notes:
        unit_notes_write(assignment=assignment, notes=notes)
    return UnitSubmitResult(assignment=assignment, judgements=stored)


def unit_rows_insert(protocol, rows, *, origin: str, time_spent_ms: int | None, then: str, finish=None) -> int:
    """Write a unit's checked judgement rows (and their spans) with one INSERT each: the
    submit and the revision of a unit alike. `then` ends the message for a judgement the
    annotator already has (e.g. imported under their account). `finish(model, instances)`,
    when given, writes the rows in place of the plain INSERT (the submit's, with the
    assignment's finishing updates). Returns the rows stored."""
    instances = []
    for row, _ in rows:
        row.origin = origin
        row.time_spent_ms = time_spent_ms
        instances.append(row)
    try:
        # No savepoint: on a refusal the whole request rolls back anyway.
        (finish or rows_sql.insert)(protocol.model, instances)
    except IntegrityError as exc:
        if any(name in str(exc) for name in checks.UNIQUE_CONSTRAINTS):
            raise checks.DuplicateJudgement(
                "Some of these outputs were already judged by you in this campaign (e.g. imported under your "
                f"account); {then}."
            ) from None
        raise ValidationError(f"The database refused the judgements: {str(exc).splitlines()[0]}") from None
    if protocol.has_spans:
        rows_sql.insert(ErrorSpan, [ErrorSpan(judgement=row, **span) for row, spans in rows for span in spans])
        if instances and instances[0].campaign.prefilled:
            decisions_record(campaign=instances[0].campaign, judgements=instances)
    return len(instances)
