"""Span-level meta-evaluation: a metric's error spans against the humans' (issue 42 item 2, in part).

Character level: an output's human error characters are those any counted annotator marked
(the union over annotators; spans flagged "missing" have no position and are left out); the
metric's are those its spans cover (a run's segment extras carry `spans` [{start, end, ...}],
as the LLM judge's span mode stores them). Precision, recall and F1 are micro-averaged over
characters (true positives = characters both marked, summed over outputs), per system and
overall; an output neither marked counts nothing.

Not built yet: WMT25's severity-weighted span F1 (its scorer was not found) and factgenie's
span measures.
"""

from __future__ import annotations

LABEL = (
    "character-level span precision/recall/F1 (micro over characters): the metric's error spans against "
    "the characters any annotator marked"
)


def chars(spans: list[dict], length: int | None = None) -> set[int]:
    out: set[int] = set()
    for s in spans or []:
        if s.get("missing") or s.get("start") is None or s.get("end") is None:
            continue
        end = int(s["end"]) if length is None else min(int(s["end"]), length)
        out.update(range(max(int(s["start"]), 0), end))
    return out


def micro(pairs: list[tuple[set[int], set[int]]]) -> dict:
    """(human characters, metric characters) per output -> micro P/R/F1 (None where undefined)."""
    tp = sum(len(g & p) for g, p in pairs)
    fp = sum(len(p - g) for g, p in pairs)
    fn = sum(len(g - p) for g, p in pairs)
    return {
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "outputs": len(pairs),
    }
