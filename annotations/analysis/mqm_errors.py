"""MQM errors by category and severity, per system, with a drill-down to the items.

The weighted penalty of a cell is its share of the system's MQM score as mt-metrics-eval's
`converters/score_mqm.py` computes it: an output's score is minus the mean over its raters of each
rater's sum of error weights, and the system's score is the mean over its rated outputs. So an
error of weight w on an output rated by r raters, for a system with n rated outputs, adds
w / (r * n) to its cell, and the cells of a system add up to minus its MQM score (the figure WMT
reports, e.g. 0.91 for TED en-de's ref-A). Counts are plain numbers of error spans, every rater's.

One reader (`campaign_judgements`), the weights of the campaign (`protocol.weights`), the weight
of one error from `mqm_scoring.error_weight` (the rule lives there).
"""

from __future__ import annotations

from collections import defaultdict

from annotations import protocols
from annotations.analysis import report
from annotations.models import Campaign
from annotations.protocols import mqm_scoring as mq
from annotations.selectors.judgements import INCLUDED, campaign_judgements
from annotations.selectors.outputs import output_index

NO_CATEGORY = "(no category)"


def _check(campaign: Campaign):
    protocol = protocols.of(campaign)
    if not getattr(protocol, "error_categories", False):
        raise report.AnalysisError(
            f"the error breakdown needs error categories; {protocol.label} campaigns have none (MQM campaigns do)"
        )
    return protocol


def _load(campaign: Campaign, *, annotators: str, systems: list[str] | None, criterion: str | None):
    """(protocol, weights, rows by output, output index, the reader's label)."""
    protocol = _check(campaign)
    criterion = criterion or (campaign.criteria[0] if campaign.criteria else None)
    reader = campaign_judgements(campaign=campaign, annotators=annotators, criterion=criterion, systems=systems)
    outputs = output_index(campaign=campaign)
    by_output: dict[int, list] = defaultdict(list)
    for row in reader:
        if row.output_id in outputs:
            by_output[row.output_id].append(row)
    return protocol, protocol.weights(campaign), by_output, outputs, reader.used, criterion


def _matches(category: str, wanted: str | None) -> bool:
    return wanted is None or category.lower() == wanted.lower() or category.lower().startswith(wanted.lower() + "/")


def error_breakdown(
    campaign: Campaign, *, annotators: str = INCLUDED, systems: list[str] | None = None, criterion: str | None = None
) -> dict:
    """Per system: error counts and weighted penalties by (category, severity), best system first."""
    protocol, weights, by_output, outputs, used, criterion = _load(
        campaign, annotators=annotators, systems=systems, criterion=criterion
    )
    rated: dict[str, int] = defaultdict(int)
    for o in by_output:
        rated[outputs[o]["system"]] += 1
    cells: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0.0]))
    judgements: dict[str, int] = defaultdict(int)
    seen: set[tuple[str, str]] = set()
    for o, rows in by_output.items():
        system = outputs[o]["system"]
        judgements[system] += len(rows)
        share = 1.0 / (len(rows) * rated[system])
        for row in rows:
            for span in row.spans:
                category = span.get("category") or NO_CATEGORY
                key = (category, span["severity"])
                seen.add(key)
                cell = cells[system][key]
                cell[0] += 1
                cell[1] += mq.error_weight(weights, span["severity"], span.get("category") or "") * share
    order = {path.lower(): k for k, path in enumerate(mq.category_paths(protocol.typology(campaign)))}
    categories = sorted({c for c, _ in seen}, key=lambda c: (order.get(c.lower(), len(order)), c))
    severities = [s for s in reversed(mq.SEVERITIES) if any(sev == s for _, sev in seen)]
    table = []
    for system in rated:
        mine = cells[system]
        penalty = sum(v[1] for v in mine.values())
        table.append(
            {
                "system": system,
                "outputs": rated[system],
                "judgements": judgements[system],
                "errors": sum(v[0] for v in mine.values()),
                "penalty": penalty,
                "mqm": -penalty if penalty else 0.0,
                "cells": [
                    {"category": c, "severity": s, "count": mine[(c, s)][0], "penalty": mine[(c, s)][1]}
                    for c in categories
                    for s in severities
                    if (c, s) in mine
                ],
            }
        )
    table.sort(key=lambda r: (r["penalty"], r["system"]))
    return {
        "criterion": criterion,
        "weights": protocol.weights_text(campaign),
        "annotators": used,
        "categories": categories,
        "severities": severities,
        "systems": table,
        "penalty": "each error's weight / (raters of its output x rated outputs of its system): a system's "
        "cells add up to minus its MQM score (mt-metrics-eval score_mqm.py, averaged over raters "
        "and outputs)",
    }


def error_items(
    campaign: Campaign,
    *,
    system: str,
    category: str | None = None,
    severity: str | None = None,
    annotators: str = INCLUDED,
    criterion: str | None = None,
    limit: int = 200,
) -> dict:
    """The items behind one cell (or a category and its subcategories, or a whole system): per
    output, the matching errors' count and their weights averaged over the output's raters (its
    share of the output's MQM score), worst first."""
    protocol, weights, by_output, outputs, used, criterion = _load(
        campaign, annotators=annotators, systems=[system], criterion=criterion
    )
    severity = severity.lower() if severity else None
    found = []
    for o, rows in by_output.items():
        count, penalty = 0, 0.0
        for row in rows:
            for span in row.spans:
                if _matches(span.get("category") or NO_CATEGORY, category) and severity in (None, span["severity"]):
                    count += 1
                    penalty += mq.error_weight(weights, span["severity"], span.get("category") or "") / len(rows)
        if count:
            found.append(
                {
                    "item": outputs[o]["item_ext"],
                    "item_id": outputs[o]["item"],
                    "output": o,
                    "raters": len(rows),
                    "count": count,
                    "penalty": penalty,
                }
            )
    found.sort(key=lambda r: (-r["penalty"], -r["count"], r["item"]))
    return {
        "system": system,
        "category": category,
        "severity": severity,
        "criterion": criterion,
        "annotators": used,
        "total": len(found),
        "items": found[:limit],
    }


def breakdown_systems_select(whole: dict, systems: list[str]) -> dict:
    """`error_breakdown(..., systems=systems)` from `error_breakdown(...)` over every system: a system's
    row depends on its own outputs only, so the subset is a selection of rows, with the categories
    and severities its cells use (issue 45: a filter by systems reads a stored figure)."""
    wanted = set(systems)
    table = [row for row in whole["systems"] if row["system"] in wanted]
    used = {(cell["category"], cell["severity"]) for row in table for cell in row["cells"]}
    return {
        **whole,
        "categories": [c for c in whole["categories"] if any(c == u for u, _ in used)],
        "severities": [s for s in whole["severities"] if any(s == v for _, v in used)],
        "systems": table,
    }
