"""Validation of judgement lines: each object becomes a `JudgementRecord` or line errors.

JSONL, one judgement a line; the campaign's protocol decides the format:

- rating (likert, rankme): ``{"item", "system", "annotator", "criterion", "score"}``,
  optional ``"rank"`` (whole number >= 1);
- pairwise: ``{"item", "annotator", "criterion", "a": S1, "b": S2, "winner": "a"|"b"|"tie"}``
  (a = the output shown first; stored with the lower output id first, winner flipped);
- best-worst: ``{"item", "annotator", "criterion", "outputs": [S1, S2, ...], "best": S, "worst": S}``;
- error spans (esa): ``{"item", "system", "annotator", "criterion", "score", "spans": [...]}``, each span
  ``{"start", "end", "severity"}`` (character offsets into the output, end exclusive) or
  ``{"missing": true, "severity"}``; ``spans`` may be omitted (no error marked).

All formats accept an optional ``"time_spent_ms"``, an optional ``"shown_order"`` (the systems in
the order they were shown: for ratings and ESA the outputs side by side, which must include the
judged one; for pairwise and best-worst the same systems as ``a``/``b`` or ``outputs``, whose
order it then replaces) and an optional ``"provenance"`` object, which is not imported (what
`export_dataset` adds to each line: output text, status, quality control), so an exported
judgement file imports back as it is. Once systems are mapped to output ids,
the answer goes through its protocol's `check_answer` (`annotations.protocols`),
the rules every other path uses, with the same messages. Which keys a line has, how
its answer is read and what makes two lines the same unit are the protocol's
(`annotations.protocols.imports`): nothing here branches on the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from annotations.models import Campaign, Dataset, Item, Output, System
from annotations.protocols import registry as protocols
from annotations.protocols.base import Protocol
from annotations.services import judgements as checks
from annotations.services.imports.common import name_check
from annotations.services.imports.errors import Problems


@dataclass
class JudgementRecord:
    line: int
    annotator: str
    item_id: int
    criterion: str
    time_spent_ms: int | None
    # rating
    output_id: int | None = None
    score: float | None = None
    rank: int | None = None
    # pairwise (canonical order) and shown order
    a_id: int | None = None
    b_id: int | None = None
    winner: str | None = None
    shown: list[int] = field(default_factory=list)
    # best-worst
    best_id: int | None = None
    worst_id: int | None = None
    # error spans (esa)
    spans: list[dict] = field(default_factory=list)


class Lookup:
    """Items, systems and outputs of the campaign's dataset, by their file names."""

    def __init__(self, dataset: Dataset):
        self.items = dict(Item.objects.filter(dataset=dataset).values_list("external_id", "id"))
        self.systems = dict(System.objects.filter(dataset=dataset).values_list("name", "id"))
        self.outputs = {
            (item_id, system_id): pk
            for pk, item_id, system_id in Output.objects.filter(item__dataset=dataset).values_list(
                "id", "item_id", "system_id"
            )
        }

    def text(self, output_id: int) -> str:
        """An output's text (for checking span offsets), read on first use."""
        if not hasattr(self, "_texts"):
            self._texts: dict[int, str] = {}
        if output_id not in self._texts:
            self._texts[output_id] = Output.objects.values_list("text", flat=True).get(pk=output_id)
        return self._texts[output_id]

    def output(self, item_id: int, external_id: str, value, what: str, errors: list[str]) -> int | None:
        name, problem = name_check(value, what)
        if problem:
            errors.append(problem)
            return None
        system_id = self.systems.get(name)
        if system_id is None:
            errors.append(f"unknown system {name!r}")
            return None
        output_id = self.outputs.get((item_id, system_id))
        if output_id is None:
            errors.append(f"system {name!r} has no output for item {external_id!r}")
        return output_id


def _other_format(protocol: Protocol, keys: set) -> str | None:
    """The name of another registered protocol whose required keys the line has, when it is not this one's
    (the first in the registry's order: a rating line reads as a likert one)."""
    for other in map(protocols.get, protocols.names()):
        # A protocol needing fewer of this one's keys (MQM: a rating line without its score) says
        # nothing: the line is this protocol's with a key missing.
        if (
            other.import_keys != protocol.import_keys
            and other.import_keys <= keys
            and not (other.import_keys < protocol.import_keys)
        ):
            return other.name
    return None


