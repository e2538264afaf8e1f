"""Writes for quality control: settings, gold units, control units in each
annotator's batch, control answers, decisions and completion codes.

Where controls go: each annotator's batch (``units_per_batch`` units, counted
by their assignment sequence) gets ``round(share * batch size)`` degraded
copies and repeats, plus up to ``GOLD_PER_BATCH`` silent gold units, at slot
positions drawn from the annotator's recorded seed. A degraded copy or repeat
needs a source: a regular unit this annotator already finished; when none is
there yet, the control is owed and comes at the next chance. Loud gold units
(tutorials) come before anything else. The engine (`assignment_next`) asks
`control_next` first and hands out what it returns like any other unit.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from annotations.models import (
    Annotator,
    Assignment,
    Campaign,
    Enrolment,
    Item,
    Output,
    Unit,
)
from annotations.quality import codes, gold
from annotations.quality.degrade import KINDS, TEXT_KINDS, NotApplicable, degrade_any
from annotations.quality.models import (
    AnnotatorDecision,
    CompletionCode,
    ControlJudgement,
    ControlUnit,
    GoldUnit,
    QualitySettings,
)
from annotations.quality.rules import Rules
from workbench.exceptions import DomainError

GOLD_PER_BATCH = 2
CONTROL_POSITION_BASE = 1_000_000_000
SETTINGS_FIELDS = ("degraded_share", "repeat_share", "degrade_kinds", "degrade_strength", "rules",
                   "completion_codes")


# --- settings ------------------------------------------------------------------------


def _number(value, name: str, low: float, high: float, *, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError({name: f"{name} must be a number, got {value!r}"})
    if value < low or value > high or (low_open and value == low):
        raise ValidationError({name: f"{name} must be {'above' if low_open else 'at least'} {low:g} "
                                     f"and at most {high:g}, got {value:g}"})
    return float(value)


def _rules_clean(rules) -> dict:
    if not isinstance(rules, dict):
        raise ValidationError({"rules": "rules must be an object"})
    allowed = set(Rules().as_dict())
    unknown = set(rules) - allowed
    if unknown:
        raise ValidationError({"rules": f"unknown rule {', '.join(sorted(unknown))} "
                                        f"(known: {', '.join(sorted(allowed))})"})
    clean = {}
    for key, value in rules.items():
        if key == "exclude_straight_lining":
            if not isinstance(value, bool):
                raise ValidationError({"rules": f"{key} must be true or false"})
        elif key == "min_degraded":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError({"rules": f"{key} must be a whole number >= 1"})
        elif value is not None:
            limits = {"max_p": (0, 1), "min_controls_passed": (0, 1), "min_self_consistency": (0, 1),
                      "min_median_seconds": (0, 86_400), "min_agreement": (-1, 1)}[key]
            value = _number(value, key, *limits)
        clean[key] = value
    return clean


@transaction.atomic
def quality_settings_update(*, campaign: Campaign, **changes) -> QualitySettings:
    """Change a campaign's quality settings; unknown or out-of-range values are refused."""
    unknown = set(changes) - set(SETTINGS_FIELDS)
    if unknown:
        raise ValidationError(f"unknown setting {', '.join(sorted(unknown))} (known: {', '.join(SETTINGS_FIELDS)})")
    current = QualitySettings.objects.select_for_update().filter(campaign=campaign).first()
    current = current or QualitySettings(campaign=campaign)
    for name in ("degraded_share", "repeat_share"):
        if name in changes:
            setattr(current, name, _number(changes[name], name, 0, 0.5))
    if "degrade_strength" in changes:
        current.degrade_strength = _number(changes["degrade_strength"], "degrade_strength", 0, 1, low_open=True)
    if "degrade_kinds" in changes:
        kinds = changes["degrade_kinds"]
        if not isinstance(kinds, list) or any(k not in KINDS for k in kinds):
            raise ValidationError({"degrade_kinds": f"degrade_kinds must list some of {', '.join(KINDS)} "
                                                    "(none: every kind that applies)"})
        current.degrade_kinds = list(dict.fromkeys(kinds))
    if "rules" in changes:
        current.rules = {**(current.rules or {}), **_rules_clean(changes["rules"])}
    if "completion_codes" in changes:
        if not isinstance(changes["completion_codes"], bool):
            raise ValidationError({"completion_codes": "completion_codes must be true or false"})
        current.completion_codes = changes["completion_codes"]
    current.full_clean(exclude=["campaign"], validate_unique=False)
    current.save()
    return current


