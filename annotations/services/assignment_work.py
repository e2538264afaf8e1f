"""Work on an assignment once it is handed out: lock it for a submit, take it back after a
timeout, release (skip) it, save a draft, finish it, and complete it once every answer is in.

Lock order as in `annotations.services.assignments`: enrolment, then assignment, then unit.

Time on a unit is measured here, on the server, never taken from the client: a unit is being
worked on from the moment it is handed out, resumed (a reload) or taken back (after a release or
a timeout) until it is submitted, released or resumed again (`active_since`); the closed stretches
add up in `server_time_ms`, and `assignment_time_ms` is the figure so far. A stretch counts up to
the unit's deadline at most (`expires_at`, renewed by every hand-out, resume and draft save): past
it the unit was given up. The figure a client reports is kept apart (`client_time_ms`) and only
when it is no more than the server's.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotations import protocols, rows
from annotations.allocation.services import allocation_check_if_due
from annotations.models import (
    Annotator,
    Assignment,
    Campaign,
    Dataset,
    Enrolment,
    JoinLink,
    JoinParticipant,
    JudgementBase,
    Membership,
    Output,
    Project,
    Unit,
)
from annotations.protocols import registry
from annotations.selectors.controls import completion_codes_on_sql, controls_possible_sql
from annotations.services.assignments import (
    JUDGEMENT_MODELS,
    MAX_TIME_MS,
    _enrolment_select,
    _expires_at,
    _judgements_mark,
    _units_free,
    output_texts_sql,
    retry_on_deadlock,
)
from annotations.services.figures import figures_changed
from annotations.timing import controls_in_play


def assignment_lock_for(
    *,
    assignment_id: int,
    annotator: Annotator,
    campaign_id: int | None = None,
    with_partials: bool = False,
    campaign: Campaign | None = None,
    with_texts: bool = False,
) -> tuple[Assignment, Enrolment]:
    """Lock the annotator's enrolment, then their assignment (the engine's lock order).

    The assignment comes with its campaign (the caller's `campaign` when given: its row is then not
    read again) and unit; with `with_partials`, it also says (`has_partials`) whether judgements
    were already stored for it one by one. Written as SQL (`annotations.rows`): every submission
    runs it. With `with_texts` and the caller's `campaign`, the texts of the unit's outputs come
    along (`output_texts`, {id: text}; ESA checks spans against them), else `output_texts` is None.
    """
    if campaign is not None:
        campaign_id = campaign.pk
    if campaign_id is None:
        campaign_id = (
            Assignment.objects.filter(pk=assignment_id, annotator=annotator)
            .values_list("campaign_id", flat=True)
            .first()
        )
    if campaign_id is None:
        raise Assignment.DoesNotExist()
    if campaign is not None:
        found = _lock_both(
            assignment_id=assignment_id,
            annotator=annotator,
            campaign=campaign,
            with_partials=with_partials,
            with_texts=with_texts,
        )
        if found is not None:
            return found
    with rows.cursor() as cursor:
        # Whether the campaign can hand out controls rides along (annotations.timing: its unit
        # answers are held to a floor, so a control's extra work cannot be timed).
        cursor.execute(
            _enrolment_select(extra=f", {controls_possible_sql('e.campaign_id')}"), [campaign_id, annotator.pk]
        )
        row = cursor.fetchone()
        enrolment = rows.from_row(Enrolment, row) if row is not None else None
        if row is not None:
            controls_in_play(row[-1])
        partials = _partials_sql(with_partials)
        cursor.execute(
            f"SELECT {rows.columns(Assignment, 'a')}, {rows.columns(Campaign, 'c')}, {rows.columns(Unit, 'u')}, "
            f"{partials} FROM {rows.table(Assignment)} a JOIN {rows.table(Campaign)} c ON c.id = a.campaign_id "
            f"LEFT JOIN {rows.table(Unit)} u ON u.id = a.unit_id "
            "WHERE a.id = %s AND a.annotator_id = %s AND a.campaign_id = %s FOR UPDATE OF a",
            [assignment_id, annotator.pk, campaign_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise Assignment.DoesNotExist()
    assignment = rows.from_row(Assignment, row)
    # The caller's campaign when given (this path is then the rare one: not enrolled, or not theirs).
    assignment.campaign = campaign or rows.from_row(Campaign, row, rows.width(Assignment))
    unit = rows.from_row(Unit, row, rows.width(Assignment) + rows.width(Campaign))
    if unit is not None:
        assignment.unit = unit
    assignment.has_partials = bool(row[-1])
    assignment.output_texts = None
    return assignment, enrolment


def _partials_sql(with_partials: bool) -> str:
    return (
        " OR ".join(
            f"EXISTS (SELECT 1 FROM {rows.table(model)} j WHERE j.assignment_id = a.id)" for model in JUDGEMENT_MODELS
        )
        if with_partials
        else "NULL"
    )


@functools.cache
def _lock_both_sql(with_partials: bool, with_texts: bool = False) -> str:
    """The enrolment and the assignment locked by one statement, in the engine's order: PostgreSQL
    locks the rows of `FOR UPDATE OF e, a` in that order (the order of the clause), as the two
    statements did one after the other; with `with_texts`, the unit's output texts as JSON."""
    texts = f"{output_texts_sql('u')}::text" if with_texts else "NULL"
    return (
        f"SELECT {_locked_columns(texts, with_partials)} "
        f"FROM {rows.table(Enrolment)} e JOIN {rows.table(Assignment)} a ON a.campaign_id = e.campaign_id "
        f"AND a.annotator_id = e.annotator_id LEFT JOIN {rows.table(Unit)} u ON u.id = a.unit_id "
        "WHERE e.campaign_id = %s AND e.annotator_id = %s AND a.id = %s FOR UPDATE OF e, a"
    )


