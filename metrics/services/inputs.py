"""What a metric scores: a dataset's outputs in one fixed order, with the
references, source and data of their items.

The order (item position, item id, system name, output id) defines the chunk
plan, so `run_metric --sync` and the workers score the same outputs in the
same batches and get bit-identical results (model metrics run in float32 and
pad per batch: the same batches give the same numbers).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from annotations.models import Dataset, Item, Output, Reference


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


def inputs_digest(*, dataset: Dataset) -> tuple[list[int], str]:
    """Output ids in plan order and a digest of everything a metric reads
    (texts, references, sources, data): equal digests mean the same inputs."""
    ids = list(dataset_outputs(dataset=dataset).values_list("pk", flat=True))
    inputs = load_inputs(output_ids=ids)
    h = hashlib.sha256()
    for k in range(len(ids)):
        row = [ids[k], inputs.system_ids[k], inputs.hyps[k], inputs.refs[k], inputs.srcs[k], inputs.data[k]]
        h.update(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return ids, h.hexdigest()
