"""The document context shown around a judged segment (issue 41, campaign option `context`).

`window`: the `size` previous and next segments of the judged item's document (items of the same
dataset with the same `doc`, nearest `doc_pos` first), each with its source, its references and
the outputs of the systems of the unit's outputs, in the unit's order: what the segment reads like
in its document, shown but not judged. Read in one statement, whatever the window's size.
No ids and no system names: annotators get texts only.

`document` (`document_unit`): a unit that is a whole document (or a part of one), every segment
judged: its segments in order with their sources and references and the unit's outputs of each.
"""

from __future__ import annotations

import json

from django.db import connection
from django.db.models import F

from annotations import rows
from annotations.models import Item, Output, Reference
from annotations.protocols.base import document_segments


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _window_sql() -> str:
    item, output, reference = _table(Item), _table(Output), _table(Reference)
    side = (
        f"SELECT n.id, n.doc_pos, n.source FROM {item} n WHERE n.dataset_id = me.dataset_id AND n.doc = me.doc "
        "AND n.doc_pos IS NOT NULL AND n.doc_pos {op} me.doc_pos ORDER BY n.doc_pos {order} LIMIT %(size)s"
    )
    return (
        "SELECT n.doc_pos < me.doc_pos, n.source, "
        # The unit's systems' outputs of the neighbour, in the unit's order (NULL: that system has none).
        f"(SELECT jsonb_agg(o2.text ORDER BY s.k) FROM unnest(%(outputs)s::bigint[]) WITH ORDINALITY s(id, k) "
        f"LEFT JOIN {output} o1 ON o1.id = s.id "
        f"LEFT JOIN {output} o2 ON o2.item_id = n.id AND o2.system_id = o1.system_id)::text, "
        f"(SELECT jsonb_agg(r.text ORDER BY r.position) FROM {reference} r WHERE r.item_id = n.id AND %(refs)s)::text "
        f"FROM {item} me CROSS JOIN LATERAL (({side.format(op='<', order='DESC')}) "
        f"UNION ALL ({side.format(op='>', order='ASC')})) n "
        "WHERE me.id = %(item)s AND me.doc <> '' AND me.doc_pos IS NOT NULL ORDER BY n.doc_pos"
    )


def document_window(
    *, item_id: int, output_ids: list[int], size: int, show_source: bool, show_references: bool
) -> dict:
    """{"before": [...], "after": [...]}: the neighbouring segments in document order, each
    {"source", "references", "outputs"} (outputs: one text per output of the unit, in its order,
    None where that system has no output for the segment). Empty lists for an item in no document."""
    found: dict[str, list] = {"before": [], "after": []}
    with rows.cursor() as cursor:
        cursor.execute(
            _window_sql(),
            {"item": item_id, "outputs": list(output_ids), "size": size, "refs": show_references},
        )
        for before, source, texts, references in cursor.fetchall():
            found["before" if before else "after"].append(
                {
                    "source": source if show_source else "",
                    "references": json.loads(references) if references else [],
                    "outputs": json.loads(texts) if texts else [],
                }
            )
    return found


def document_unit(
    *,
    outputs: list[int],
    unit_outputs: list[int],
    unit_systems: list[int],
    show_source: bool,
    show_references: bool,
    real_outputs: list[int] | None = None,
) -> list[dict] | None:
    """The segments of a document unit (context=document) in document order, each {"source",
    "references", "outputs": [output ids as shown]}: `outputs` the unit's outputs in the order shown,
    `unit_outputs` / `unit_systems` as planned (annotations.protocols.base.document_segments). None for
    a unit of one segment (its item is the segment: nothing more to read). `real_outputs`: the output
    each shown id stands for (a control unit's aliases, annotations.quality), default the ids. One statement."""
    if len(set(unit_systems)) == len(unit_systems):
        return None
    real_of = dict(zip(outputs, real_outputs if real_outputs is not None else outputs))
    item, output, reference = _table(Item), _table(Output), _table(Reference)
    with rows.cursor() as cursor:
        cursor.execute(
            f"SELECT o.id, i.source, (SELECT jsonb_agg(r.text ORDER BY r.position) FROM {reference} r "
            f"WHERE r.item_id = i.id AND %(refs)s)::text FROM {output} o JOIN {item} i ON i.id = o.item_id "
            "WHERE o.id = ANY(%(outputs)s)",
            {"outputs": list(real_of.values()), "refs": show_references},
        )
        segment_of = {pk: (source, references) for pk, source, references in cursor.fetchall()}
    starts = document_segments(list(unit_systems)) + [len(unit_outputs)]
    segments = []
    for start, end in zip(starts, starts[1:]):
        shown = list(outputs[start:end])
        source, references = segment_of.get(real_of.get(shown[0]), ("", None)) if shown else ("", None)
        segments.append(
            {
                "source": source if show_source else "",
                "references": json.loads(references) if references else [],
                "outputs": shown,
            }
        )
    return segments


# A document longer than this shows its first segments on the item page, with a count of the rest.
ITEM_DOCUMENT_LIMIT = 200


def item_document(*, item: Item, limit: int = ITEM_DOCUMENT_LIMIT) -> dict | None:
    """The item page's document context: the segments of the item's document (same dataset, same
    `doc`) in document order (`doc_pos`; segments without one last, in dataset order), each
    {"id", "external_id", "doc_pos", "source", "current"}, at most `limit` of them plus the current
    one, and "total" (how many the document has). None for an item in no document. Two statements."""
    if not item.doc:
        return None
    segments = Item.objects.filter(dataset_id=item.dataset_id, doc=item.doc)
    total = segments.count()
    order = (F("doc_pos").asc(nulls_last=True), "position", "id")
    shown = list(segments.order_by(*order).values("id", "external_id", "doc_pos", "source")[:limit])
    if not any(s["id"] == item.pk for s in shown):
        # The current segment beyond the limit: shown last, so the page always says where it is.
        shown.append({"id": item.pk, "external_id": item.external_id, "doc_pos": item.doc_pos, "source": item.source})
    for s in shown:
        s["current"] = s["id"] == item.pk
    return {"doc": item.doc, "segments": shown, "total": total}


def item_place(item: Item) -> dict:
    """Where an item sits (issue 41): its document and position, and the kinds of media it carries
    by role (never a path), for pages that list items; {} values when it has none."""
    return {
        "doc": item.doc,
        "doc_pos": item.doc_pos,
        "media": [
            {"role": role, "type": (entry or {}).get("type", "")} for role, entry in sorted((item.media or {}).items())
        ],
    }


def item_places(*, item_ids) -> dict[int, dict]:
    """`item_place` of many items in one statement: {item id: place}, only for items with a document
    or media (pages that list outputs add it to each row; a row without one shows nothing)."""
    found = Item.objects.filter(pk__in=set(item_ids)).exclude(doc="", media={}).only("pk", "doc", "doc_pos", "media")
    return {item.pk: item_place(item) for item in found}
