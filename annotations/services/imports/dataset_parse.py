"""Parsing dataset files: JSONL, or the wide CSV format turned into the same item objects.

CSV ("wide", one item a row, UTF-8, comma-separated; ``.tsv`` files are read
tab-separated), a header line naming the columns:

- ``item`` (required): the item id;
- ``source``: the input text;
- ``data``: JSON list of [subject, predicate, object] triples;
- ``meta``: JSON object;
- ``reference``, ``reference_2``, ``reference_3``, ... (also ``reference_1``):
  one reference a column, in the order of their number (``reference`` first);
- ``output:<system>``: one column per system, e.g. ``output:baseline``;
- ``doc``, ``doc_pos``: the document the item is a segment of and its place in it;
- ``media``: JSON object, as the JSONL field (imports/media.py).

An empty CSV cell means "absent": an item without a reference or without an
output of some system simply leaves the cell empty (so an empty output text
can only be imported from JSONL).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from annotations.services.imports.errors import ImportFailed, LineError, Problems
from annotations.services.imports.reading import Progress, csv_stream, decoded_lines, json_loads, jsonl_stream

_REFERENCE_COLUMN = re.compile(r"^reference(?:_(\d+))?$")
OUTPUT_PREFIX = "output:"
# mqm-tsv: WMT's MQM ratings TSV read for the items and outputs it rates (imports/mqm_tsv.py).
FORMATS = ("jsonl", "csv", "mqm-tsv")


def format_of(fmt: str | None, filename: str | None) -> tuple[str, str]:
    """(format, csv delimiter) from the explicit format or the file name."""
    suffix = Path(filename).suffix.lower() if filename else ""
    if fmt is None:
        fmt = "csv" if suffix in (".csv", ".tsv") else "jsonl"
    if fmt not in FORMATS:
        raise ImportFailed([LineError(0, f"unknown format {fmt!r}: expected {', '.join(FORMATS)}")])
    return fmt, "\t" if suffix == ".tsv" else ","


def dataset_objects(
    stream, problems: Problems, *, fmt: str, delimiter: str, hasher=None, progress: Progress = None
) -> Iterator[tuple[int, dict]]:
    """(line, item object) for each item of the binary file `stream`, read as it is consumed; bad
    lines go to `problems`, every byte read to `hasher`."""
    if fmt == "jsonl":
        return jsonl_stream(stream, problems, hasher=hasher, progress=progress)
    if fmt == "mqm-tsv":
        from annotations.services.imports.mqm_tsv import mqm_tsv_items  # lazy: cycle with mqm_tsv

        return mqm_tsv_items(decoded_lines(stream, problems, hasher=hasher, progress=progress), problems)
    return csv_item_objects(stream, problems, delimiter, hasher=hasher, progress=progress)


def csv_item_objects(
    stream, problems: Problems, delimiter: str, *, hasher=None, progress: Progress = None
) -> Iterator[tuple[int, dict]]:
    """Rows of the wide CSV format turned into the JSONL item objects, one row at a time."""
    records = csv_stream(stream, problems, hasher=hasher, delimiter=delimiter, progress=progress)
    first = next(records, None)
    if first is None:
        return
    header: list[str] = first[1]
    references: list[tuple[int, str]] = []
    systems: list[tuple[str, str]] = []
    unknown = []
    for column in header:
        match = _REFERENCE_COLUMN.match(column)
        if match:
            references.append((int(match.group(1) or 0), column))
        elif column.startswith(OUTPUT_PREFIX) and column[len(OUTPUT_PREFIX) :].strip():
            systems.append((column[len(OUTPUT_PREFIX) :].strip(), column))
        elif column not in ("item", "source", "data", "meta", "doc", "doc_pos", "media"):
            unknown.append(column)
    names = [name for name, _ in systems]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        problems.add(
            1,
            f"several columns name system {', '.join(map(repr, twice))} (names are compared "
            "without surrounding whitespace)",
        )
    if "item" not in header:
        problems.add(1, "missing column 'item'")
    if unknown:
        problems.add(
            1,
            f"unknown column {', '.join(map(repr, unknown))} (expected item, source, data, meta, "
            "reference, reference_N, output:SYSTEM, doc, doc_pos, media)",
        )
    if problems:
        for _ in records:
            pass  # the rest of the file is still read: its hash, its undecodable lines
        return
    references.sort()
    for line, row in records:
        obj: dict = {"item": row["item"]}
        if row.get("source"):
            obj["source"] = row["source"]
        bad = False
        for column in ("data", "meta", "media"):
            if row.get(column, "").strip():
                try:
                    obj[column] = json_loads(row[column])
                except ValueError as exc:
                    problems.add(line, f"column {column}: invalid JSON: {exc}")
                    bad = True
        if row.get("doc", "").strip():
            obj["doc"] = row["doc"]
        pos = row.get("doc_pos", "").strip()
        if pos:
            # Validated with the JSONL field: a non-number is refused there, with its text.
            obj["doc_pos"] = int(pos) if pos.isascii() and pos.isdigit() else pos
        refs = [row[c] for _, c in references if row[c].strip()]
        if refs:
            obj["references"] = refs
        outputs = {s: row[c] for s, c in systems if row[c] != ""}
        if outputs:
            obj["outputs"] = outputs
        if not bad:
            yield line, obj
