"""Imported judgements flagged as controls (`"control": "degraded"|"repeat"|"gold"`).

Studies run elsewhere are checked the same way as ours: the judgement
importer hands every line with a ``"control"`` key to `control_records`, and
writes the records with `control_records_write` in its own transaction (so
the whole file still imports atomically). Such lines never reach the
judgement tables, so analysis and export do not count them.

Formats: a line is a judgement of the campaign's protocol (ARCHITECTURE.md)
plus the flag, and

- ``"degraded"``: the judgement of a damaged copy of the named system's
  output; compared with the same annotator's judgement of the original. For
  pairwise, ``"degraded": "a"|"b"`` says which side was damaged (``a`` and
  ``b`` may name the same system: an output beside its damaged copy); for
  best-worst, ``"degraded": SYSTEM`` names the damaged one of the tuple.
- ``"repeat"``: a second judgement of the same unit by the same annotator.
- ``"gold"``: a unit with a known answer, ``"expected"`` as in
  `annotations.quality.gold` with systems named by name
  (``{"*": {"min": 80}}``, ``{"*": {"winner": "sysA"}}``).
- ``"relative"`` (WMT 2026's attention checks, protocols with several outputs a screen): one line
  for the whole screen, one of whose outputs was shown damaged, ``"degraded": SYSTEM`` naming it;
  cESA and RankME ``"scores": {SYSTEM: score, ...}`` (cESA optionally ``"spans": {SYSTEM: [...]}``),
  best-worst ``"outputs"``, ``"best"``, ``"worst"``. Passed when the damaged output scores below
  every clean one (best-worst: chosen as worst), the protocol's `relative_passed`, as on the pages.
  The export writes them back in this form (controls.jsonl).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from annotations.models import Campaign, Item, Output, System
from annotations.models.quality import ControlJudgement, GoldUnit
from annotations.protocols import registry as protocols
from annotations.protocols.base import RELATIVE_COPY
from annotations.quality import gold
from annotations.services import judgements as checks

CONTROL_KINDS = ("degraded", "repeat", "gold", "relative")
_BASE = {"item", "annotator", "criterion", "control"}
_OPTIONAL = {"time_spent_ms", "shown_order", "expected", "degraded", "rank"}


@dataclass
class ControlRecord:
    line: int
    annotator: str
    kind: str
    item_id: int
    criterion: str
    answer: dict
    output_id: int | None = None
    expected: dict | None = None
    passed: bool | None = None
    time_spent_ms: int | None = None


@dataclass
class _Lookup:
    items: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)  # (item id, system name) -> output id
    texts: dict = field(default_factory=dict)  # output id -> text, read on first use

    @classmethod
    def of(cls, campaign: Campaign) -> _Lookup:
        lookup = cls(items=dict(Item.objects.filter(dataset_id=campaign.dataset_id).values_list("external_id", "id")))
        names = dict(System.objects.filter(dataset_id=campaign.dataset_id).values_list("id", "name"))
        for pk, item_id, system_id in Output.objects.filter(item__dataset_id=campaign.dataset_id).values_list(
            "id", "item_id", "system_id"
        ):
            lookup.outputs[(item_id, names[system_id])] = pk
        return lookup

    def text(self, output_id: int) -> str:
        """An output's text (span offsets are checked against it), read on first use."""
        if output_id not in self.texts:
            self.texts[output_id] = Output.objects.values_list("text", flat=True).get(pk=output_id)
        return self.texts[output_id]

    def output(self, item_id: int, system, errors: list[str], what: str) -> int | None:
        if not isinstance(system, str):
            errors.append(f"{what} must be a system name")
            return None
        found = self.outputs.get((item_id, system))
        if found is None:
            errors.append(f"{what}: no output of system {system!r} for this item")
        return found


def has_control(obj) -> bool:
    return isinstance(obj, dict) and "control" in obj


def control_records(campaign: Campaign, objects: list[tuple[int, dict]]) -> tuple[list[ControlRecord], list]:
    """Check the flagged lines; (records, [(line, reason), ...])."""
    keys = _BASE | protocols.of(campaign).file_answer_keys
    lookup = _Lookup.of(campaign)
    records, problems = [], []
    for line, obj in objects:
        errors: list[str] = []
        record = _record(line, obj, campaign, keys, lookup, errors)
        problems += [(line, e) for e in errors]
        if record is not None and not errors:
            records.append(record)
    return records, problems