def _kinds_for(campaign: Campaign, configured: list[str]) -> list[str]:
    """The configured kinds, or by default every text kind plus `fact` when the dataset has data."""
    if configured:
        return list(configured)
    has_data = Item.objects.filter(dataset_id=campaign.dataset_id).exclude(data=[]).exists()
    return list(TEXT_KINDS) + (["fact"] if has_data else [])


# --- gold units ------------------------------------------------------------------------


def _unit_size_check(campaign: Campaign, outputs: list[Output]) -> None:
    n = len(outputs)
    protocol = campaign.protocol
    if protocol in Campaign.SINGLE_OUTPUT_PROTOCOLS and n != 1:
        raise ValidationError({"outputs": f"a {protocol} unit shows one output, got {n}"})
    if protocol == Campaign.Protocol.PAIRWISE and n != 2:
        raise ValidationError({"outputs": f"a pairwise unit shows two outputs, got {n}"})
    if protocol in (Campaign.Protocol.RANKME, Campaign.Protocol.BWS) and not 2 <= n <= 10:
        raise ValidationError({"outputs": f"a {protocol} unit shows 2 to 10 outputs, got {n}"})


@transaction.atomic
def gold_unit_create(
    *, campaign: Campaign, item: Item, outputs: list[Output], expected: dict, mode: str = GoldUnit.Mode.SILENT,
    explanation: str = "",
) -> GoldUnit:
    """A gold unit: these outputs of `item` with the expected answer (annotations.quality.gold)."""
    if item.dataset_id != campaign.dataset_id:
        raise ValidationError({"item": "The item does not belong to this campaign's dataset."})
    if any(o.item_id != item.pk for o in outputs) or len({o.pk for o in outputs}) != len(outputs):
        raise ValidationError({"outputs": "The outputs must be different outputs of the item."})
    _unit_size_check(campaign, outputs)
    if mode not in GoldUnit.Mode.values:
        raise ValidationError({"mode": "mode must be 'loud' or 'silent'"})
    if mode == GoldUnit.Mode.LOUD and not explanation.strip():
        raise ValidationError({"explanation": "A loud (tutorial) unit needs an explanation to show after a wrong "
                                              "answer."})
    ids = sorted(o.pk for o in outputs)
    try:
        clean = gold.expectation_clean(campaign.protocol, expected, criteria=list(campaign.criteria), output_ids=ids)
    except gold.InvalidExpectation as exc:
        raise ValidationError({"expected": str(exc)}) from None
    position = (GoldUnit.objects.filter(campaign=campaign).aggregate(m=Max("position"))["m"] or 0) + 1
    unit = GoldUnit(campaign=campaign, item=item, outputs=ids, expected=clean, mode=mode,
                    explanation=explanation.strip(), position=position)
    unit.full_clean(exclude=["campaign", "item"])
    unit.save()
    return unit


@transaction.atomic
def gold_unit_delete(*, gold_unit: GoldUnit) -> None:
    """Remove a gold unit that nobody was shown yet (answers are never deleted)."""
    if ControlUnit.objects.filter(gold=gold_unit).exists():
        raise DomainError("Annotators have already been shown this gold unit; it stays so their answers keep "
                          "their meaning.")
    gold_unit.delete()


# --- control units ------------------------------------------------------------------------


def alias_ids_allocate(n: int) -> list[int]:
    """`n` fresh ids from the output id sequence: they look like output ids and never become one."""
    table = Output._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                           [table, n])
            return [row[0] for row in cursor.fetchall()]
        # SQLite (quickstart): reserve ids by moving the table's AUTOINCREMENT counter.
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        row = cursor.fetchone()
        start = row[0] if row else 0
        cursor.execute("UPDATE sqlite_sequence SET seq = %s WHERE name = %s", [start + n, table])
        return list(range(start + 1, start + n + 1))