def judgement_record(
    line: int, obj: dict, *, campaign: Campaign, protocol: Protocol, lookup: Lookup
) -> tuple[JudgementRecord | None, list[str]]:
    errors: list[str] = []
    required, optional = protocol.import_keys, protocol.import_optional_keys
    missing = sorted(required - set(obj))
    if missing:
        errors.append(f"missing field {', '.join(map(repr, missing))} for a {campaign.protocol} campaign")
    unknown = sorted(set(obj) - required - optional)
    other = _other_format(protocol, set(obj)) if missing else None
    if missing and other:
        return None, [
            f"this is a {other} judgement but campaign {campaign.name!r} uses the {campaign.protocol} "
            f"protocol (expected {', '.join(sorted(required))})"
        ]
    if unknown:
        errors.append(
            f"unknown field {', '.join(map(repr, unknown))} for a {campaign.protocol} campaign "
            f"(expected {', '.join(sorted(required | optional))})"
        )
    if errors:
        return None, errors

    annotator, problem = name_check(obj["annotator"], "annotator")
    if problem:
        errors.append(problem)
    external_id, problem = name_check(obj["item"], "item")
    item_id = None
    if problem:
        errors.append(problem)
    else:
        item_id = lookup.items.get(external_id)
        if item_id is None:
            errors.append(f"unknown item {external_id!r} in dataset {campaign.dataset.name!r}")
    criterion = time_spent = None
    try:
        criterion = protocol.check_criterion(obj["criterion"], campaign=campaign)
    except ValidationError as exc:
        errors.extend(exc.messages)
    try:
        time_spent = checks.time_spent_check(obj.get("time_spent_ms"))
    except ValidationError as exc:
        errors.extend(exc.messages)
    if "provenance" in obj and not isinstance(obj["provenance"], dict):
        errors.append("provenance must be an object")
    shown_names = obj.get("shown_order")
    if shown_names is not None and (not isinstance(shown_names, list) or not shown_names):
        errors.append("shown_order must be a non-empty list of system names")
    if errors:
        return None, errors

    record = JudgementRecord(
        line=line, annotator=annotator, item_id=item_id, criterion=criterion, time_spent_ms=time_spent
    )

    def check(answer: dict, texts=None) -> dict | None:
        """The protocol's rules of the answer (systems already mapped to output ids)."""
        try:
            return protocol.check_answer(answer, campaign=campaign, criterion=criterion, texts=texts)
        except ValidationError as exc:
            errors.extend(exc.messages)
            return None

    protocol.import_answer(
        record,
        obj,
        check=check,
        text=lookup.text,
        errors=errors,
        output=lambda value, what: lookup.output(item_id, external_id, value, what, errors),
        shown_order=lambda: _shown_order(lookup, item_id, external_id, shown_names, errors),
    )
    return (None if errors else record), errors


def _shown_order(lookup: Lookup, item_id: int, external_id: str, names, errors: list[str]) -> list[int] | None:
    """Output ids of a `shown_order` list of system names (None when absent)."""
    if names is None:
        return None
    before = len(errors)
    ids = [lookup.output(item_id, external_id, name, "shown_order entry", errors) for name in names]
    if len(errors) > before:
        return None
    if len(set(ids)) != len(ids):
        errors.append("shown_order lists a system twice")
        return None
    return ids


def judgement_records(
    objects: list[tuple[int, dict]],
    problems: Problems,
    *,
    campaign: Campaign,
    protocol: Protocol,
    lookup: Lookup,
    first_line: dict[tuple, int] | None = None,
) -> list[JudgementRecord]:
    """The valid records of the file, each unit once; every problem goes to `problems`.

    `first_line` (unit -> line) carries the units of earlier batches of one file, so a unit
    judged twice is found across batches too."""
    records: list[JudgementRecord] = []
    if first_line is None:
        first_line = {}
    for line, obj in objects:
        record, errors = judgement_record(line, obj, campaign=campaign, protocol=protocol, lookup=lookup)
        for error in errors:
            problems.add(line, error)
        if record is None:
            continue
        unit = protocol.import_unit_key(record)
        if unit in first_line:
            problems.add(
                line,
                f"duplicate judgement: annotator {record.annotator!r} already judged this unit "
                f"for {record.criterion!r} on line {first_line[unit]}",
            )
            continue
        first_line[unit] = line
        records.append(record)
    return records
