"""Document-level human scores of a campaign whose items are in documents (issue 41, most useful with
context=document): per document and system, the mean of its segments' human scores (each segment's
score the protocol's `output_scores`: the mean over its annotators) and, where the protocol defines one,
the document's total (MQM: the document's penalty, the sum of its segments' penalties). Judgements stay
per segment; these are computed from them, never stored."""

from __future__ import annotations

from collections import defaultdict

from annotations.models import Item

LABEL = (
    "per document and system: the mean of its judged segments' human scores (each segment's score: the "
    "mean over its annotators); segments no annotator judged are left out"
)


def document_rows(protocol, scores: dict[int, float], outputs: dict[int, dict], docs: dict[int, str]) -> list[dict]:
    """[{"doc", "system", "segments", "mean", and the protocol's total where it has one}], by document
    then system: `scores` output id -> segment score, `outputs` the campaign's output index (item,
    system), `docs` item id -> its document."""
    grouped: dict[tuple[str, str], list[float]] = defaultdict(list)
    for output_id, value in scores.items():
        info = outputs.get(output_id)
        if info is None or not docs.get(info["item"]):
            continue
        grouped[(docs[info["item"]], info["system"])].append(float(value))
    rows = []
    for (doc, system), values in sorted(grouped.items()):
        row = {"doc": doc, "system": system, "segments": len(values), "mean": sum(values) / len(values)}
        total = protocol.document_total(values)
        if total is not None:
            row[protocol.document_total_name] = total
        rows.append(row)
    return rows


def item_documents(*, dataset_id: int) -> dict[int, str]:
    """Item id -> its document, for the items of a dataset that are in one (none: {})."""
    return dict(Item.objects.filter(dataset_id=dataset_id).exclude(doc="").values_list("id", "doc"))