def _unit_create(*, campaign: Campaign, item_id: int, aliases: dict, systems: list[int], kind: str) -> Unit:
    outputs = sorted(int(a) for a in aliases)
    for _ in range(20):
        position = max(CONTROL_POSITION_BASE,
                       (Unit.objects.filter(campaign=campaign).aggregate(m=Max("position"))["m"] or 0) + 1)
        try:
            with transaction.atomic():
                return Unit.objects.create(campaign=campaign, item_id=item_id, outputs=outputs, systems=systems,
                                           kind=kind, position=position, redundancy=1, n_taken=0)
        except IntegrityError:
            continue  # another annotator's control took that position at the same moment
    raise DomainError("The campaign is too busy right now; please try again in a moment.")


def _batch_plan(*, campaign: Campaign, qs: QualitySettings, enrolment: Enrolment, batch: int,
                silent_gold_left: int) -> list[tuple[int, str]]:
    """(slot in the batch, control kind) for one annotator's batch, drawn from their seed."""
    size = max(1, campaign.units_per_batch)
    kinds = (["degraded"] * round(qs.degraded_share * size) + ["repeat"] * round(qs.repeat_share * size)
             + ["gold"] * min(silent_gold_left, GOLD_PER_BATCH))
    kinds = kinds[: max(0, size - 1)]  # at least one regular unit per batch
    rng = random.Random(f"controls:{enrolment.seed}:{batch}")
    # Not the first slot of the first batch: a degraded copy or repeat needs a finished unit first.
    slots = sorted(rng.sample(range(1 if batch == 0 else 0, size), min(len(kinds), size - (batch == 0))))
    rng.shuffle(kinds)
    return list(zip(slots, kinds))


def _sources(*, campaign: Campaign, annotator: Annotator, kind: str) -> list[Unit]:
    """Regular units the annotator finished that no control of `kind` copied yet for them."""
    used = ControlUnit.objects.filter(campaign=campaign, annotator=annotator, kind=kind).values("source_id")
    return list(
        Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR, assignments__annotator=annotator,
                            assignments__status=Assignment.Status.DONE)
        .exclude(pk__in=used).order_by("id")
    )


def _degraded_control(*, campaign: Campaign, annotator: Annotator, qs: QualitySettings, rng: random.Random,
                      batch: int) -> Unit | None:
    kinds = _kinds_for(campaign, qs.degrade_kinds)
    sources = _sources(campaign=campaign, annotator=annotator, kind=ControlUnit.Kind.DEGRADED)
    rng.shuffle(sources)
    for source in sources[:20]:
        texts = dict(Output.objects.filter(pk__in=source.outputs).values_list("id", "text"))
        data = Item.objects.filter(pk=source.item_id).values_list("data", flat=True).first()
        victims = list(source.outputs)
        rng.shuffle(victims)
        for victim in victims:
            try:
                damage = degrade_any(texts[victim], kinds=kinds, strength=qs.degrade_strength,
                                     seed=rng.randrange(2**31), data=data)
            except NotApplicable:
                continue
            system_of = dict(zip(source.outputs, source.systems))
            if campaign.protocol == Campaign.Protocol.PAIRWISE:
                # The original beside its damaged copy: the copy should lose.
                shown = [(victim, texts[victim], None), (victim, damage.text, damage.as_json())]
            else:
                shown = [(o, damage.text if o == victim else texts[o], damage.as_json() if o == victim else None)
                         for o in source.outputs]
            return _control_create(campaign=campaign, annotator=annotator, kind=ControlUnit.Kind.DEGRADED,
                                   source=source, item_id=source.item_id, shown=shown,
                                   systems=[system_of[o] for o, _, _ in shown], batch=batch)
    return None


def _repeat_control(*, campaign: Campaign, annotator: Annotator, rng: random.Random, batch: int) -> Unit | None:
    sources = _sources(campaign=campaign, annotator=annotator, kind=ControlUnit.Kind.REPEAT)
    if not sources:
        return None
    source = rng.choice(sources)
    texts = dict(Output.objects.filter(pk__in=source.outputs).values_list("id", "text"))
    return _control_create(campaign=campaign, annotator=annotator, kind=ControlUnit.Kind.REPEAT, source=source,
                           item_id=source.item_id, shown=[(o, texts[o], None) for o in source.outputs],
                           systems=list(source.systems), batch=batch)