def _locked_columns(texts: str, with_partials: bool) -> str:
    """The columns both one-statement locks begin with (`_lock_both_sql`, `_own_lock_sql`), read by
    `_locked_from_row`: enrolment, whether controls are possible, the annotator's other pending
    assignment (oldest first, as `enrolment_lock` finds it: the submit can then hand out the next unit
    under the same lock, `assignment_take_in_submit`), assignment, unit, output texts (`texts`, an SQL
    expression) and whether partial judgements exist."""
    return (
        f"{rows.columns(Enrolment, 'e')}, {controls_possible_sql('e.campaign_id')}, "
        f"(SELECT o.id FROM {rows.table(Assignment)} o WHERE o.campaign_id = e.campaign_id "
        f"AND o.annotator_id = e.annotator_id AND o.status = '{Assignment.Status.PENDING.value}' "
        "AND o.id <> a.id ORDER BY o.seq, o.id LIMIT 1), "
        f"{rows.columns(Assignment, 'a')}, {rows.columns(Unit, 'u')}, {texts}, {_partials_sql(with_partials)}"
    )


def _locked_from_row(row) -> tuple[Assignment, Enrolment, int]:
    """The assignment (with unit, `output_texts`, `has_partials`) and enrolment (with `qc_possible` and
    the other `pending_id`, as `enrolment_lock` gives them) from a row that begins with
    `_locked_columns`, and where the row's other columns begin; says whether controls are in play."""
    enrolment = rows.from_row(Enrolment, row)
    at = rows.width(Enrolment)
    controls_in_play(row[at])
    enrolment.qc_possible, enrolment.pending_id = row[at], row[at + 1]
    assignment = rows.from_row(Assignment, row, at + 2)
    at += 2 + rows.width(Assignment)
    unit = rows.from_row(Unit, row, at)
    if unit is not None:
        assignment.unit = unit
    at += rows.width(Unit)
    texts = json.loads(row[at]) if row[at] else None
    assignment.output_texts = {int(k): v for k, v in texts.items()} if texts else None
    assignment.has_partials = bool(row[at + 1])
    return assignment, enrolment, at + 2


def _lock_both(
    *, assignment_id: int, annotator: Annotator, campaign: Campaign, with_partials: bool, with_texts: bool
) -> tuple[Assignment, Enrolment] | None:
    """`assignment_lock_for` in one round trip for the usual case (enrolled, and the assignment is
    theirs in the campaign); None otherwise, for the two statements to sort out."""
    with rows.cursor() as cursor:
        cursor.execute(_lock_both_sql(with_partials, with_texts), [campaign.pk, annotator.pk, assignment_id])
        row = cursor.fetchone()
    if row is None:
        return None
    assignment, enrolment, _ = _locked_from_row(row)
    assignment.campaign = campaign
    return assignment, enrolment


def _own_lock_sql() -> str:
    return _found_lock_sql("own")


