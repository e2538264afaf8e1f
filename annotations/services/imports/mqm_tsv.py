"""WMT's MQM ratings TSV (google/wmt-mqm-human-evaluation; read by mt-metrics-eval's score_mqm.py)
turned into judgement lines of the campaign's own format, each numbered by its first row.

Columns, named by the header row (others are ignored): `system doc doc_id seg_id rater source
target category severity`. One row per error; the error's span is marked in `target` with
`<v>...</v>` (no mark: an error without a place in the target, e.g. an omission or an error
marked in the source, kept as a missing-content span); a `No-error` row stands for a segment
the rater found no error in. The row's item is its `seg_id` (as text), its system `system`; the
rows of one (rater, system, seg_id) are one judgement. Fields are split on tabs without quoting,
as score_mqm.py reads them (csv.QUOTE_NONE).

Rows are checked here with their own line numbers (fields, marks, category, severity, the target
against the output's text); the judgements they make then go through the same checks as every
other import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from annotations.models import Campaign, Output
from annotations.protocols import mqm_scoring as mq
from annotations.protocols.mqm_scoring import flat
from annotations.services.imports.errors import Problems
from annotations import protocols

COLUMNS = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity")
MARK = re.compile(r"</?v>")


def unmark(target: str) -> tuple[str, tuple[int, int] | None]:
    """'a <v>bad</v> word' -> ('a bad word', (2, 5)), offsets in code points; ValueError when the
    marks are not one opening and one closing mark in that order."""
    marks = [(m.start(), m.group()) for m in MARK.finditer(target)]
    if not marks:
        return target, None
    if [m for _, m in marks] != ["<v>", "</v>"]:
        raise ValueError("the target must mark one error span, as <v>...</v>")
    (open_at, _), (close_at, _) = marks
    before, inside, after = target[:open_at], target[open_at + 3 : close_at], target[close_at + 4 :]
    if not inside.strip():
        raise ValueError("the <v>...</v> mark holds no text")
    return before + inside + after, (len(before), len(before) + len(inside))


def mqm_tsv_objects(
    lines: Iterable[tuple[int, str]], problems: Problems, *, campaign: Campaign, skip_invalid: bool = False
) -> list[tuple[int, dict]]:
    """The judgement lines of a TSV file (`lines`: its numbered lines of text, as
    `reading.decoded_lines` reads them), as (line of the judgement's first row, object).

    `skip_invalid`: a judgement is all the rows of one (rater, system, seg_id); when one of them is
    refused, the others are left out too (importing them would score the output without that
    error), each reported with the line that was refused."""

    protocol = protocols.of(campaign)
    lines = ((n, t) for n, t in lines if t.strip())
    first = next(lines, None)
    if first is None:
        return []
    header_line, header = first
    names = header.split("\t")
    absent = [c for c in COLUMNS if c not in names]
    if absent:
        problems.add(header_line, f"the header must name the columns {' '.join(COLUMNS)}; missing: {', '.join(absent)}")
        return []
    at = {c: names.index(c) for c in COLUMNS}
    lookup = mq.category_lookup(protocol.typology(campaign))
    offered = protocol.severities(campaign)
    criterion = campaign.criteria[0]
    texts = _texts(campaign)
    groups: dict[tuple, tuple[int, dict]] = {}
    rows_of: dict[tuple, list[int]] = {}
    refused: dict[tuple, int] = {}
    refused_lines: set[int] = set()
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) != len(names):
            problems.add(number, f"expected {len(names)} tab-separated fields (as the header), got {len(fields)}")
            continue
        row = {c: fields[i] for c, i in at.items()}
        for column in ("system", "seg_id", "rater"):
            if not row[column].strip():
                problems.add(number, f"empty {column}")
                break
        else:
            key = (row["rater"], row["system"], row["seg_id"])
            rows_of.setdefault(key, []).append(number)
            span = _span(number, row, problems, lookup=lookup, offered=offered, texts=texts)
            if span is False:
                refused.setdefault(key, number)
                refused_lines.add(number)
                continue
            if key not in groups:
                groups[key] = (
                    number,
                    {
                        "item": row["seg_id"],
                        "system": row["system"],
                        "annotator": row["rater"],
                        "criterion": criterion,
                        "spans": [],
                    },
                )
            if span is not None:
                groups[key][1]["spans"].append(span)
    if skip_invalid:
        for key, bad in refused.items():
            for number in rows_of[key]:
                if number not in refused_lines:
                    problems.add(
                        number,
                        f"left out with line {bad}, refused: the rows of rater {key[0]!r}, system "
                        f"{key[1]!r}, seg_id {key[2]!r} are one judgement",
                    )
            groups.pop(key, None)
    if not groups and not problems:
        problems.add(0, "the file holds no ratings")
    return sorted(groups.values(), key=lambda g: g[0])


def _texts(campaign: Campaign) -> dict[tuple[str, str], str]:
    """(item external id, system name) -> the output's text, as one TSV field."""
    rows = Output.objects.filter(item__dataset=campaign.dataset).values_list(
        "item__external_id", "system__name", "text"
    )
    return {(item, system): flat(text) for item, system, text in rows}


def _span(number: int, row: dict, problems: Problems, *, lookup: dict, offered: list[str], texts: dict):
    """The row's span (None: a No-error row; False: the row is refused, with its reasons added)."""
    severity, category = row["severity"].strip().lower(), row["category"].strip()
    if severity == mq.NO_ERROR or category.lower() == mq.NO_ERROR:
        return None
    if severity not in offered:
        problems.add(
            number, f"severity {row['severity']!r} is not one of the campaign's ({', '.join(offered)}, No-error)"
        )
        return False
    found = lookup.get(mq.category_key(category)) if category else None
    if found is None:
        problems.add(number, f"category {row['category']!r} is not in the campaign's typology")
        return False
    try:
        target, where = unmark(row["target"])
    except ValueError as exc:
        problems.add(number, str(exc))
        return False
    stored = texts.get((row["seg_id"], row["system"]))
    if stored is not None and stored != target:
        problems.add(
            number,
            f"the target (without its <v> marks) is not the output of system {row['system']!r} for "
            f"item {row['seg_id']!r} in the dataset",
        )
        return False
    if where is None:
        return {"missing": True, "severity": severity, "category": found}
    return {"start": where[0], "end": where[1], "severity": severity, "category": found}


def _document(row: dict) -> dict:
    """The item's `doc` and `doc_pos` from the TSV's `doc` and `doc_id` (in WMT's files `doc_id`
    numbers the segment within its document, from 1; `seg_id` numbers it in the whole test set)."""
    doc = row["doc"].strip()
    if not doc:
        return {}
    pos = row["doc_id"].strip()
    return {"doc": doc, "doc_pos": int(pos)} if pos.isascii() and pos.isdigit() else {"doc": doc}


def mqm_tsv_items(lines: Iterable[tuple[int, str]], problems: Problems) -> list[tuple[int, dict]]:
    """The dataset a WMT MQM TSV was rated on, as dataset item objects (`import_dataset --format
    mqm-tsv`): one item per `seg_id` (its `source`; meta `doc` and `doc_id`, which the TSV export
    writes back; the item's `doc` and `doc_pos` from them), one output per (seg_id, system): the `target` with its <v> marks removed, so
    that `import_judgements --format mqm-tsv` of the same file then matches every row. Rows of one
    segment must agree on the source, rows of one output on the target (both without marks). Items come in
    `seg_id` order (numeric where every id is a number, as in WMT's files)."""
    lines = ((n, t) for n, t in lines if t.strip())
    first = next(lines, None)
    if first is None:
        return []
    header_line, header = first
    names = header.split("\t")
    needed = ("system", "doc", "doc_id", "seg_id", "source", "target")
    absent = [c for c in needed if c not in names]
    if absent:
        problems.add(header_line, f"the header must name the columns {' '.join(needed)}; missing: {', '.join(absent)}")
        return []
    at = {c: names.index(c) for c in needed}
    items: dict[str, tuple[int, dict]] = {}
    first_target: dict[tuple[str, str], int] = {}
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) != len(names):
            problems.add(number, f"expected {len(names)} tab-separated fields (as the header), got {len(fields)}")
            continue
        row = {c: fields[i] for c, i in at.items()}
        if not row["seg_id"].strip() or not row["system"].strip():
            problems.add(number, "empty " + ("seg_id" if not row["seg_id"].strip() else "system"))
            continue
        # Any <v> mark goes, balanced or not: the output's text is the same either way.
        target = MARK.sub("", row["target"])
        # A rater may mark an error in the source (e.g. an omission) with <v> there too.
        source = MARK.sub("", row["source"])
        if row["seg_id"] not in items:
            items[row["seg_id"]] = (
                number,
                {
                    "item": row["seg_id"],
                    "source": source,
                    "outputs": {},
                    "meta": {"doc": row["doc"], "doc_id": row["doc_id"]},
                    **_document(row),
                },
            )
        line, item = items[row["seg_id"]]
        if item["source"] != source:
            problems.add(number, f"the source differs from line {line}'s for seg_id {row['seg_id']!r}")
            continue
        stored = item["outputs"].setdefault(row["system"], target)
        first_target.setdefault((row["seg_id"], row["system"]), number)
        if stored != target:
            problems.add(
                number,
                f"the target (without its <v> marks) differs from line "
                f"{first_target[(row['seg_id'], row['system'])]}'s for system {row['system']!r} "
                f"and seg_id {row['seg_id']!r}",
            )
    numeric = all(k.isdigit() for k in items)
    order = sorted(items, key=int) if numeric else list(items)
    return [items[k] for k in order]
