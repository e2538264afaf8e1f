"""A unit's free text and special answers (issue 41 part 3), beside its judgements.

A submission's `judgements` list may hold, besides the protocol's answers:
- `{"criterion": C, "special": S}`: special answer S (one of the campaign's `special_answers`, e.g.
  "[missing]") for criterion C on the whole unit, in place of its answers: no judgement row is
  stored for C, so scores, agreement and allocation never see it; a `UnitNote` keeps it;
- `{"comment": T}`: the unit's free text (option `unit_text`), at most `text_max_length` characters.
The page, the unit API and the revise page send them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import connection

from annotations import protocols, rows as rows_sql
from annotations.models import Assignment, Campaign, UnitNote


@dataclass
class UnitNotes:
    special: dict[str, str] = field(default_factory=dict)  # criterion -> special answer
    comment: str = ""

    def __bool__(self) -> bool:
        return bool(self.special or self.comment)


def _fail(index: int, text: str) -> ValidationError:
    return ValidationError({"judgements": [f"judgement {index}: {text}"]})


def unit_notes_split(campaign: Campaign, answers) -> tuple[list, UnitNotes]:
    """(the protocol's answers, the unit's notes), the notes checked. A campaign that offers no
    special answer and no free text costs one scan of the list and no query."""
    if not isinstance(answers, list):
        return answers, UnitNotes()
    protocol = protocols.of(campaign)
    notes, kept = UnitNotes(), []
    for index, answer in enumerate(answers, start=1):
        if not isinstance(answer, dict) or ("special" not in answer and "comment" not in answer):
            kept.append(answer)
            continue
        if "comment" in answer:
            if set(answer) != {"comment"}:
                raise _fail(index, 'a comment is sent alone: {"comment": text}')
            prompt, limit = protocol.option(campaign, "unit_text"), protocol.option(campaign, "text_max_length")
            text = answer["comment"]
            if not prompt:
                raise _fail(index, "this campaign has no free-text field")
            if not isinstance(text, str):
                raise _fail(index, "comment must be text")
            if len(text) > limit:
                raise _fail(index, f"comment longer than {limit} characters")
            if notes.comment:
                raise _fail(index, "a unit has one comment")
            notes.comment = text.strip()
            continue
        if set(answer) != {"criterion", "special"}:
            raise _fail(index, 'a special answer is {"criterion": name, "special": answer}')
        offered = protocol.option(campaign, "special_answers") or []
        criterion, special = answer["criterion"], answer["special"]
        if not offered:
            raise _fail(index, "this campaign offers no special answers")
        if special not in offered:
            raise _fail(index, f"special answer {str(special)[:50]!r} is not one of {', '.join(offered)}")
        if criterion not in campaign.criteria:
            raise _fail(index, f"unknown criterion {str(criterion)[:100]!r}")
        if criterion in notes.special:
            raise _fail(index, "answers the same question twice")
        notes.special[criterion] = special
    for index, answer in enumerate(kept, start=1):
        if isinstance(answer, dict) and answer.get("criterion") in notes.special:
            raise _fail(index, f"criterion {answer['criterion']!r} has a special answer and a judgement")
    return kept, notes


def unit_notes_write(*, assignment: Assignment, notes: UnitNotes, replace: bool = False) -> None:
    """Store a unit's notes (one INSERT; nothing when there are none). `replace`: the unit is being
    revised, its earlier notes go first."""
    if not notes and not (replace and protocols.of(assignment.campaign).notes_offered(assignment.campaign)):
        return  # no statement for a campaign without free text or special answers
    outputs = sorted(assignment.unit.outputs)
    key = "-".join(map(str, outputs))
    if replace:
        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {rows_sql.table(UnitNote)} WHERE campaign_id = %s AND annotator_id = %s AND unit_key = %s",
                [assignment.campaign_id, assignment.annotator_id, key],
            )
    if not notes:
        return
    base = {
        "campaign_id": assignment.campaign_id,
        "annotator_id": assignment.annotator_id,
        "item_id": assignment.item_id,
        "assignment_id": assignment.pk,
        "outputs": outputs,
        "unit_key": key,
    }
    found = [UnitNote(**base, criterion=c, special=s) for c, s in notes.special.items()]
    if notes.comment:
        found.append(UnitNote(**base, criterion="", text=notes.comment))
    rows_sql.insert(UnitNote, found)