def _span_protocols() -> tuple[str, ...]:
    # Keyed by the span protocols' names: the registry is a setting (a test may add a protocol).
    return tuple(name for name, protocol in registry.protocols().items() if protocol.has_spans)


def _found_lock_sql(who: str) -> str:
    return _found_lock_sql_for(who, _span_protocols())


# Who the assignment must belong to, and the role column, per way of finding it: the requesting
# account's (`own`: parameters user, assignment, user), or a join session's (`join`: parameters
# assignment, annotator, campaign, participant, link), read as `access.request_annotator` checks a join
# visitor: the session's annotator (an imported one of the campaign's project), its participant in the
# campaign, and the link of the visit still live.
_FOUND_BY = {
    "own": (
        f"(SELECT m.role FROM {rows.table(Membership)} m WHERE m.project_id = p.id AND m.user_id = %s "
        "ORDER BY m.id LIMIT 1)",
        "a.id = %s AND an.user_id = %s",
    ),
    "join": (
        "NULL",
        "a.id = %s AND a.annotator_id = %s AND a.campaign_id = %s AND an.project_id = d.project_id "
        f"AND an.namespace = '{Annotator.Namespace.IMPORT.value}' "
        f"AND EXISTS (SELECT 1 FROM {rows.table(JoinParticipant)} jp WHERE jp.id = %s AND jp.annotator_id = an.id "
        "AND jp.campaign_id = c.id) "
        f"AND EXISTS (SELECT 1 FROM {rows.table(JoinLink)} l WHERE l.id = %s AND l.campaign_id = c.id "
        "AND l.revoked_at IS NULL)",
    ),
}


@functools.cache
def _found_lock_sql_for(who: str, span_protocols: tuple[str, ...]) -> str:
    """`_lock_both_sql` for an assignment found by who asks for it (`_FOUND_BY`) rather than by the
    campaign and annotator, with what the two-step way read in statements of its own before the
    submit's transaction: the campaign, dataset, project and annotator, the user's role in the project
    (`own`) and whether the campaign gives completion codes. The same lock order (`FOR UPDATE OF e, a`:
    enrolment first, tests/annotations/services/test_lock_order.py); the output texts only for the
    protocols that check spans against them."""

    role, where = _FOUND_BY[who]
    spans = ", ".join(f"'{name}'" for name in span_protocols)
    texts = f"CASE WHEN c.protocol IN ({spans}) THEN {output_texts_sql('u')}::text END" if spans else "NULL"
    return (
        f"SELECT {_locked_columns(texts, True)}, {rows.columns(Campaign, 'c')}, {rows.columns(Dataset, 'd')}, "
        f"{rows.columns(Project, 'p')}, {rows.columns(Annotator, 'an')}, {role}, "
        f"{completion_codes_on_sql('c.id')} "
        f"FROM {rows.table(Enrolment)} e JOIN {rows.table(Assignment)} a ON a.campaign_id = e.campaign_id "
        f"AND a.annotator_id = e.annotator_id JOIN {rows.table(Annotator)} an ON an.id = a.annotator_id "
        f"JOIN {rows.table(Campaign)} c ON c.id = a.campaign_id "
        f"JOIN {rows.table(Dataset)} d ON d.id = c.dataset_id JOIN {rows.table(Project)} p ON p.id = d.project_id "
        f"LEFT JOIN {rows.table(Unit)} u ON u.id = a.unit_id "
        f"WHERE {where} FOR UPDATE OF e, a"
    )


def assignment_lock_own(*, user, assignment_id: int) -> tuple[Assignment, Enrolment] | None:
    """The user's own assignment and its enrolment, locked (enrolment first) by one statement, as
    `assignment_lock_for` locks them, the assignment with what `selectors.own_assignment` gives:
    campaign (dataset, project), annotator, `member_role` (None once no longer a member; a
    superuser is an owner) and `codes_on`; `has_partials` and `output_texts` as `_lock_both`. None
    when it is not theirs, or they are not enrolled (the caller then takes the two-step way)."""

    if not user.is_authenticated:
        return None
    found = _found_lock("own", [user.pk, assignment_id, user.pk])
    if found is not None:
        assignment = found[0]
        assignment.member_role = Membership.Role.OWNER if user.is_superuser else assignment.member_role
    return found


