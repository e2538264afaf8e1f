"""What a metric scores: a dataset's outputs in one fixed order, with the
references, source and data of their items.

The order (item position, item id, system name, output id) defines the chunk
plan, so `run_metric --sync` and the workers score the same outputs in the
same batches and get bit-identical results (model metrics run in float32 and
pad per batch: the same batches give the same numbers).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import connection

from annotations.models import Dataset, Item, Output, Reference, System

if TYPE_CHECKING:
    from metrics.scorers.base import Metric


@dataclass
class Inputs:
    output_ids: list[int]
    system_ids: list[int]
    system_names: list[str]
    hyps: list[str]
    refs: list[list[str]]
    srcs: list[str]
    data: list[list[tuple[str, str, str]]]
    # The item of each output (pairwise judges compare the outputs of one item).
    item_ids: list[int] = field(default_factory=list)


def dataset_outputs(*, dataset: Dataset):
    return Output.objects.filter(item__dataset=dataset).order_by("item__position", "item_id", "system__name", "id")


def _triples(value) -> list[tuple[str, str, str]]:
    if not isinstance(value, list):
        return []
    return [tuple(t) for t in value if isinstance(t, (list, tuple)) and len(t) == 3]


def _inputs_sql(where: str, *, srcs: bool, data: bool, hyps: bool = True, order: str = "") -> str:
    """Outputs with their item's references (aggregated once per item, not looked
    up per output), and the source and data only when the metric reads them."""
    output, item, system, reference = (m._meta.db_table for m in (Output, Item, System, Reference))
    return f"""
        WITH o AS (SELECT o.id, o.system_id, o.item_id{", o.text" if hyps else ""} FROM {output} o
                   JOIN {item} i ON i.id = o.item_id WHERE {where}),
             r AS (SELECT r.item_id, array_agg(r.text ORDER BY r.position, r.id) AS refs
                   FROM {reference} r WHERE r.item_id IN (SELECT item_id FROM o) GROUP BY r.item_id)
        SELECT o.id, o.system_id, s.name, {"o.text" if hyps else "''"}, i.id,
               {"i.source" if srcs else "''"}, {"i.data::text" if data else "NULL"}, coalesce(r.refs, '{{}}')
        FROM o
        JOIN {item} i ON i.id = o.item_id
        JOIN {system} s ON s.id = o.system_id
        LEFT JOIN r ON r.item_id = o.item_id
        {order}
    """


def _inputs(rows: list[tuple]) -> Inputs:
    data: dict[int, list[tuple[str, str, str]]] = {}
    for row in rows:
        if row[4] not in data:
            data[row[4]] = _triples(json.loads(row[6])) if row[6] is not None else []
    return Inputs(
        output_ids=[r[0] for r in rows],
        system_ids=[r[1] for r in rows],
        system_names=[r[2] for r in rows],
        hyps=[r[3] for r in rows],
        refs=[list(r[7]) for r in rows],
        srcs=[r[5] for r in rows],
        data=[data[r[4]] for r in rows],
        item_ids=[r[4] for r in rows],
    )


def _reads(metric: Metric | None, *, state: bool = False) -> dict[str, bool]:
    """Which columns to read: a metric that reads no source or data gets empty ones
    (metric_inputs never passes them to it); for its corpus state, only what that reads."""
    if metric is None:
        return {"srcs": True, "data": True}
    reads = metric.corpus_state_reads if state else frozenset({"hyps", "srcs", "data"})
    return {
        "hyps": "hyps" in reads,
        "srcs": bool(metric.needs_source) and "srcs" in reads,
        "data": bool(metric.needs_data) and "data" in reads,
    }


def load_inputs(*, output_ids: Sequence[int], metric: Metric | None = None) -> Inputs:
    """The inputs of these outputs, in the given order: one flat query (model
    instances, per-item prefetches and 1,000-parameter IN lists cost more than
    scoring chrF)."""
    ids = list(output_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            _inputs_sql("o.id = ANY(%s::bigint[])", **_reads(metric)), ["{" + ",".join(str(int(i)) for i in ids) + "}"]
        )
        by_id = {row[0]: row for row in cursor.fetchall()}
    missing = [pk for pk in ids if pk not in by_id]
    if missing:
        # Outputs deleted after the run was planned (dataset re-imported): bad input, not transient.
        raise LookupError(f"{len(missing)} output(s) of this run no longer exist (e.g. id {missing[0]})")
    return _inputs([by_id[pk] for pk in ids])


def load_dataset_inputs(*, dataset_id: int, metric: Metric | None = None, state: bool = False) -> Inputs:
    """The inputs of every output of a dataset in plan order (see dataset_outputs);
    `state`: only what the metric's corpus_state reads (no text at all when that
    is nothing or only the number of references: empty strings stand in)."""
    if state and metric is not None and metric.corpus_state_reads <= {"nrefs"}:
        ids, system_ids, nrefs, item_ids = _plan_rows(dataset_id=dataset_id, nrefs="nrefs" in metric.corpus_state_reads)
        n = len(ids)
        return Inputs(
            output_ids=ids,
            system_ids=system_ids,
            system_names=[""] * n,
            hyps=[""] * n,
            refs=[[""] * k for k in nrefs],
            srcs=[""] * n,
            data=[[] for _ in range(n)],
            item_ids=item_ids,
        )
    with connection.cursor() as cursor:
        order = "ORDER BY i.position, i.id, s.name, o.id"
        cursor.execute(_inputs_sql("i.dataset_id = %s", **_reads(metric, state=state), order=order), [dataset_id])
        return _inputs(cursor.fetchall())


def _plan_rows(*, dataset_id: int, nrefs: bool = False) -> tuple[list[int], list[int], list[int], list[int]]:
    """Output ids, system ids, (with `nrefs`) each output's number of references, and item ids, in plan order."""
    output, item, system, reference = (m._meta.db_table for m in (Output, Item, System, Reference))
    counts = (
        (
            f"LEFT JOIN (SELECT r.item_id, count(*) AS n FROM {reference} r JOIN {item} ri ON ri.id = r.item_id "
            "WHERE ri.dataset_id = %s GROUP BY r.item_id) rc ON rc.item_id = o.item_id "
        )
        if nrefs
        else ""
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT o.id, o.system_id, {'coalesce(rc.n, 0)' if nrefs else '0'}, o.item_id FROM {output} o "
            f"JOIN {item} i ON i.id = o.item_id JOIN {system} s ON s.id = o.system_id {counts}"
            "WHERE i.dataset_id = %s ORDER BY i.position, i.id, s.name, o.id",
            [dataset_id, dataset_id] if nrefs else [dataset_id],
        )
        rows = cursor.fetchall()
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]