def _record(line, obj, campaign, keys, lookup, errors) -> ControlRecord | None:
    protocol = protocols.of(campaign)
    control = obj.get("control")
    if control not in CONTROL_KINDS:
        errors.append(f"control must be one of {', '.join(CONTROL_KINDS)}, got {control!r}")
        return None
    if control == "relative":
        return _relative_record(line, obj, campaign, lookup, errors)
    required = keys - protocol.file_answer_optional  # e.g. ESA spans (no error marked)
    missing = sorted(required - set(obj))
    unknown = sorted(set(obj) - keys - _OPTIONAL)
    if missing:
        errors.append(f"missing field {', '.join(map(repr, missing))} for a {campaign.protocol} control")
    if unknown:
        errors.append(f"unknown field {', '.join(map(repr, unknown))}")
    if control == "gold" and "expected" not in obj:
        errors.append('a gold control needs "expected"')
    if control != "gold" and "expected" in obj:
        errors.append('"expected" belongs to gold controls only')
    if control == "degraded" and not protocol.per_output and "degraded" not in obj:
        errors.append(f'say which output was damaged: "degraded": {protocol.degraded_file_hint}')
    if errors:
        return None
    common = _common_fields(obj, campaign, protocol, lookup, errors)
    if common is None:
        return None
    item_id, criterion, time_spent = common
    record = ControlRecord(
        line=line,
        annotator=obj["annotator"].strip(),
        kind=control,
        item_id=item_id,
        criterion=criterion,
        answer={},
        time_spent_ms=time_spent,
    )

    def check(answer: dict, texts=None) -> dict | None:
        """The protocol's rules of the answer (systems already mapped to output ids)."""
        try:
            return protocol.check_answer(answer, campaign=campaign, criterion=criterion, texts=texts)
        except ValidationError as exc:
            errors.extend(exc.messages)
            return None

    found = protocol.control_file_answer(
        obj, control=control, item_id=item_id, lookup=lookup, check=check, errors=errors
    )
    if found is None:
        return None
    record.answer, record.output_id, names = found
    if control == "gold" and not errors:
        expected = obj["expected"]
        if isinstance(expected, dict) and expected and set(expected) <= protocol.gold_expected_keys:
            expected = {criterion: expected}  # a line judges one criterion: a bare expectation is for it
        if isinstance(expected, dict):
            expected = {
                c: (
                    {
                        k: names.get(v, v) if k in ("winner", "best", "worst") and v != "tie" else v
                        for k, v in spec.items()
                    }
                    if isinstance(spec, dict)
                    else spec
                )
                for c, spec in expected.items()
            }
        try:
            record.expected = gold.expectation_clean(
                campaign,
                expected,
                output_ids=sorted(names.values()),
                texts={i: lookup.text(i) for i in names.values()} if protocol.has_spans else None,
            )
        except gold.InvalidExpectation as exc:
            errors.append(f"expected: {exc}")
            return None
        spec = gold.expectation_for(record.expected, criterion)
        record.passed = None if spec is None else not gold.gold_check(campaign.protocol, spec, record.answer)
    return record


def _relative_record(line, obj, campaign, lookup, errors) -> ControlRecord | None:
    """A relative attention check's line: the screen's answer, the damaged output, passed or not."""
    protocol = protocols.of(campaign)
    if not protocol.relative_checks or protocol.relative_file_refused:
        offered = ", ".join(p.name for p in protocols.protocols().values() if p.relative_checks)
        errors.append(
            protocol.relative_file_refused
            or f"relative checks are for protocols with several outputs a screen ({offered}), not {campaign.protocol}"
        )
        return None
    keys = _BASE | {"degraded"} | protocol.relative_file_keys
    # `passed`, as the export writes it, is recomputed here, never taken from the file.
    optional = protocol.relative_file_optional | {"time_spent_ms", "shown_order", "passed"}
    missing = sorted(keys - set(obj))
    unknown = sorted(set(obj) - keys - optional)
    if missing:
        errors.append(f"missing field {', '.join(map(repr, missing))} for a {campaign.protocol} relative check")
    if unknown:
        errors.append(f"unknown field {', '.join(map(repr, unknown))} for a relative check")
    if errors:
        return None
    common = _common_fields(obj, campaign, protocol, lookup, errors)
    if common is None:
        return None
    item_id, criterion, time_spent = common

    def check(answer: dict, texts=None) -> dict | None:
        try:
            return protocol.check_answer(answer, campaign=campaign, criterion=criterion, texts=texts)
        except ValidationError as exc:
            errors.extend(exc.messages)
            return None

    found = protocol.relative_file_answer(obj, item_id=item_id, lookup=lookup, check=check, errors=errors)
    if found is None or errors:
        return None
    answer, damaged = found
    return ControlRecord(
        line=line,
        annotator=obj["annotator"].strip(),
        kind="relative",
        item_id=item_id,
        criterion=criterion,
        answer=answer,
        # The output shown damaged, as a degraded control names it; the answer calls its copy RELATIVE_COPY.
        output_id=damaged,
        passed=protocol.relative_passed(answer, RELATIVE_COPY),
        time_spent_ms=time_spent,
    )