def assignment_lock_join(*, binding: dict, assignment_id: int) -> tuple[Assignment, Enrolment] | None:
    """A join session's assignment and its enrolment, locked as `assignment_lock_own` locks a member's,
    by one statement that also checks what `access.request_annotator` checks of a join visitor (the
    session's annotator and participant in the assignment's campaign, the link of the visit not
    revoked): the round trips that read the assignment, then the annotator, before the submit's
    transaction are saved. The assignment carries its campaign (dataset, project), annotator and
    `codes_on` (`member_role` None). None when any check fails or they are not enrolled: the caller
    then takes the two-step way, which refuses as it always has."""

    return _found_lock(
        "join",
        [assignment_id, binding["annotator"], binding["campaign"], binding["participant"], binding["link"]],
    )


def _found_lock(who: str, params: list) -> tuple[Assignment, Enrolment] | None:
    with rows.cursor() as cursor:
        cursor.execute(_found_lock_sql(who), params)
        row = cursor.fetchone()
    if row is None:
        return None
    assignment, enrolment, at = _locked_from_row(row)
    campaign = rows.from_row(Campaign, row, at)
    at += rows.width(Campaign)
    campaign.dataset = rows.from_row(Dataset, row, at)
    at += rows.width(Dataset)
    campaign.dataset.project = rows.from_row(Project, row, at)
    at += rows.width(Project)
    assignment.campaign, assignment.annotator = campaign, rows.from_row(Annotator, row, at)
    assignment.member_role, assignment.codes_on = row[-2:]
    return assignment, enrolment


