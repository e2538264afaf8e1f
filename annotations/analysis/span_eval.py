"""Span-level meta-evaluation: a metric's error spans against the humans' (issue 42 item 2).

Character level: an output's human error characters are those any counted annotator marked
(the union over annotators; spans flagged "missing" have no position and are left out); the
metric's are those its spans cover (a run's segment extras carry `spans` [{start, end, ...}],
as the LLM judge's span mode stores them; minED's error positions through `mined_spans`). Precision, recall and F1 are micro-averaged over
characters (true positives = characters both marked, summed over outputs), per system and
overall; an output neither marked counts nothing.

Two published span scores, each one function:

* `wmt25_f1`: the severity-weighted character F1 of the WMT25 metrics task's error span
  detection (wmt-conference/wmt25-mteval, scripts/scoring/task2/scoring_esa.py, commit
  74e123c0fd64). Each row is one gold annotation of an output (here: one annotator's judgement)
  with the metric's spans on that output. Per character, spans are counted per severity
  (major = major or critical, minor; overlapping spans add up); matching counts of the same
  severity earn full credit; of the counts left unmatched, the smaller side's earn
  `partial_credit` (0.5) each (a span found with the wrong severity). P = credit / predicted counts, R = credit / gold counts, each 1.0 when its
  denominator is 0, F1 0 when P + R is 0, as the scorer. Spans without a position and spans of
  another severity (the scorer's "undecided", MQM's neutral) are left out.
* `factgenie_f1`: factgenie's span F1 (ufal/factgenie, factgenie/iaa/f1.py, commit
  2c9accc32868): per output, the reference spans (every annotator's, overlaps counted twice)
  against the hypothesis spans; lengths are summed only on outputs where both sides marked
  something; overlap counts each hypothesis character once, matched to the first reference span
  covering it that it has not matched yet ("hard": the same category, here the severity;
  "soft": any). factgenie rounds to three decimals; these figures are not rounded.
"""

from __future__ import annotations

import re

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

WMT25_LABEL = (
    "severity-weighted span F1 (WMT25 metrics task, error span detection: character counts per "
    "severity, wrong severity earns 0.5; micro over annotations)"
)
FACTGENIE_LABEL = (
    "factgenie span F1 (character overlap of the metric's spans with every annotator's spans; "
    "hard: same severity, soft: any)"
)
MAJOR = ("major", "critical")
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


def _severity_counts(spans: list[dict], length: int) -> tuple[np.ndarray, np.ndarray]:
    major, minor = np.zeros(length), np.zeros(length)
    for s in spans or []:
        if s.get("missing") or s.get("start") is None or s.get("end") is None:
            continue
        severity = s.get("severity")
        counts = major if severity in MAJOR else minor if severity == "minor" else None
        if counts is not None:
            counts[int(s["start"]) : int(s["end"])] += 1
    return major, minor


def wmt25_f1(rows: list[tuple[int, list[dict], list[dict]]], partial_credit: float = 0.5) -> dict:
    """(output length, gold spans, predicted spans) per annotation -> WMT25's P/R/F1."""
    credit = gold_total = pred_total = 0.0
    for length, gold, pred in rows:
        g_maj, g_min = _severity_counts(gold, length)
        p_maj, p_min = _severity_counts(pred, length)
        gold_total += g_maj.sum() + g_min.sum()
        pred_total += p_maj.sum() + p_min.sum()
        credit += np.minimum(g_maj, p_maj).sum() + np.minimum(g_min, p_min).sum()
        gold_left = np.maximum(0, g_maj - p_maj) + np.maximum(0, g_min - p_min)
        pred_left = np.maximum(0, p_maj - g_maj) + np.maximum(0, p_min - g_min)
        credit += np.minimum(gold_left, pred_left).sum() * partial_credit
    p = credit / pred_total if pred_total else 1.0
    r = credit / gold_total if gold_total else 1.0
    return {
        "precision": float(p),
        "recall": float(r),
        "f1": float(2 * p * r / (p + r)) if p + r else 0.0,
        "credit": float(credit),
        "gold_chars": float(gold_total),
        "predicted_chars": float(pred_total),
        "annotations": len(rows),
        "partial_credit": partial_credit,
    }


def _positioned(spans: list[dict]) -> list[tuple[int, int, str | None]]:
    return [
        (int(s["start"]), int(s["end"]), s.get("severity"))
        for s in spans or []
        if not s.get("missing") and s.get("start") is not None and s.get("end") is not None
    ]


def factgenie_f1(pairs: list[tuple[list[dict], list[dict]]], match: str = "hard") -> dict:
    """(reference spans, hypothesis spans) per output -> factgenie's span P/R/F1."""
    ref_len = hyp_len = overlap = 0
    for ref_spans, hyp_spans in pairs:
        ref, hyp = _positioned(ref_spans), _positioned(hyp_spans)
        if not ref or not hyp:
            continue  # factgenie adds lengths only where both sides have spans
        ref_len += sum(e - s for s, e, _ in ref)
        hyp_len += sum(e - s for s, e, _ in hyp)
        used: set[tuple[int, int]] = set()
        for hs, he, htype in hyp:
            for pos in range(hs, he):
                for k, (rs, re_, rtype) in enumerate(ref):
                    if rs <= pos < re_ and (match == "soft" or rtype == htype) and (pos, k) not in used:
                        used.add((pos, k))
                        overlap += 1
                        break
    p = overlap / hyp_len if hyp_len else 0.0
    r = overlap / ref_len if ref_len else 0.0
    return {
        "precision": p,
        "recall": r,
        "f1": 2 * p * r / (p + r) if p + r else 0.0,
        "overlap_length": overlap,
        "hyp_length": hyp_len,
        "ref_length": ref_len,
        "outputs": len(pairs),
        "match": match,
    }


def mined_spans(extra: dict, text: str) -> list[dict]:
    """minED's error positions (segment extras `errors`, `corrected`, `unit`) as character spans
    of the hypothesis: a substitution or insertion covers its hypothesis token (a word: the
    whitespace-separated token, as minED tokenises; a character of the stripped text); a
    deletion has no hypothesis token and becomes a span without a position ("missing"). The
    errors minED had to correct for the output to pass are "major", the others "minor": the
    only two-level severity minED defines."""
    if extra.get("unit") == "word":
        tokens = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    else:
        offset = len(text) - len(text.lstrip())
        tokens = [(offset + k, offset + k + 1) for k in range(len(text.strip()))]
    corrected = set(extra.get("corrected") or [])
    spans = []
    for k, e in enumerate(extra.get("errors") or []):
        severity = "major" if k in corrected else "minor"
        position = e.get("position")
        if e.get("hyp") is None or position is None or not 0 <= position < len(tokens):
            spans.append({"missing": True, "severity": severity, "type": e.get("type")})
        else:
            start, end = tokens[position]
            spans.append({"start": start, "end": end, "severity": severity, "type": e.get("type")})
    return spans


def predicted_spans(extra, text: str) -> list[dict] | None:
    """A metric's error spans on one output from its segment extras: `spans` as stored (the LLM
    judge's span mode, or any metric storing [{start, end, severity}]), or minED's error
    positions; None when the run stored neither."""
    if not isinstance(extra, dict):
        return None
    if isinstance(extra.get("spans"), list):
        return extra["spans"]
    if isinstance(extra.get("errors"), list) and extra.get("unit") in ("word", "char"):
        return mined_spans(extra, text)
    return None
