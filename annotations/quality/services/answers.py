"""Answers to control units: through the whole-unit submission and one judgement at a time."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from annotations import protocols
from annotations.models import Assignment, Campaign, ErrorSpan, JudgementBase, Output, Unit
from annotations.models.quality import ControlJudgement, ControlUnit, GoldUnit
from annotations.protocols import Protocol
from annotations.protocols.base import document_segments
from annotations.quality import gold
from annotations.selectors import annotator_for_user
from annotations.services.judgements import DuplicateJudgement

# --- answers to control units --------------------------------------------------------------


@dataclass
class ControlAnswerResult:
    # True when a loud gold unit was answered wrongly: the annotator must try again.
    retry: bool = False
    explanation: str = ""
    problems: list[str] = field(default_factory=list)
    judgements: int = 0


def _answers_by_criterion(protocol: Protocol, rows: list) -> dict[str, dict]:
    """The validated rows of a unit (unsaved judgement instances from the engine's
    validator, with ESA spans) as one answer per criterion, in alias ids."""
    out: dict[str, dict] = {}
    for row, spans in rows:
        protocol.control_answer(out.setdefault(row.criterion, {}), row, spans)
    return out


def _gold_problems(campaign: Campaign, control: ControlUnit, criterion: str, answer: dict) -> list[str]:
    spec = gold.expectation_for(control.gold.expected, criterion)
    if spec is None:
        return []
    problems = []
    for one in protocols.of(campaign).gold_answers(answer, control.real_output):
        problems += gold.gold_check(campaign.protocol, spec, one)
    return list(dict.fromkeys(problems))


def _relative_passed(campaign: Campaign, control: ControlUnit, answer: dict) -> bool | None:
    """A relative attention check's verdict, known at once: the protocol's `relative_passed`. A check
    made of a document unit (context=document) has a degraded copy in one or more segments: it
    passes when each of them passes on its own segment (the copy scored below every clean output of
    that segment); None while one of them is not scored."""
    protocol = protocols.of(campaign)
    degraded = [int(a) for a, entry in control.aliases.items() if entry.get("degraded")]
    if len(degraded) <= 1:
        return protocol.relative_passed(answer, control.degraded_alias)
    unit = control.unit
    outputs = list(unit.outputs)
    starts = document_segments(list(unit.systems)) + [len(outputs)]
    scores = answer.get("scores") or {}
    verdicts = []
    for start, end in zip(starts, starts[1:]):
        segment = [int(a) for a in outputs[start:end]]
        for alias in segment:
            if alias in degraded:
                mine = {**answer, "scores": {str(a): scores[str(a)] for a in segment if str(a) in scores}}
                verdicts.append(protocol.relative_passed(mine, alias))
    if False in verdicts:
        return False
    return None if None in verdicts else True


def control_answers_record(
    *, assignment: Assignment, rows: list, time_spent_ms: int | None, origin: str
) -> ControlAnswerResult:
    """Store the answers to a control unit (validated by the engine like any unit's).

    Gold units are checked at once; a loud one answered wrongly is recorded as
    a failed try and sent back with its explanation (the assignment stays
    open). The caller finishes the assignment otherwise.
    """
    control = ControlUnit.objects.select_related("gold").get(unit_id=assignment.unit_id)
    campaign = assignment.campaign
    answers = _answers_by_criterion(protocols.of(campaign), rows)
    problems: dict[str, list[str]] = {}
    if control.kind == ControlUnit.Kind.GOLD:
        problems = {c: [f"{c}: {p}" for p in _gold_problems(campaign, control, c, a)] for c, a in answers.items()}
    loud = control.gold is not None and control.gold.mode == GoldUnit.Mode.LOUD
    attempt = 1 + (
        ControlJudgement.objects.filter(control=control).order_by("-attempt").values_list("attempt", flat=True).first()
        or 0
    )
    relative = control.kind == ControlUnit.Kind.RELATIVE
    ControlJudgement.objects.bulk_create(
        [
            ControlJudgement(
                campaign=campaign,
                annotator_id=assignment.annotator_id,
                control=control,
                assignment=assignment,
                kind=control.kind,
                item_id=assignment.item_id,
                criterion=criterion,
                answer=answer,
                passed=(not problems.get(criterion))
                if control.kind == "gold"
                else _relative_passed(campaign, control, answer)
                if relative
                else None,
                attempt=attempt,
                time_spent_ms=time_spent_ms,
                origin=origin,
            )
            for criterion, answer in answers.items()
        ]
    )
    failed = [p for ps in problems.values() for p in ps]
    if loud and failed:
        return ControlAnswerResult(retry=True, explanation=control.gold.explanation, problems=failed)
    return ControlAnswerResult(judgements=len(answers))


# --- one judgement at a time (the single-judgement API endpoints) ------------------------------


class _Discard(Exception):
    """Rolls back the savepoint in which the engine's own service built a judgement."""


def control_judgement_submit(*, user, campaign: Campaign, output_ids, create, shown_order, origin: str):
    """One judgement posted to the single-judgement endpoints for a control unit, or
    None when `output_ids` are not the outputs of one of the user's control units.

    The engine's own service (`create`) builds and checks the judgement exactly as
    for a regular unit, inside a savepoint that is then rolled back: the same
    checks and messages, the same response (an id from the same sequence), and
    no row in the judgement tables. The answer is kept as the control's answer;
    the unit is finished once every criterion (and output) is answered. A loud
    gold unit answered wrongly stays open (its explanation is shown by the pages
    and by `POST /api/assignments/{id}/submit/`).
    """
    from annotations.services.assignment_work import (  # lazy: cycle with services.assignment_work
        assignment_finish,
        assignment_lock_for,
        assignment_reclaim,
        assignment_time_ms,
    )

    annotator = annotator_for_user(user=user, project=campaign.project)
    if annotator is None:
        return None
    ids = sorted(set(output_ids))
    found = (
        Assignment.objects.filter(campaign=campaign, annotator=annotator, unit__outputs__contains=ids)
        .exclude(unit__kind=Unit.Kind.REGULAR)
        .order_by("-status", "-id")
        .first()
    )
    if found is None:
        return None
    assignment, enrolment = assignment_lock_for(assignment_id=found.pk, annotator=annotator)
    if assignment.status == Assignment.Status.DONE:
        raise DuplicateJudgement("You already submitted this unit.")
    assignment_reclaim(assignment=assignment)
    control = ControlUnit.objects.select_related("gold").get(unit_id=assignment.unit_id)
    unit = assignment.unit
    system_of = dict(zip(unit.outputs, unit.systems))
    item_of: dict[int, int] = {}
    if len(set(unit.systems)) != len(unit.systems):
        # A document unit: each alias answers for its segment's item, as a regular unit's output does.
        real = {int(a): e["output"] for a, e in control.aliases.items()}
        items = dict(Output.objects.filter(pk__in=set(real.values())).values_list("id", "item_id"))
        item_of = {a: items[o] for a, o in real.items() if o in items}
    outputs = {
        int(a): Output(
            id=int(a), item_id=item_of.get(int(a), unit.item_id), system_id=system_of.get(int(a)), text=e["text"]
        )
        for a, e in control.aliases.items()
    }
    protocol = protocols.of(campaign)
    built: dict = {}
    try:
        with transaction.atomic():
            judgement = create(
                campaign=campaign,
                annotator=annotator,
                outputs=outputs,
                assignment=assignment,
                shown_order=None,
                status=JudgementBase.Status.PARTIAL,
                origin=origin,
                time_spent_ms=assignment_time_ms(assignment=assignment),
            )
            built["judgement"] = judgement
            # Read inside the savepoint: the spans are rolled back with the judgement.
            built["spans"] = protocol.spans_of(judgement)
            raise _Discard
    except _Discard:
        pass
    judgement = built["judgement"]
    judgement.shown_order = list(assignment.shown_order)
    spans = built["spans"]
    ((criterion, answer),) = _answers_by_criterion(protocol, [(judgement, spans)]).items()

    # Ratings and ESA answer output by output; the unit is done once every output is answered.
    per_output = protocol.per_output
    rows = {cj.criterion: cj for cj in ControlJudgement.objects.select_for_update().filter(control=control)}
    attempt = max((cj.attempt for cj in rows.values()), default=1)
    if (
        control.gold
        and control.gold.mode == GoldUnit.Mode.LOUD
        and any(cj.passed is False for cj in rows.values() if cj.attempt == attempt)
    ):
        attempt += 1  # a failed tutorial try: start again
    rows = {c: cj for c, cj in rows.items() if cj.attempt == attempt}
    current = rows.get(criterion)
    if current is not None and (not per_output or set(answer["scores"]) & set(current.answer.get("scores", {}))):
        raise DuplicateJudgement("This annotator has already judged this unit for this criterion in this campaign.")
    if current is None:
        current = ControlJudgement(
            campaign=campaign,
            annotator=annotator,
            control=control,
            assignment=assignment,
            kind=control.kind,
            item_id=assignment.item_id,
            criterion=criterion,
            answer={},
            attempt=attempt,
            origin=origin,
        )
    if per_output:
        merged = dict(current.answer)
        merged["scores"] = {**merged.get("scores", {}), **answer["scores"]}
        if "spans" in answer:
            merged["spans"] = {**merged.get("spans", {}), **answer["spans"]}
        current.answer = merged
    else:
        current.answer = answer
    current.time_spent_ms = judgement.time_spent_ms  # the server's figure for the unit so far
    current.save()
    rows[criterion] = current

    aliases = {str(a) for a in unit.outputs}
    complete = all(
        c in rows and (not per_output or set(rows[c].answer.get("scores", {})) >= aliases) for c in campaign.criteria
    )
    if complete:
        failed = False
        if control.kind == ControlUnit.Kind.GOLD:
            for c, cj in rows.items():
                cj.passed = not _gold_problems(campaign, control, c, cj.answer)
                failed = failed or not cj.passed
                cj.save(update_fields=["passed", "updated_at"])
        elif control.kind == ControlUnit.Kind.RELATIVE:
            for cj in rows.values():
                cj.passed = _relative_passed(campaign, control, cj.answer)
                cj.save(update_fields=["passed", "updated_at"])
        if not (failed and control.gold.mode == GoldUnit.Mode.LOUD):
            assignment_finish(assignment=assignment, enrolment=enrolment)
            judgement.status = JudgementBase.Status.COMPLETE
    if protocol.has_spans:
        # The response lists the spans as for a regular unit; their rows were rolled back.
        judgement._prefetched_objects_cache = {"spans": [ErrorSpan(judgement=judgement, **s) for s in spans]}
    return judgement