def _gold_control(*, campaign: Campaign, annotator: Annotator, gold_unit: GoldUnit, batch: int) -> Unit:
    outputs = list(Output.objects.filter(pk__in=gold_unit.outputs).values_list("id", "text", "system_id"))
    return _control_create(campaign=campaign, annotator=annotator, kind=ControlUnit.Kind.GOLD, gold=gold_unit,
                           item_id=gold_unit.item_id, shown=[(o, text, None) for o, text, _ in outputs],
                           systems=[s for _, _, s in outputs], batch=batch)


def _control_create(*, campaign, annotator, kind, item_id, shown, systems, batch, source=None, gold=None) -> Unit:
    """shown: [(real output id, text, degradation or None)] in the unit's order."""
    alias_ids = alias_ids_allocate(len(shown))
    aliases = {}
    for alias, (real, text, damage) in zip(alias_ids, shown):
        aliases[str(alias)] = {"output": real, "text": text, **({"degraded": damage} if damage else {})}
    # Unit.outputs is sorted by id; keep the systems aligned with it.
    system_of_alias = dict(zip(alias_ids, systems))
    unit = _unit_create(campaign=campaign, item_id=item_id, aliases=aliases,
                        systems=[system_of_alias[a] for a in sorted(alias_ids)], kind=kind)
    ControlUnit.objects.create(unit=unit, campaign=campaign, annotator=annotator, kind=kind, source=source,
                               gold=gold, aliases=aliases, batch=batch)
    return unit


def control_next(*, campaign: Campaign, annotator: Annotator, enrolment: Enrolment) -> Unit | None:
    """The control unit this annotator gets next, created now, or None for a regular unit.

    Called by the engine under the annotator's enrolment lock, so one
    annotator's controls are planned one at a time.
    """
    qs = QualitySettings.objects.filter(campaign=campaign).first()
    seen_gold = set(ControlUnit.objects.filter(campaign=campaign, annotator=annotator, kind=ControlUnit.Kind.GOLD)
                    .values_list("gold_id", flat=True))
    golds = list(GoldUnit.objects.filter(campaign=campaign).exclude(pk__in=seen_gold).order_by("position", "id"))
    size = max(1, campaign.units_per_batch)
    seq = enrolment.n_assigned
    batch = seq // size
    loud = [g for g in golds if g.mode == GoldUnit.Mode.LOUD]
    if loud:  # the tutorial comes first
        return _gold_control(campaign=campaign, annotator=annotator, gold_unit=loud[0], batch=batch)
    silent = [g for g in golds if g.mode == GoldUnit.Mode.SILENT]
    if qs is None and not silent:
        return None
    qs = qs or QualitySettings(campaign=campaign)
    made = Counter(ControlUnit.objects.filter(campaign=campaign, annotator=annotator, batch=batch)
                   .exclude(gold__mode=GoldUnit.Mode.LOUD).values_list("kind", flat=True))
    # The plan must not change within a batch: count the silent gold units as they were when it began.
    plan = _batch_plan(campaign=campaign, qs=qs, enrolment=enrolment, batch=batch,
                       silent_gold_left=len(silent) + made["gold"])
    due = Counter(kind for slot, kind in plan if slot <= seq % size)
    rng = random.Random(f"control:{enrolment.seed}:{seq}")
    for kind in ("gold", "degraded", "repeat"):
        if due[kind] <= made[kind]:
            continue
        if kind == "gold" and silent:
            return _gold_control(campaign=campaign, annotator=annotator, gold_unit=silent[0], batch=batch)
        if kind == "degraded":
            unit = _degraded_control(campaign=campaign, annotator=annotator, qs=qs, rng=rng, batch=batch)
            if unit is not None:
                return unit
        if kind == "repeat":
            unit = _repeat_control(campaign=campaign, annotator=annotator, rng=rng, batch=batch)
            if unit is not None:
                return unit
    return None


def unit_texts(*, unit: Unit) -> dict[int, str] | None:
    """Texts to show for a control unit's (alias) outputs; None for a regular unit."""
    if unit.kind == Unit.Kind.REGULAR:
        return None
    control = ControlUnit.objects.filter(unit=unit).only("aliases").first()
    if control is None:
        return None
    return {int(alias): entry["text"] for alias, entry in control.aliases.items()}