def assignment_time_ms(*, assignment: Assignment, now: datetime | None = None) -> int:
    """The milliseconds spent on the assignment until `now`, as the server measured them: the closed
    stretches plus the open one, counted up to the deadline at most (see the module's docstring)."""
    total = assignment.server_time_ms or 0
    if assignment.active_since is not None:
        end = now or timezone.now()
        if assignment.expires_at is not None:
            end = min(end, assignment.expires_at)
        total += max(0, (end - assignment.active_since) // timedelta(milliseconds=1))
    return min(total, MAX_TIME_MS)


def _client_time(time_spent_ms: int | None, server_ms: int) -> int | None:
    """A client's own figure, kept as extra data only when plausible: a whole number of milliseconds,
    no more than the server measured (the client cannot have worked longer than it held the unit)."""
    if isinstance(time_spent_ms, int) and not isinstance(time_spent_ms, bool) and 0 <= time_spent_ms <= server_ms:
        return time_spent_ms
    return None


def assignment_reclaim(*, assignment: Assignment) -> None:
    """Take back an expired or released assignment if its unit still has a free slot.

    For an annotator who comes back after the timeout: if nobody took the
    slot meanwhile, their work still counts. Raises ValidationError otherwise.
    """
    if assignment.status == Assignment.Status.PENDING:
        return
    if assignment.status == Assignment.Status.DONE:
        raise ValidationError("This unit is already submitted.")
    taken = Unit.objects.filter(pk=assignment.unit_id, n_taken__lt=F("redundancy")).update(n_taken=F("n_taken") + 1)
    if not taken:
        raise ValidationError(
            "This unit timed out and was handed to another annotator meanwhile; your answers were kept "
            "but will not count. Please continue with the next unit."
        )
    # Its time: the stretch before the timeout (up to the deadline) is closed; a new one starts now.
    now = timezone.now()
    assignment.server_time_ms = assignment_time_ms(assignment=assignment, now=now)
    assignment.status, assignment.active_since = Assignment.Status.PENDING, now
    assignment.expires_at = _expires_at(assignment.campaign, now)
    Assignment.objects.filter(pk=assignment.pk).update(
        status=assignment.status,
        expires_at=assignment.expires_at,
        active_since=now,
        server_time_ms=assignment.server_time_ms,
        updated_at=now,
    )
    _judgements_mark([assignment.pk], JudgementBase.Status.PARTIAL)


@retry_on_deadlock
@transaction.atomic
def assignment_release(*, assignment_id: int, annotator: Annotator) -> Assignment:
    """Give a pending assignment back (skip the unit): its slot returns to the
    pool, judgements already sent for it are kept as abandoned, and the
    annotator will not be given this unit again."""
    assignment, _ = assignment_lock_for(assignment_id=assignment_id, annotator=annotator)
    if assignment.status != Assignment.Status.PENDING:
        return assignment
    now = timezone.now()
    # The time spent so far is kept: if the annotator takes the unit back, it counts on from there.
    assignment.server_time_ms = assignment_time_ms(assignment=assignment, now=now)
    assignment.status, assignment.active_since = Assignment.Status.RELEASED, None
    Assignment.objects.filter(pk=assignment.pk).update(
        status=assignment.status, updated_at=now, active_since=None, server_time_ms=assignment.server_time_ms
    )
    if assignment.unit_id is not None:
        _units_free({assignment.unit_id: 1})
    _judgements_mark([assignment.pk], JudgementBase.Status.ABANDONED)
    return assignment


def assignment_finish(
    *,
    assignment: Assignment,
    enrolment: Enrolment | None,
    time_spent_ms: int | None = None,
    server_ms: int | None = None,
    listened_ms: int | None = None,
) -> None:
    """Mark a pending assignment done (caller holds its lock) and count it
    (unit and enrolment `n_done`): one statement, not three.

    Its `time_spent_ms` is the server's figure (`server_ms`, else measured now); the client's own
    `time_spent_ms` is kept as `client_time_ms` only when plausible (`_client_time`)."""
    ctes, params, update, update_params, adaptive, done = _finish_parts(
        assignment=assignment,
        enrolment=enrolment,
        time_spent_ms=time_spent_ms,
        server_ms=server_ms,
        listened_ms=listened_ms,
    )
    with rows.cursor() as cursor:
        cursor.execute(
            f"WITH {', '.join(ctes)} {update}" + (" RETURNING (SELECT n_judged FROM c)" if adaptive else ""),
            params + update_params,
        )
        n_judged = cursor.fetchone()[0] if adaptive else None
    done(n_judged)


def assignment_finish_inserting(
    model,
    instances: list,
    *,
    assignment: Assignment,
    enrolment: Enrolment | None,
    time_spent_ms: int | None = None,
    server_ms: int | None = None,
    listened_ms: int | None = None,
) -> None:
    """`assignment_finish` and the unit's judgement rows (`rows.insert(model, instances)`) in one
    statement: the finishing updates as data-modifying CTEs before the INSERT, one round trip
    fewer on every submit. All or nothing, as the two statements were in the submit's transaction."""
    if not instances:
        assignment_finish(
            assignment=assignment,
            enrolment=enrolment,
            time_spent_ms=time_spent_ms,
            server_ms=server_ms,
            listened_ms=listened_ms,
        )
        return
    ctes, params, update, update_params, adaptive, done = _finish_parts(
        assignment=assignment,
        enrolment=enrolment,
        time_spent_ms=time_spent_ms,
        server_ms=server_ms,
        listened_ms=listened_ms,
    )
    insert, insert_params = rows.insert_sql(model, instances)
    params = params + update_params + insert_params
    sql = f"WITH {', '.join([*ctes, f'a AS ({update})'])} {insert}" + (", (SELECT n_judged FROM c)" if adaptive else "")
    # The server binds at most 65,535 parameters: a larger unit binds on the client (rows.insert does the same).

    with rows.cursor() if len(params) <= 65535 else connection.cursor() as cursor:
        cursor.execute(sql, params)
        returned = cursor.fetchall()
    rows.saved(instances, [(row[0],) for row in returned])
    done(returned[0][1] if adaptive else None)


def _finish_parts(
    *,
    assignment: Assignment,
    enrolment: Enrolment | None,
    time_spent_ms: int | None,
    server_ms: int | None,
    listened_ms: int | None = None,
):
    """The finishing statement's pieces: the counting CTEs and their parameters, the assignment's
    UPDATE and its parameters, whether adaptive allocation counts the unit (CTE `c`), and what to do
    once it ran (given the campaign's new `n_judged`, or None)."""
    now = timezone.now()
    if server_ms is None:
        server_ms = assignment_time_ms(assignment=assignment, now=now)
    client_ms = _client_time(time_spent_ms, server_ms)
    unit_id, enrolment_id = assignment.unit_id, (enrolment.pk if enrolment is not None else None)
    a, u, e = Assignment._meta.db_table, Unit._meta.db_table, Enrolment._meta.db_table
    # Adaptive allocation counts the campaign's completed regular units in the same statement, to know
    # when its next check is due (annotations.allocation.services); other policies do not touch the row.
    adaptive = assignment.campaign.allocation == Campaign.Allocation.ADAPTIVE
    ctes = [
        f"u AS (UPDATE {u} SET n_done = n_done + 1 WHERE id = %s)",
        f"e AS (UPDATE {e} SET n_done = n_done + 1 WHERE id = %s)",
    ]
    params = [unit_id, enrolment_id]
    if adaptive:
        ctes.append(
            f"c AS (UPDATE {Campaign._meta.db_table} SET n_judged = n_judged + 1 WHERE id = %s AND EXISTS "
            f"(SELECT 1 FROM {u} WHERE id = %s AND kind = 'regular') RETURNING n_judged)"
        )
        params += [assignment.campaign_id, unit_id]
    update = (
        f"UPDATE {a} SET status = %s, completed_at = %s, updated_at = %s, time_spent_ms = %s, "
        "server_time_ms = %s, client_time_ms = %s, listened_ms = %s, active_since = NULL, draft = '{}'::jsonb "
        "WHERE id = %s"
    )
    update_params = [Assignment.Status.DONE, now, now, server_ms, server_ms, client_ms, listened_ms, assignment.pk]

    def done(n_judged) -> None:
        # The figures pages show are computed again on a worker once this commits (debounced).
        transaction.on_commit(functools.partial(figures_changed, campaign_id=assignment.campaign_id))
        if n_judged:
            allocation_check_if_due(campaign=assignment.campaign, n_judged=n_judged)
        assignment.status, assignment.completed_at, assignment.updated_at = Assignment.Status.DONE, now, now
        assignment.time_spent_ms, assignment.server_time_ms, assignment.client_time_ms = server_ms, server_ms, client_ms
        assignment.active_since, assignment.draft, assignment.listened_ms = None, {}, listened_ms

    return ctes, params, update, update_params, adaptive, done


@transaction.atomic
def assignment_draft_save(*, assignment_id: int, annotator: Annotator, draft: dict) -> Assignment:
    """Keep the half-finished answers of a pending assignment; renews its deadline."""
    assignment, _ = assignment_lock_for(assignment_id=assignment_id, annotator=annotator)
    if assignment.status == Assignment.Status.PENDING:
        assignment.draft = draft
        assignment.expires_at = _expires_at(assignment.campaign)
        Assignment.objects.filter(pk=assignment.pk).update(draft=draft, expires_at=assignment.expires_at)
    return assignment


def assignment_is_complete(*, assignment: Assignment) -> bool:
    """Whether the annotator's judgements cover the unit for every criterion.

    Likert and ESA: the output rated per criterion; RankME: every output of the
    unit; pairwise: the pair; best-worst: the tuple. (Assignments made before
    units existed: every output of the item, as before.)
    """
    campaign = assignment.campaign
    if assignment.unit_id is None:
        output_ids = set(Output.objects.filter(item_id=assignment.item_id).values_list("id", flat=True))
    else:
        output_ids = set(assignment.unit.outputs)
    mine = {"campaign": campaign, "annotator_id": assignment.annotator_id, "item_id": assignment.item_id}
    if assignment.unit_id is not None and len(set(assignment.unit.systems)) != len(assignment.unit.systems):
        # A document unit (context=document): each judgement is stored under its own segment's item.
        del mine["item_id"]
        mine["item_id__in"] = Output.objects.filter(pk__in=output_ids).values("item_id")
    protocol = protocols.of(campaign)
    for criterion in campaign.criteria:
        seen = protocol.judged_outputs(protocol.model.objects.filter(**mine, criterion=criterion), output_ids)
        if not output_ids <= seen:
            return False
    return True


@transaction.atomic
def assignment_complete_if_judged(*, assignment: Assignment, enrolment: Enrolment | None = None) -> Assignment:
    """Mark the assignment done once `assignment_is_complete` holds (the
    single-judgement endpoints); its judgements then count as complete."""
    if assignment.status == Assignment.Status.PENDING and assignment_is_complete(assignment=assignment):
        if enrolment is None:
            enrolment = Enrolment.objects.filter(
                campaign_id=assignment.campaign_id, annotator_id=assignment.annotator_id
            ).first()
        assignment_finish(assignment=assignment, enrolment=enrolment)
        _judgements_mark([assignment.pk], JudgementBase.Status.COMPLETE)
    return assignment
