"""Error-free segment detection as a meta-evaluation task (WMT26 metrics task).

Gold: an output is error-free when its human score is at least 85 and no annotator marked an
error span on it (the score is the protocol's output score, the mean over annotators). A metric
detects error-free outputs with a threshold: predicted error-free when its (direction-adjusted)
score is at least t. Precision, recall and F1 are those of the error-free class.

The threshold is chosen on a held-out split: the items are shuffled with numpy
default_rng(seed) (in the order of their external ids), the first half tunes t (the candidate
maximising F1, the smallest on a tie) and the figures are reported on the other half. The best
threshold on all outputs is reported next to it, labelled as optimistic (tuned and scored on
the same data). mt-metrics-eval (commit 68a481aea1a7) has no implementation of this task.
"""

from __future__ import annotations

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

GOLD_SCORE = 85.0
LABEL = (
    "error-free detection (WMT26 metrics task): gold = human score >= 85 and no error span; predicted "
    "error-free when the metric's score >= threshold; precision/recall/F1 of the error-free class"
)
BEST_CAVEAT = "threshold tuned and scored on the same outputs: an optimistic figure"


def prf(gold: np.ndarray, pred: np.ndarray) -> dict:
    """Precision, recall and F1 of the positive class (None where undefined: no prediction or
    no gold positive), as sklearn's precision_recall_fscore_support(average="binary") with
    zero_division left undefined."""
    gold, pred = np.asarray(gold, dtype=bool), np.asarray(pred, dtype=bool)
    tp = int(np.sum(gold & pred))
    fp = int(np.sum(~gold & pred))
    fn = int(np.sum(gold & ~pred))
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {"precision": p, "recall": r, "f1": f1, "tp": tp, "fp": fp, "fn": fn, "n": int(len(gold))}


def best_threshold(gold: np.ndarray, metric: np.ndarray) -> tuple[float | None, dict]:
    """The threshold (one of the metric's values) with the highest F1; the smallest on a tie."""
    best_t, best = None, None
    for t in np.unique(metric):
        figures = prf(gold, metric >= t)
        if figures["f1"] is not None and (best is None or figures["f1"] > best["f1"]):
            best_t, best = float(t), figures
    return best_t, best or prf(gold, np.zeros(len(gold), dtype=bool))


def detection(gold: np.ndarray, metric: np.ndarray, items: list, *, seed: int = 0) -> dict:
    """Held-out figures and the best-on-all figures; `items[k]` is output k's item (the split
    keeps an item's outputs together)."""
    gold = np.asarray(gold, dtype=bool)
    metric = np.asarray(metric, dtype=float)
    distinct = sorted(set(items), key=str)
    order = np.random.default_rng(seed).permutation(len(distinct))
    tune_items = {distinct[k] for k in order[: len(distinct) // 2]}
    tune = np.array([i in tune_items for i in items], dtype=bool)
    t, tuned = best_threshold(gold[tune], metric[tune])
    held = prf(gold[~tune], metric[~tune] >= t) if t is not None else prf(gold[~tune], np.zeros((~tune).sum(), bool))
    best_t, best = best_threshold(gold, metric)
    return {
        "label": LABEL,
        "gold": f"human score >= {GOLD_SCORE:g} and no error span",
        "positives": int(gold.sum()),
        "n": int(len(gold)),
        "held_out": {
            "threshold": t,
            **held,
            "tune_f1": tuned["f1"],
            "tune_items": len(tune_items),
            "test_items": len(distinct) - len(tune_items),
            "seed": seed,
            "split": f"items shuffled by numpy default_rng({seed}); first half tunes, second half scores",
        },
        "best_on_all": {"threshold": best_t, **best, "caveat": BEST_CAVEAT},
    }
