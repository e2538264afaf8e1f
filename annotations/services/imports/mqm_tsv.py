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

import json
import re
import uuid
from collections.abc import Iterable, Iterator

from django.db import connection

from annotations import protocols
from annotations.models import Campaign, Output
from annotations.protocols import mqm_scoring as mq
from annotations.protocols.mqm_scoring import flat
from annotations.services.imports.errors import Problems

COLUMNS = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity")
MARK = re.compile(r"</?v>")
# Judgements (items) read from PostgreSQL at a time (a server-side cursor's fetch), and rows
# copied to it at a time: between two copies the reader may report progress (an import job
# writes it to the database, which it cannot do while a COPY holds the connection).
GROUPS_FETCHED = 2000
ITEMS_FETCHED = 500  # items carry their texts
ROWS_COPIED = 2000


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
) -> Iterator[tuple[int, dict]]:
    """The judgement lines of a TSV file (`lines`: its numbered lines of text, as
    `reading.decoded_lines` reads them), as (line of the judgement's first row, object), in that
    order. Call it inside the import's transaction.

    The rows of one judgement may lie anywhere in the file (WMT's files keep them together, a
    sorted or merged file need not), so they are not grouped in this process: each checked row
    goes with COPY to a temporary table (dropped at commit), and PostgreSQL groups them; the
    judgements are then read through a server-side cursor. Memory stays flat whatever the file.

    `skip_invalid`: a judgement is all the rows of one (rater, system, seg_id); when one of them is
    refused, the others are left out too (importing them would score the output without that
    error), each reported with the line that was refused."""

    protocol = protocols.of(campaign)
    lines = ((n, t) for n, t in lines if t.strip())
    first = next(lines, None)
    if first is None:
        return
    header_line, header = first
    names = header.split("\t")
    absent = [c for c in COLUMNS if c not in names]
    if absent:
        problems.add(header_line, f"the header must name the columns {' '.join(COLUMNS)}; missing: {', '.join(absent)}")
        return
    at = {c: names.index(c) for c in COLUMNS}
    lookup = mq.category_lookup(protocol.typology(campaign))
    offered = protocol.severities(campaign)
    criterion = campaign.criteria[0]
    texts = _texts(campaign)
    table = f"mqm_rows_{uuid.uuid4().hex[:16]}"
    columns = ("line", "rater", "system", "seg_id", "span", "refused")
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE {table} (line integer NOT NULL, rater text NOT NULL, system text NOT NULL, "
            f"seg_id text NOT NULL, span text, refused boolean NOT NULL) ON COMMIT DROP"
        )
    batch: list[tuple] = []
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) != len(names):
            problems.add(number, f"expected {len(names)} tab-separated fields (as the header), got {len(fields)}")
            continue
        row = {c: fields[i] for c, i in at.items()}
        empty = next((c for c in ("system", "seg_id", "rater") if not row[c].strip()), None)
        if empty:
            problems.add(number, f"empty {empty}")
            continue
        span = _span(number, row, problems, lookup=lookup, offered=offered, texts=texts)
        batch.append(
            (number, row["rater"], row["system"], row["seg_id"], json.dumps(span) if span else None, span is False)
        )
        if len(batch) >= ROWS_COPIED:
            _copy(table, columns, batch)
            batch = []
    _copy(table, columns, batch)
    # One row per judgement: its first accepted row, its spans in file order; for a judgement with
    # a refused row, that row's line and the lines of its other rows (left out with it).
    grouped = f"""
        SELECT min(line) FILTER (WHERE NOT refused) AS first, rater, system, seg_id,
               array_agg(span ORDER BY line) FILTER (WHERE span IS NOT NULL AND NOT refused),
               min(line) FILTER (WHERE refused),
               CASE WHEN bool_or(refused) THEN array_agg(line ORDER BY line) FILTER (WHERE NOT refused) END
        FROM {table}
        GROUP BY rater, system, seg_id
        HAVING bool_or(NOT refused)
        ORDER BY first
    """
    yielded = 0
    with connection.chunked_cursor() as cursor:
        cursor.execute(grouped)
        while rows := cursor.fetchmany(GROUPS_FETCHED):
            for line, rater, system, seg_id, spans, bad, kept in rows:
                if bad is not None and skip_invalid:
                    for number in kept:
                        problems.add(
                            number,
                            f"left out with line {bad}, refused: the rows of rater {rater!r}, system "
                            f"{system!r}, seg_id {seg_id!r} are one judgement",
                        )
                    continue
                yielded += 1
                yield (
                    line,
                    {
                        "item": seg_id,
                        "system": system,
                        "annotator": rater,
                        "criterion": criterion,
                        "spans": [json.loads(span) for span in spans or ()],
                    },
                )
    if not yielded and not problems:
        problems.add(0, "the file holds no ratings")


