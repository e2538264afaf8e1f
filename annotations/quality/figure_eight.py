"""Crowd studies exported from Figure Eight / CrowdFlower, as in the E2E NLG Challenge
(`../shared/data/e2e-human`): one row per screen of up to 5 outputs of one input.

Columns read: ``_worker_id``, ``_trust`` (the platform's own trust in the
worker, from its test questions), ``_started_at`` / ``_created_at`` (the time
on the screen), ``mr`` (the input, ``name[Blue Spice], eatType[pub]``),
``mr_id``, ``sys1..N`` (system names), ``ref1..N`` (the outputs shown),
``<criterion>1..N`` (the answers) and ``<criterion>1..N_gold`` (the platform's
accepted answers on its test questions, one per line; empty on ordinary rows).

`study_read` turns such a file into the workbench's own formats (dataset JSONL
and judgement JSONL, ARCHITECTURE.md), so it goes through the ordinary atomic
importers:

- a gold cell becomes a gold unit: the judgement carries ``"control": "gold"``
  and ``"expected": {"min": lowest accepted, "max": highest accepted}``;
- a worker's second answer for the same output (the platform showed it again
  on another screen) carries ``"control": "repeat"``, so it measures
  self-consistency instead of counting twice;
- the screen's time is shared equally by its outputs (``time_spent_ms``).
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

_MR_PART = re.compile(r"\s*([^\[\],]+?)\s*\[([^\]]*)\]\s*,?")
TIME_FORMAT = "%m/%d/%Y %H:%M:%S"


@dataclass
class Study:
    criterion: str
    items: dict[str, dict] = field(default_factory=dict)  # item id -> dataset JSONL object
    judgements: list[dict] = field(default_factory=list)  # judgement JSONL objects
    trust: dict[str, float] = field(default_factory=dict)  # worker -> mean _trust
    gold_cells: int = 0  # non-empty gold cells read
    # Answers left out because they are not numbers or fall outside `scale` (free number
    # fields let workers type 111111): (row number, worker, system, answer).
    skipped: list[tuple] = field(default_factory=list)

    def dataset_jsonl(self) -> str:

        return "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in self.items.values())

    def judgements_jsonl(self) -> str:

        return "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in self.judgements)


def mr_triples(mr: str) -> list[list[str]]:
    """``name[Blue Spice], eatType[pub]`` -> [["Blue Spice", "name", "Blue Spice"], ["Blue Spice", "eatType", "pub"]]."""
    pairs = [(m.group(1).strip(), m.group(2).strip()) for m in _MR_PART.finditer(mr)]
    subject = next((v for k, v in pairs if k == "name"), "")
    return [[subject, key, value] for key, value in pairs]


def _accepted(cell: str) -> list[float]:
    values = []
    for line in cell.splitlines():
        try:
            values.append(float(line.strip()))
        except ValueError:
            continue
    return values


def _seconds(row: dict) -> float | None:
    try:
        delta = datetime.strptime(row["_created_at"], TIME_FORMAT) - datetime.strptime(row["_started_at"], TIME_FORMAT)
    except (KeyError, ValueError):
        return None
    return max(delta.total_seconds(), 0.0)


def study_read(
    source: Path | str | io.TextIOBase, *, criterion: str, scale: tuple[float, float] | None = None
) -> Study:
    """Read a Figure Eight export whose answer columns are ``<criterion>1..N``; answers
    outside `scale` (or not numbers) are left out and listed in `Study.skipped`."""
    if isinstance(source, (str, Path)):
        with open(source, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    else:
        rows = list(csv.DictReader(source))
    study = Study(criterion=criterion)
    trust: dict[str, list[float]] = {}
    seen: set[tuple] = set()
    for number, row in enumerate(rows, start=2):
        worker = row["_worker_id"]
        if row.get("_trust"):
            trust.setdefault(worker, []).append(float(row["_trust"]))
        item = row.get("mr_id") or row["mr"]
        slots = [i for i in range(1, 100) if f"sys{i}" in row and row.get(f"ref{i}")]
        entry = study.items.setdefault(
            item, {"item": item, "source": row["mr"], "data": mr_triples(row["mr"]), "outputs": {}}
        )
        seconds = _seconds(row)
        for i in slots:
            system, text = row[f"sys{i}"], row[f"ref{i}"]
            entry["outputs"].setdefault(system, text)
            answer = row.get(f"{criterion}{i}", "")
            if answer == "":
                continue
            try:
                score = float(answer)
            except ValueError:
                score = None
            if score is None or (scale is not None and not scale[0] <= score <= scale[1]):
                study.skipped.append((number, worker, system, answer))
                continue
            judgement = {"item": item, "system": system, "annotator": worker, "criterion": criterion, "score": score}
            if seconds is not None:
                judgement["time_spent_ms"] = round(seconds * 1000 / len(slots))
            accepted = _accepted(row.get(f"{criterion}{i}_gold", ""))
            key = (worker, item, system)
            if accepted:
                study.gold_cells += 1
                judgement["control"] = "gold"
                judgement["expected"] = {"min": min(accepted), "max": max(accepted)}
            elif key in seen:
                judgement["control"] = "repeat"
            seen.add(key)
            study.judgements.append(judgement)
    study.trust = {w: statistics.fmean(v) for w, v in trust.items()}
    return study
