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

from annotations.models import Dataset, Output


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
    """The inputs of these outputs, in the given order."""
    rows = {
        o.pk: o
        for o in Output.objects.filter(pk__in=list(output_ids))
        .select_related("item")
        .prefetch_related("item__references")
    }
    missing = [pk for pk in output_ids if pk not in rows]
    if missing:
        # Outputs deleted after the run was planned (dataset re-imported): bad input, not transient.
        raise LookupError(f"{len(missing)} output(s) of this run no longer exist (e.g. id {missing[0]})")
    outs = [rows[pk] for pk in output_ids]
    return Inputs(
        output_ids=list(output_ids),
        system_ids=[o.system_id for o in outs],
        hyps=[o.text for o in outs],
        refs=[[r.text for r in sorted(o.item.references.all(), key=lambda r: r.position)] for o in outs],
        srcs=[o.item.source for o in outs],
        data=[_triples(o.item.data) for o in outs],
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