def dataset_plan_ids(*, dataset_id: int) -> tuple[list[int], list[int]]:
    """(output ids, system ids) of a dataset in plan order, without reading any
    text: all a run needs to plan its chunks when its metric has no corpus state."""
    ids, system_ids, _, _ = _plan_rows(dataset_id=dataset_id)
    return ids, system_ids


def dataset_plan_items(*, dataset_id: int) -> tuple[list[int], list[int], list[int]]:
    """(output ids, system ids, item ids) in plan order, for metrics whose chunks hold whole items."""
    ids, system_ids, _, item_ids = _plan_rows(dataset_id=dataset_id)
    return ids, system_ids, item_ids


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
        LEFT JOIN (SELECT ref.item_id, md5(string_agg(md5(ref.text), ',' ORDER BY ref.position)) AS refs
                   FROM {reference} ref JOIN {item} ri ON ri.id = ref.item_id
                   WHERE ri.dataset_id = %s  -- this dataset's references only, not the whole table
                   GROUP BY ref.item_id) r ON r.item_id = i.id
        WHERE i.dataset_id = %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [dataset.pk, dataset.pk])
        count, digest = cursor.fetchone()
    return count, digest or ""


def missing_input(*, dataset: Dataset, metric: Metric) -> str | None:
    """Why `metric` cannot score `dataset`, naming the first item (in plan order) that lacks what
    it requires: references (`needs_refs`), a source (`needs_source`) or data triples
    (`needs_data`), unless the metric reads that input only when given (`optional_inputs`).
    None when every item with outputs has it. One query per required input, on the index of
    (dataset, position); read when a run is requested, so it fails there instead of on a worker."""
    items = Item.objects.filter(dataset=dataset, outputs__isnull=False).distinct().order_by("position", "id")
    checks = []
    if metric.needs_refs:
        checks.append(("references", items.filter(references__isnull=True)))
    if metric.needs_source and "source" not in metric.optional_inputs:
        checks.append(("a source text", items.filter(source="")))
    if metric.needs_data and "data" not in metric.optional_inputs:
        checks.append(("data triples", items.filter(data=[])))
    for what, lacking in checks:
        first = lacking.values_list("external_id", flat=True).first()
        if first is not None:
            n = lacking.count()
            more = f" (and {n - 1} other item(s))" if n > 1 else ""
            return (
                f"{metric.name} needs {what} for every output, but item {first!r} has none{more}; "
                f"import them with the dataset, or choose a metric that does not need them"
            )
    return None