def _copy(table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """`rows` into the temporary `table` with one COPY."""
    if not rows:
        return
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


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


def mqm_tsv_items(lines: Iterable[tuple[int, str]], problems: Problems) -> Iterator[tuple[int, dict]]:
    """The dataset a WMT MQM TSV was rated on, as dataset item objects (`import_dataset --format
    mqm-tsv`): one item per `seg_id` (its `source`; meta `doc` and `doc_id`, which the TSV export
    writes back; the item's `doc` and `doc_pos` from them), one output per (seg_id, system): the `target` with its <v> marks removed, so
    that `import_judgements --format mqm-tsv` of the same file then matches every row. Rows of one
    segment must agree on the source, rows of one output on the target (both without marks). Items come in
    `seg_id` order (numeric where every id is a number, as in WMT's files).

    Read as it is consumed, inside the import's transaction: the rows go with COPY to a temporary
    table (dropped at commit) and PostgreSQL groups them, so memory stays flat whatever the file."""
    lines = ((n, t) for n, t in lines if t.strip())
    first = next(lines, None)
    if first is None:
        return
    header_line, header = first
    names = header.split("\t")
    needed = ("system", "doc", "doc_id", "seg_id", "source", "target")
    absent = [c for c in needed if c not in names]
    if absent:
        problems.add(header_line, f"the header must name the columns {' '.join(needed)}; missing: {', '.join(absent)}")
        return
    at = {c: names.index(c) for c in needed}
    numeric = True
    table = f"mqm_items_{uuid.uuid4().hex[:16]}"
    columns = ("line", "seg_id", "system", "source", "target", "doc", "doc_id")
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE {table} (line integer NOT NULL, seg_id text NOT NULL, system text NOT NULL, "
            f"source text NOT NULL, target text NOT NULL, doc text NOT NULL, doc_id text NOT NULL) ON COMMIT DROP"
        )
    batch: list[tuple] = []
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) != len(names):
            problems.add(number, f"expected {len(names)} tab-separated fields (as the header), got {len(fields)}")
            continue
        row = {c: fields[i] for c, i in at.items()}
        if not row["seg_id"].strip() or not row["system"].strip():
            problems.add(number, "empty " + ("seg_id" if not row["seg_id"].strip() else "system"))
            continue
        numeric = numeric and row["seg_id"].isascii() and row["seg_id"].isdigit()
        # Any <v> mark goes, balanced or not: the output's text is the same either way.
        # A rater may mark an error in the source (e.g. an omission) with <v> there too.
        batch.append(
            (
                number,
                row["seg_id"],
                row["system"],
                MARK.sub("", row["source"]),
                MARK.sub("", row["target"]),
                row["doc"],
                row["doc_id"],
            )
        )
        if len(batch) >= ROWS_COPIED:
            _copy(table, columns, batch)
            batch = []
    _copy(table, columns, batch)
    with connection.chunked_cursor() as cursor:
        # A row whose source differs from its segment's first row's is refused; among the others,
        # one whose target differs from the first of its (segment, system).
        cursor.execute(
            f"""
            WITH r AS (
                SELECT line, seg_id, system, target, source <> first_value(source) OVER s AS bad_source,
                       first_value(line) OVER s AS seg_line
                FROM {table} WINDOW s AS (PARTITION BY seg_id ORDER BY line)
            ), o AS (
                SELECT line, seg_id, system, bad_source, seg_line, first_value(line) OVER w AS target_line,
                       NOT bad_source AND target <> first_value(target) OVER w AS bad_target
                FROM r WINDOW w AS (PARTITION BY seg_id, system, bad_source ORDER BY line)
            )
            SELECT line, seg_id, system, bad_source, seg_line, target_line FROM o
            WHERE bad_source OR bad_target ORDER BY line
            """
        )
        while rows := cursor.fetchmany(GROUPS_FETCHED):
            for number, seg_id, system, bad_source, seg_line, target_line in rows:
                if bad_source:
                    problems.add(number, f"the source differs from line {seg_line}'s for seg_id {seg_id!r}")
                else:
                    problems.add(
                        number,
                        f"the target (without its <v> marks) differs from line {target_line}'s for system "
                        f"{system!r} and seg_id {seg_id!r}",
                    )
    order = "i.seg_id::numeric, i.line" if numeric else "i.line"
    grouped = f"""
        WITH i AS (
            SELECT DISTINCT ON (seg_id) seg_id, line, source, doc, doc_id FROM {table} ORDER BY seg_id, line
        ), f AS (  -- each output's first row among those that agree with their segment's source
            SELECT DISTINCT ON (t.seg_id, t.system) t.seg_id, t.system, t.line, t.target
            FROM {table} t JOIN i ON i.seg_id = t.seg_id AND i.source = t.source
            ORDER BY t.seg_id, t.system, t.line
        )
        SELECT i.seg_id, i.line, i.source, i.doc, i.doc_id,
               array_agg(f.system ORDER BY f.line), array_agg(f.target ORDER BY f.line)
        FROM i JOIN f USING (seg_id)
        GROUP BY i.seg_id, i.line, i.source, i.doc, i.doc_id
        ORDER BY {order}
    """
    with connection.chunked_cursor() as cursor:
        cursor.execute(grouped)
        while rows := cursor.fetchmany(ITEMS_FETCHED):
            for seg_id, line, source, doc, doc_id, systems, targets in rows:
                row = {"doc": doc, "doc_id": doc_id}
                yield (
                    line,
                    {
                        "item": seg_id,
                        "source": source,
                        "outputs": dict(zip(systems, targets)),
                        "meta": row,
                        **_document(row),
                    },
                )
