"""Validation of dataset lines: each item object becomes an `ItemRecord` or line errors.

JSONL, one item a line (all keys but ``item`` optional)::

    {"item": "e2e-17", "source": "...", "data": [["Blue Spice", "eatType", "pub"]],
     "references": ["...", "..."], "outputs": {"sysA": "...", "sysB": "..."}, "meta": {},
     "doc": "talk.1", "doc_pos": 3}

``data`` is a list of [subject, predicate, object] string triples; ``meta`` an
object; unknown keys are errors (they are usually typos such as ``output``).
``doc`` names the document the item is a segment of and ``doc_pos`` its place in it (a
non-negative integer, unique per document of the dataset; it needs a ``doc``).
``media`` names the item's audio, image or video files (``imports/media.py``: checked there,
files included).
Texts (source, references, outputs) longer than ``max_text_chars`` are refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from annotations.services.imports.common import name_check, text_check
from annotations.services.imports.errors import Problems
from annotations.services.imports.media import MediaFiles, media_shape_check
from annotations.services.imports.reading import has_nul

# PositiveIntegerField's range on PostgreSQL.
DOC_POS_MAX = 2**31 - 1
ITEM_KEYS = ("item", "source", "data", "references", "outputs", "meta", "doc", "doc_pos", "media")


@dataclass
class ItemRecord:
    line: int
    external_id: str
    source: str | None = None  # None: absent from the line, not compared
    data: list | None = None
    references: list[str] | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    meta: dict | None = None
    doc: str | None = None  # None: absent from the line, not compared
    doc_pos: int | None = None
    media: dict | None = None  # None: absent from the line, not compared


def item_records(
    objects: Iterable[tuple[int, dict]], problems: Problems, *, max_chars: int, media_files: MediaFiles | None = None
) -> Iterator[ItemRecord]:
    """The valid records of the file, each item id once; every problem goes to `problems`.

    A generator, so a streamed file is never held whole: only the item ids
    seen so far (with their first line, for the duplicate message) are kept.
    """
    first_line: dict[str, int] = {}
    # (doc, doc_pos) -> (line, item id): a place in a document holds one segment.
    places: dict[tuple[str, int], tuple[int, str]] = {}
    seen_any = False
    for line, obj in objects:
        seen_any = True
        record, errors = item_record(line, obj, max_chars, media_files)
        for error in errors:
            problems.add(line, error)
        if record is None:
            continue
        if record.external_id in first_line:
            first = first_line[record.external_id]
            problems.add(line, f"duplicate item id {record.external_id!r} (first on line {first})")
            continue
        first_line[record.external_id] = line
        if record.doc_pos is not None:
            place = (record.doc, record.doc_pos)
            if place in places:
                first, other = places[place]
                problems.add(
                    line,
                    f"doc {record.doc!r} already has a segment at doc_pos {record.doc_pos} "
                    f"(item {other!r}, line {first})",
                )
                continue
            places[place] = (line, record.external_id)
        yield record
    if not seen_any and not problems:
        problems.add(0, "the file holds no items")


def item_record(
    line: int, obj: dict, max_chars: int, media_files: MediaFiles | None = None
) -> tuple[ItemRecord | None, list[str]]:
    errors: list[str] = []
    unknown = sorted(set(obj) - set(ITEM_KEYS))
    if unknown:
        errors.append(f"unknown field {', '.join(map(repr, unknown))} (expected {', '.join(ITEM_KEYS)})")
    if "item" not in obj:
        errors.append("missing field 'item'")
        return None, errors
    external_id, problem = name_check(obj["item"], "item")
    if problem:
        errors.append(problem)
        return None, errors
    record = ItemRecord(line=line, external_id=external_id)
    if "source" in obj:
        record.source = text_check(obj["source"], "source", max_chars, errors)
    if "data" in obj:
        data = obj["data"]
        if not isinstance(data, list) or not all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) for x in t) for t in data
        ):
            errors.append("data must be a list of [subject, predicate, object] string triples")
        elif has_nul(data):
            errors.append("data contains a NUL character")
        elif sum(len(x) for t in data for x in t) > max_chars:
            errors.append(f"data is longer than {max_chars:,} characters (--max-text-chars)")
        else:
            record.data = data
    if "references" in obj:
        refs = obj["references"]
        if not isinstance(refs, list):
            errors.append(f"references must be a list of strings, got {type(refs).__name__}")
        else:
            record.references = [
                text_check(r, f"reference {i}", max_chars, errors, allow_empty=False) for i, r in enumerate(refs, 1)
            ]
    if "outputs" in obj:
        outputs = obj["outputs"]
        if not isinstance(outputs, dict):
            errors.append(f"outputs must be an object mapping system names to texts, got {type(outputs).__name__}")
        else:
            for system, text in outputs.items():
                system_name, problem = name_check(system, "system name")
                if problem:
                    errors.append(problem)
                    continue
                if system_name in record.outputs:
                    errors.append(
                        f"outputs name system {system_name!r} twice (names are compared without surrounding whitespace)"
                    )
                    continue
                value = text_check(text, f"output of system {system_name!r}", max_chars, errors)
                if value is not None:
                    record.outputs[system_name] = value
    if "meta" in obj:
        meta = obj["meta"]
        if not isinstance(meta, dict):
            errors.append(f"meta must be an object, got {type(meta).__name__}")
        elif has_nul(meta):
            errors.append("meta contains a NUL character")
        else:
            record.meta = meta
    if "doc" in obj:
        doc = obj["doc"]
        if isinstance(doc, int) and not isinstance(doc, bool):
            doc = str(doc)
        if doc is None or doc == "":
            record.doc = ""
        else:
            record.doc, problem = name_check(doc, "doc")
            if problem:
                errors.append(problem)
    if "doc_pos" in obj and obj["doc_pos"] is not None:
        pos = obj["doc_pos"]
        if isinstance(pos, bool) or not isinstance(pos, int) or not 0 <= pos <= DOC_POS_MAX:
            errors.append(f"doc_pos must be a non-negative integer, got {pos!r}")
        elif not record.doc:
            errors.append("doc_pos needs a doc (the document the segment is in)")
        else:
            record.doc_pos = pos
    if "media" in obj and obj["media"] is not None:
        media = media_shape_check(obj["media"], errors)
        if media is not None:
            record.media = (media_files or MediaFiles()).check(media, errors)
    return (None if errors else record), errors