# --- answers to control units --------------------------------------------------------------


@dataclass
class ControlAnswerResult:
    # True when a loud gold unit was answered wrongly: the annotator must try again.
    retry: bool = False
    explanation: str = ""
    problems: list[str] = field(default_factory=list)
    judgements: int = 0


def _answers_by_criterion(protocol: str, rows: list) -> dict[str, dict]:
    """The validated rows of a unit (unsaved judgement instances from the engine's
    validator, with ESA spans) as one answer per criterion, in alias ids."""
    out: dict[str, dict] = {}
    for row, spans in rows:
        answer = out.setdefault(row.criterion, {})
        if protocol in (Campaign.Protocol.LIKERT, Campaign.Protocol.RANKME, Campaign.Protocol.ESA):
            answer.setdefault("scores", {})[str(row.output_id)] = row.score
            if protocol == Campaign.Protocol.ESA:
                answer.setdefault("spans", {})[str(row.output_id)] = [
                    {k: v for k, v in span.items() if v is not None} for span in spans or []]
        elif protocol == Campaign.Protocol.PAIRWISE:
            winner = {"a": row.output_a_id, "b": row.output_b_id}.get(row.winner, "tie")
            answer.update({"winner": winner, "pair": [row.output_a_id, row.output_b_id]})
        else:
            answer.update({"best": row.best_id, "worst": row.worst_id, "outputs": list(row.outputs)})
    return out


def _gold_problems(campaign: Campaign, control: ControlUnit, criterion: str, answer: dict) -> list[str]:
    spec = gold.expectation_for(control.gold.expected, criterion)
    if spec is None:
        return []
    real = control.real_output
    protocol = campaign.protocol
    if protocol in (Campaign.Protocol.LIKERT, Campaign.Protocol.RANKME, Campaign.Protocol.ESA):
        problems = []
        for alias, score in answer.get("scores", {}).items():
            spans = (answer.get("spans") or {}).get(alias, [])
            problems += gold.gold_check(protocol, spec, {"score": score, "spans": spans})
        return list(dict.fromkeys(problems))
    if protocol == Campaign.Protocol.PAIRWISE:
        winner = answer.get("winner")
        return gold.gold_check(protocol, spec, {"winner": winner if winner == "tie" else real(int(winner))})
    return gold.gold_check(protocol, spec, {"best": real(int(answer["best"])), "worst": real(int(answer["worst"]))})


def control_answers_record(*, assignment: Assignment, rows: list, time_spent_ms: int | None, origin: str
                           ) -> ControlAnswerResult:
    """Store the answers to a control unit (validated by the engine like any unit's).

    Gold units are checked at once; a loud one answered wrongly is recorded as
    a failed try and sent back with its explanation (the assignment stays
    open). The caller finishes the assignment otherwise.
    """
    control = ControlUnit.objects.select_related("gold").get(unit_id=assignment.unit_id)
    campaign = assignment.campaign
    answers = _answers_by_criterion(campaign.protocol, rows)
    problems: dict[str, list[str]] = {}
    if control.kind == ControlUnit.Kind.GOLD:
        problems = {c: [f"{c}: {p}" for p in _gold_problems(campaign, control, c, a)] for c, a in answers.items()}
    loud = control.gold is not None and control.gold.mode == GoldUnit.Mode.LOUD
    attempt = 1 + (ControlJudgement.objects.filter(control=control).order_by("-attempt")
                   .values_list("attempt", flat=True).first() or 0)
    ControlJudgement.objects.bulk_create([
        ControlJudgement(campaign=campaign, annotator_id=assignment.annotator_id, control=control,
                         assignment=assignment, kind=control.kind, item_id=assignment.item_id, criterion=criterion,
                         answer=answer, passed=(not problems.get(criterion)) if control.kind == "gold" else None,
                         attempt=attempt, time_spent_ms=time_spent_ms, origin=origin)
        for criterion, answer in answers.items()
    ])
    failed = [p for ps in problems.values() for p in ps]
    if loud and failed:
        return ControlAnswerResult(retry=True, explanation=control.gold.explanation, problems=failed)
    return ControlAnswerResult(judgements=len(answers))


