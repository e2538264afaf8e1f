"""Note lines of a judgements file (issue 41 part 3): a unit's special answer or comment, as
`export_dataset` writes them into judgements.jsonl beside the judgements:

    {"item": "i1", "systems": ["sysA"], "annotator": "a1", "criterion": "fluency", "special": "[missing]"}
    {"item": "i1", "systems": ["sysA"], "annotator": "a1", "comment": "The source is cut off."}

`systems`: the systems of the unit's outputs. Checked as a submission's are (the campaign must offer
the answer or the field); an identical note already stored is skipped, a different one is a line error.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError

from annotations.models import UnitNote
from annotations.services.imports.common import name_check
from annotations.services.unit_notes import unit_notes_split

NOTE_KEYS = frozenset({"special", "comment"})
ALLOWED = frozenset({"item", "systems", "annotator", "criterion", "special", "comment", "provenance"})


def is_note(obj) -> bool:
    """A note line: `special` or `comment`, and the unit's `systems` (a judgement line with an extra
    key stays a judgement line, refused for that key)."""
    return isinstance(obj, dict) and "systems" in obj and bool(NOTE_KEYS & set(obj))


@dataclass
class NoteRecord:
    line: int
    annotator: str
    item_id: int
    outputs: list
    criterion: str
    special: str
    text: str

    @property
    def key(self) -> tuple:
        return (self.annotator, "-".join(map(str, self.outputs)), self.criterion)

    @property
    def value(self) -> tuple:
        return (self.special, self.text)


def note_records(objects, problems, *, campaign, lookup, seen: set | None = None) -> list[NoteRecord]:
    """The note lines checked; one problem per refused line. `seen` carries the notes of earlier
    batches of one file (a second note on a unit is refused across batches too)."""

    records = []
    if seen is None:
        seen = set()
    for line, obj in objects:
        errors: list[str] = []
        unknown = sorted(set(obj) - ALLOWED)
        if unknown:
            problems.add(line, f"unknown keys {', '.join(unknown)} in a note line")
            continue
        annotator, problem = name_check(obj.get("annotator"), "annotator")
        item_name, item_problem = name_check(obj.get("item"), "item")
        for p in (problem, item_problem):
            if p:
                errors.append(p)
        item_id = lookup.items.get(item_name) if not item_problem else None
        if item_id is None and not item_problem:
            errors.append(f"unknown item {item_name!r}")
        systems = obj.get("systems")
        if not isinstance(systems, list) or not systems:
            errors.append("systems must be a non-empty list of the unit's systems")
            systems = []
        outputs = []
        if item_id is not None:
            outputs = [lookup.output(item_id, item_name, s, "systems", errors) for s in systems]
        answer = {k: obj[k] for k in ("criterion", "special", "comment") if k in obj}
        try:
            _, notes = unit_notes_split(campaign, [answer])
        except ValidationError as exc:
            errors.append("; ".join(m.split(": ", 1)[-1] for m in exc.messages))
            notes = None
        if errors:
            problems.add(line, "; ".join(errors))
            continue
        criterion, special = next(iter(notes.special.items()), ("", ""))
        record = NoteRecord(line, annotator, item_id, sorted(outputs), criterion, special, notes.comment)
        if record.key in seen:
            problems.add(line, f"a second note of annotator {annotator!r} on this unit for {criterion or 'comment'!r}")
            continue
        seen.add(record.key)
        records.append(record)
    return records


def stored_notes(campaign, annotator_ids: dict[str, int]) -> dict[tuple, tuple]:
    names = {pk: name for name, pk in annotator_ids.items()}
    rows = UnitNote.objects.filter(campaign=campaign, annotator_id__in=list(names)).values_list(
        "annotator_id", "unit_key", "criterion", "special", "text"
    )
    return {(names[a], k, c): (s, t) for a, k, c, s, t in rows}


def notes_write(campaign, records: list[NoteRecord], annotator_ids: dict[str, int]) -> None:
    UnitNote.objects.bulk_create(
        [
            UnitNote(
                campaign=campaign,
                annotator_id=annotator_ids[r.annotator],
                item_id=r.item_id,
                outputs=r.outputs,
                unit_key="-".join(map(str, r.outputs)),
                criterion=r.criterion,
                special=r.special,
                text=r.text,
            )
            for r in records
        ]
    )