def _common_fields(obj, campaign, protocol, lookup, errors) -> tuple[int, str, int | None] | None:
    """What every control line carries, checked: (item id, criterion, time spent), or None with the
    reasons added to `errors`."""
    if not isinstance(obj["annotator"], str) or not obj["annotator"].strip() or len(obj["annotator"]) > 200:
        errors.append("annotator must be a name of 1 to 200 characters")
    item_id = lookup.items.get(obj["item"]) if isinstance(obj["item"], str) else None
    if item_id is None:
        errors.append(f"unknown item {obj['item']!r} in dataset {campaign.dataset.name!r}")
    criterion = time_spent = None
    try:
        criterion = protocol.check_criterion(obj["criterion"], campaign=campaign)
        time_spent = checks.time_spent_check(obj.get("time_spent_ms"))
    except ValidationError as exc:
        errors.extend(exc.messages)
    if errors:
        return None
    return item_id, criterion, time_spent


def _key(annotator_id, kind, item_id, criterion, output_id, answer) -> tuple:
    return (annotator_id, kind, item_id, criterion, output_id, json.dumps(answer, sort_keys=True))


def control_records_write(campaign: Campaign, records: list[ControlRecord], annotators: dict[str, int]) -> int:
    """Insert the records not stored yet (the caller's transaction; `annotators`: name -> id).

    A line equal to a stored control answer is skipped, so importing a file
    twice changes nothing. Returns how many were inserted.
    """
    stored = {
        _key(*row)
        for row in ControlJudgement.objects.filter(
            campaign=campaign, annotator_id__in=set(annotators.values()), control__isnull=True
        ).values_list("annotator_id", "kind", "item_id", "criterion", "output_id", "answer")
    }
    new = []
    for r in records:
        key = _key(annotators[r.annotator], r.kind, r.item_id, r.criterion, r.output_id, r.answer)
        if key not in stored:
            stored.add(key)
            new.append(
                ControlJudgement(
                    campaign=campaign,
                    annotator_id=annotators[r.annotator],
                    kind=r.kind,
                    item_id=r.item_id,
                    criterion=r.criterion,
                    answer=r.answer,
                    output_id=r.output_id,
                    expected=r.expected,
                    passed=r.passed,
                    time_spent_ms=r.time_spent_ms,
                    origin=ControlJudgement.Origin.IMPORT,
                )
            )
    ControlJudgement.objects.bulk_create(new, batch_size=2000)
    _gold_units_from(campaign, records)
    return len(new)


def _gold_units_from(campaign: Campaign, records: list[ControlRecord]) -> None:
    """Each imported gold expectation also becomes a (silent) gold unit of the campaign,
    so annotators working in the workbench meet the same test questions."""

    existing = {
        (g.item_id, tuple(g.outputs), json.dumps(g.expected, sort_keys=True))
        for g in GoldUnit.objects.filter(campaign=campaign)
    }
    position = len(existing)
    units = []
    for r in records:
        if r.kind != "gold" or r.expected is None:
            continue
        outputs = sorted({r.output_id} if r.output_id else set(r.answer.get("outputs") or r.answer.get("pair") or []))
        key = (r.item_id, tuple(outputs), json.dumps(r.expected, sort_keys=True))
        if not outputs or key in existing:
            continue
        existing.add(key)
        position += 1
        units.append(
            GoldUnit(
                campaign=campaign,
                item_id=r.item_id,
                outputs=outputs,
                expected=r.expected,
                mode=GoldUnit.Mode.SILENT,
                position=position,
                explanation="Imported with its expected answer.",
            )
        )
    GoldUnit.objects.bulk_create(units, batch_size=2000)