# --- decisions ----------------------------------------------------------------------------------


@transaction.atomic
def annotator_decide(*, campaign: Campaign, annotator: Annotator, included: bool | None, reason: str,
                     user=None) -> AnnotatorDecision:
    """Include or exclude an annotator by hand (None: back to the rules), with a reason.

    Never deletes or changes a judgement; analysis and export filter by it.
    """
    if annotator.project_id != campaign.dataset.project_id:
        raise ValidationError({"annotator": "The annotator does not belong to this campaign's project."})
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why: the reason is kept with the decision."})
    if len(reason) > 2000:
        raise ValidationError({"reason": "Keep the reason under 2,000 characters."})
    decision = AnnotatorDecision(campaign=campaign, annotator=annotator, included=included, reason=reason,
                                 decided_by=user if getattr(user, "is_authenticated", False) else None)
    decision.full_clean(exclude=["campaign", "annotator", "decided_by"])
    decision.save()
    return decision


# --- completion codes ------------------------------------------------------------------------------


def _code_key() -> str:
    return f"completion-codes:{django_settings.SECRET_KEY}"


@transaction.atomic
def completion_code_issue(*, campaign: Campaign, annotator: Annotator, batch: int) -> CompletionCode:
    """The code for the end of `batch` (issued once; the same code on every later request).

    Pass or fail follows the annotator's standing when the batch ends: the
    rules on the figures so far, or a decision taken by hand.
    """
    existing = CompletionCode.objects.filter(campaign=campaign, annotator=annotator, batch=batch).first()
    if existing is not None:
        return existing
    from annotations.quality.selectors import campaign_quality

    standing = campaign_quality(campaign=campaign).get(annotator.pk)
    passed = True if standing is None else standing.included
    reasons = [] if standing is None else list(standing.rule_verdict.reasons)
    code = codes.completion_code(key=_code_key(), campaign=campaign.pk, annotator=annotator.pk, batch=batch,
                                 passed=passed)
    CompletionCode.objects.bulk_create(
        [CompletionCode(campaign=campaign, annotator=annotator, batch=batch, code=code, passed=passed,
                        reasons=reasons)], ignore_conflicts=True)
    return CompletionCode.objects.get(campaign=campaign, annotator=annotator, batch=batch)


