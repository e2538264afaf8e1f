"""What a metric scores: a dataset's outputs in one fixed order, with the
references, source and data of their items.

The order (item position, item id, system name, output id) defines the chunk
plan, so `run_metric --sync` and the workers score the same outputs in the
same batches and get bit-identical results (model metrics run in float32 and
pad per batch: the same batches give the same numbers).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection

from annotations.models import Dataset, Item, Output, Reference, System


@dataclass
class Inputs:
    output_ids: list[int]
    system_ids: list[int]
    hyps: list[str]
    refs: list[list[str]]
    srcs: list[str]
    data: list[list[tuple[str, str, str]]]


def dataset_outputs(*, dataset: Dataset):
    return Output.objects.filter(item__dataset=dataset).order_by("item__position", "item_id", "system__name", "id")


def _triples(value) -> list[tuple[str, str, str]]:
    if not isinstance(value, list):
        return []
    return [tuple(t) for t in value if isinstance(t, (list, tuple)) and len(t) == 3]


def load_inputs(*, output_ids: Sequence[int]) -> Inputs:
    """The inputs of these outputs, in the given order (three flat queries:
    model instances and per-item prefetches cost more than scoring chrF)."""
    ids = list(output_ids)
    rows = {pk: (sid, text, iid) for pk, sid, text, iid in Output.objects.filter(pk__in=ids).values_list(
        "pk", "system_id", "text", "item_id")}
    missing = [pk for pk in ids if pk not in rows]
    if missing:
        # Outputs deleted after the run was planned (dataset re-imported): bad input, not transient.
        raise LookupError(f"{len(missing)} output(s) of this run no longer exist (e.g. id {missing[0]})")
    item_ids = {row[2] for row in rows.values()}
    items = {pk: (source, data) for pk, source, data in Item.objects.filter(pk__in=item_ids).values_list(
        "pk", "source", "data")}
    refs: dict[int, list[str]] = {}
    for item_id, text in Reference.objects.filter(item_id__in=item_ids).order_by("item_id", "position").values_list(
            "item_id", "text"):
        refs.setdefault(item_id, []).append(text)
    outs = [rows[pk] for pk in ids]
    return Inputs(
        output_ids=ids,
        system_ids=[o[0] for o in outs],
        hyps=[o[1] for o in outs],
        refs=[list(refs.get(o[2], [])) for o in outs],
        srcs=[items[o[2]][0] for o in outs],
        data=[_triples(items[o[2]][1]) for o in outs],
    )


def inputs_digest(*, dataset: Dataset) -> tuple[int, str]:
    """Number of outputs and a digest of everything a metric reads (output ids,
    systems, texts, references, sources, data) in plan order: equal digests mean
    the same inputs. Computed by PostgreSQL, so the web process reads no texts."""
    output, item, system, reference = (m._meta.db_table for m in (Output, Item, System, Reference))
    sql = f"""
        SELECT count(*), md5(string_agg(
            concat_ws(':', o.id, o.system_id, md5(o.text), md5(i.source), md5(i.data::text), coalesce(r.refs, '')),
            ',' ORDER BY i.position, i.id, s.name, o.id))
        FROM {output} o
        JOIN {item} i ON i.id = o.item_id
        JOIN {system} s ON s.id = o.system_id
        LEFT JOIN (SELECT item_id, md5(string_agg(md5(text), ',' ORDER BY position)) AS refs
                   FROM {reference} GROUP BY item_id) r ON r.item_id = i.id
        WHERE i.dataset_id = %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [dataset.pk])
        count, digest = cursor.fetchone()
    return count, digest or ""