def completion_code_at_batch_end(*, campaign: Campaign, annotator: Annotator, finished: bool = False
                                 ) -> CompletionCode | None:
    """The code to show now: when the annotator has just finished a batch, or
    (`finished`) has nothing left to do after part of one. None when the
    campaign gives no codes or the annotator is mid-batch."""
    qs = QualitySettings.objects.filter(campaign=campaign).first()
    if qs is None or not qs.completion_codes:
        return None
    enrolment = Enrolment.objects.filter(campaign=campaign, annotator=annotator).first()
    if enrolment is None:
        return None
    done = Assignment.objects.filter(campaign=campaign, annotator=annotator, status=Assignment.Status.DONE).count()
    size = max(1, campaign.units_per_batch)
    if done and done % size == 0:
        return completion_code_issue(campaign=campaign, annotator=annotator, batch=done // size - 1)
    if finished and done:
        return completion_code_issue(campaign=campaign, annotator=annotator, batch=done // size)
    return None


def completion_code_check(*, campaign: Campaign, code: str) -> dict:
    """What a pasted code is: whose, which batch, pass or fail, and whether it is genuine."""
    normal = codes.normalise(code)
    found = CompletionCode.objects.filter(campaign=campaign, code=normal).select_related("annotator").first()
    if found is None:
        return {"code": normal, "valid": False, "verdict": None, "annotator": None, "batch": None}
    verdict = codes.code_verdict(key=_code_key(), code=normal, campaign=campaign.pk, annotator=found.annotator_id,
                                 batch=found.batch)
    return {"code": normal, "valid": verdict == codes.PASS, "verdict": verdict, "annotator": found.annotator.name,
            "batch": found.batch}


# --- gold units from a file -----------------------------------------------------------------------

GOLD_KEYS = {"item", "systems", "expected", "mode", "explanation"}
MAX_GOLD_LINE_CHARS = 100_000


def _gold_expected_by_name(expected, systems: dict[str, int]) -> tuple[dict | None, str | None]:
    """Expected answers naming systems ("winner": "sysA") -> the same with output ids."""
    if not isinstance(expected, dict):
        return None, "expected must be an object keyed by criterion (or \"*\")"
    out = {}
    for criterion, spec in expected.items():
        if not isinstance(spec, dict):
            return None, f"expected[{criterion!r}] must be an object"
        spec = dict(spec)
        for key in ("winner", "best", "worst"):
            if key in spec and spec[key] != "tie":
                if spec[key] not in systems:
                    return None, f"expected[{criterion!r}].{key}: {spec[key]!r} is not one of the unit's systems"
                spec[key] = systems[spec[key]]
        out[criterion] = spec
    return out, None


@transaction.atomic
def gold_units_import(*, campaign: Campaign, text: str) -> list[GoldUnit]:
    """Gold units from JSONL, one a line, atomically (every problem reported as `line N: reason`)::

        {"item": "e2e-17", "systems": ["sysA"], "expected": {"*": {"min": 1, "max": 2}},
         "mode": "loud", "explanation": "The output names the wrong restaurant."}

    ``systems`` are the outputs shown (one for Likert and ESA, two for pairwise,
    a tuple for RankME and best-worst); pairwise and best-worst expectations
    name systems (``"winner": "sysA"``).
    """
    import json

    from annotations.services.imports import ImportFailed, LineError

    errors: list[LineError] = []
    created: list[GoldUnit] = []
    items = dict(Item.objects.filter(dataset_id=campaign.dataset_id).values_list("external_id", "id"))
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_GOLD_LINE_CHARS:
            errors.append(LineError(number, f"line longer than {MAX_GOLD_LINE_CHARS} characters"))
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            errors.append(LineError(number, f"not JSON ({exc.msg})"))
            continue
        if not isinstance(obj, dict):
            errors.append(LineError(number, "each line must be a JSON object"))
            continue
        unknown = sorted(set(obj) - GOLD_KEYS)
        missing = sorted({"item", "systems", "expected"} - set(obj))
        if unknown or missing:
            errors.append(LineError(number, "; ".join(
                ([f"unknown field {', '.join(map(repr, unknown))}"] if unknown else [])
                + ([f"missing field {', '.join(map(repr, missing))}"] if missing else []))))
            continue
        item_id = items.get(obj["item"]) if isinstance(obj["item"], str) else None
        if item_id is None:
            errors.append(LineError(number, f"unknown item {obj['item']!r} in dataset {campaign.dataset.name!r}"))
            continue
        names = obj["systems"]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            errors.append(LineError(number, "systems must be a non-empty list of system names"))
            continue
        outputs = {o.system.name: o for o in Output.objects.filter(item_id=item_id, system__name__in=names)
                   .select_related("system")}
        absent = [n for n in names if n not in outputs]
        if absent:
            errors.append(LineError(number, f"no output of {', '.join(map(repr, absent))} for item {obj['item']!r}"))
            continue
        expected, problem = _gold_expected_by_name(obj["expected"], {n: outputs[n].pk for n in names})
        if problem:
            errors.append(LineError(number, problem))
            continue
        explanation = obj.get("explanation", "")
        if not isinstance(explanation, str):
            errors.append(LineError(number, "explanation must be text"))
            continue
        try:
            with transaction.atomic():
                created.append(gold_unit_create(
                    campaign=campaign, item=Item.objects.get(pk=item_id), outputs=[outputs[n] for n in names],
                    expected=expected, mode=obj.get("mode", GoldUnit.Mode.SILENT), explanation=explanation))
        except ValidationError as exc:
            errors += [LineError(number, m) for m in exc.messages]
    if errors:
        raise ImportFailed(errors)
    return created


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
    from annotations.models import ErrorSpan, JudgementBase, SpanJudgement
    from annotations.selectors import annotator_for_user
    from annotations.services.assignments import assignment_finish, assignment_lock_for, assignment_reclaim
    from annotations.services.judgements import DuplicateJudgement

    annotator = annotator_for_user(user=user, project=campaign.project)
    if annotator is None:
        return None
    ids = sorted(set(output_ids))
    found = (Assignment.objects.filter(campaign=campaign, annotator=annotator, unit__outputs__contains=ids)
             .exclude(unit__kind=Unit.Kind.REGULAR).order_by("-status", "-id").first())
    if found is None:
        return None
    assignment, enrolment = assignment_lock_for(assignment_id=found.pk, annotator=annotator)
    if assignment.status == Assignment.Status.DONE:
        raise DuplicateJudgement("You already submitted this unit.")
    assignment_reclaim(assignment=assignment)
    control = ControlUnit.objects.select_related("gold").get(unit_id=assignment.unit_id)
    unit = assignment.unit
    system_of = dict(zip(unit.outputs, unit.systems))
    outputs = {int(a): Output(id=int(a), item_id=unit.item_id, system_id=system_of.get(int(a)), text=e["text"])
               for a, e in control.aliases.items()}
    built: dict = {}
    try:
        with transaction.atomic():
            judgement = create(campaign=campaign, annotator=annotator, outputs=outputs, assignment=assignment,
                               shown_order=None, status=JudgementBase.Status.PARTIAL, origin=origin)
            built["judgement"] = judgement
            built["spans"] = list(judgement.spans.all()) if isinstance(judgement, SpanJudgement) else []
            raise _Discard
    except _Discard:
        pass
    judgement = built["judgement"]
    judgement.shown_order = list(assignment.shown_order)
    spans = [{"start": s.start, "end": s.end, "severity": s.severity, "missing": s.missing} for s in built["spans"]]
    (criterion, answer), = _answers_by_criterion(campaign.protocol, [(judgement, spans)]).items()

    per_output = campaign.protocol in (Campaign.Protocol.LIKERT, Campaign.Protocol.RANKME, Campaign.Protocol.ESA)
    rows = {cj.criterion: cj for cj in ControlJudgement.objects.select_for_update().filter(control=control)}
    attempt = max((cj.attempt for cj in rows.values()), default=1)
    if control.gold and control.gold.mode == GoldUnit.Mode.LOUD and any(
            cj.passed is False for cj in rows.values() if cj.attempt == attempt):
        attempt += 1  # a failed tutorial try: start again
    rows = {c: cj for c, cj in rows.items() if cj.attempt == attempt}
    current = rows.get(criterion)
    if current is not None and (not per_output or set(answer["scores"]) & set(current.answer.get("scores", {}))):
        raise DuplicateJudgement("This annotator has already judged this unit for this criterion in this campaign.")
    if current is None:
        current = ControlJudgement(campaign=campaign, annotator=annotator, control=control, assignment=assignment,
                                   kind=control.kind, item_id=assignment.item_id, criterion=criterion, answer={},
                                   attempt=attempt, origin=origin)
    if per_output:
        merged = dict(current.answer)
        merged["scores"] = {**merged.get("scores", {}), **answer["scores"]}
        if "spans" in answer:
            merged["spans"] = {**merged.get("spans", {}), **answer["spans"]}
        current.answer = merged
    else:
        current.answer = answer
    current.time_spent_ms = (current.time_spent_ms or 0) + (judgement.time_spent_ms or 0) or None
    current.save()
    rows[criterion] = current

    aliases = {str(a) for a in unit.outputs}
    complete = all(c in rows and (not per_output or set(rows[c].answer.get("scores", {})) >= aliases)
                   for c in campaign.criteria)
    if complete:
        failed = False
        if control.kind == ControlUnit.Kind.GOLD:
            for c, cj in rows.items():
                cj.passed = not _gold_problems(campaign, control, c, cj.answer)
                failed = failed or not cj.passed
                cj.save(update_fields=["passed", "updated_at"])
        if not (failed and control.gold.mode == GoldUnit.Mode.LOUD):
            assignment_finish(assignment=assignment, enrolment=enrolment,
                              time_spent_ms=sum(cj.time_spent_ms or 0 for cj in rows.values()) or None)
            judgement.status = JudgementBase.Status.COMPLETE
    if isinstance(judgement, SpanJudgement):
        judgement._prefetched_objects_cache = {"spans": [ErrorSpan(judgement=judgement, **s) for s in spans]}
    return judgement
