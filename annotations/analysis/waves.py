"""Two human waves (WMT 2025's human1 / human2): their agreement and reproducibility.

Segment level: Pearson, Spearman and Kendall tau-b between the two waves' scores of the
outputs both judged. System level: Pearson and Kendall between the systems' mean scores.
The second wave also appears as a row of the meta-evaluation table, scored exactly like a
metric against the first wave: the ceiling a metric is compared to.

Reproducibility between the waves: the small-sample coefficient of variation CV* of each
system's score over the two waves (Belz, Popovic & Mille 2022, "Quantified Reproducibility
Assessment of NLP Results", ACL; their coeff-var code): s = unbiased sample standard
deviation / c4(n), c4(n) = sqrt(2/(n-1)) Gamma(n/2) / Gamma((n-1)/2); CV = 100 s / mean;
CV* = (1 + 1/(4n)) CV. As there, scores are first shifted so the scale starts at 0 (a Likert
1-5 score x counts as x - 1); the figure is the mean CV* over systems (lower is more
reproducible).
"""

from __future__ import annotations

import math

from annotations.analysis import correlation as co
from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")


def cv_star(values) -> float | None:
    """Belz et al. (2022) small-sample corrected coefficient of variation, in percent."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 2:
        return None
    mean = float(x.mean())
    if mean <= 0:
        return None  # undefined (their code refuses it too)
    s = math.sqrt(float(((x - mean) ** 2).sum()) / (n - 1))
    c4 = math.sqrt(2 / (n - 1)) * math.gamma(n / 2) / math.gamma((n - 1) / 2)
    return (1 + 1 / (4 * n)) * (s / c4) / mean * 100


def scale_shift(campaign, criterion: str, protocol) -> float:
    """What to subtract so that the criterion's scale starts at 0."""
    low = campaign.criterion_scale(criterion)[0] if protocol.has_scale else None
    if low is not None:
        return float(low)
    return protocol.score_floor


def _systems(outputs: dict, scores: dict) -> dict[str, float]:
    per: dict[str, list] = {}
    for o, v in scores.items():
        if o in outputs and v is not None and np.isfinite(v):
            per.setdefault(outputs[o]["system"], []).append(v)
    return {s: float(np.mean(v)) for s, v in per.items()}


def _num(x):
    return None if x is None or not np.isfinite(x) else float(x)


def agreement(h1: dict[int, float], h2: dict[int, float], outputs: dict, *, shift: float = 0.0) -> dict:
    """human1 vs human2 at segment and system level, and CV* per system."""
    shared = sorted(o for o in h1 if o in h2 and o in outputs)
    a = np.array([h1[o] for o in shared], dtype=float)
    b = np.array([h2[o] for o in shared], dtype=float)
    segment = {"n": len(shared)}
    for name in ("pearson", "spearman", "kendall"):
        segment[name] = _num(co.FUNCTIONS[name](a, b)) if len(shared) >= 2 else None
    s1, s2 = _systems(outputs, h1), _systems(outputs, h2)
    systems = sorted(set(s1) & set(s2))
    x = np.array([s1[s] for s in systems])
    y = np.array([s2[s] for s in systems])
    system = {
        "n": len(systems),
        "pearson": _num(co.pearson(x, y)) if len(systems) >= 2 else None,
        "kendall": _num(co.kendall(x, y)) if len(systems) >= 2 else None,
        "scores": {s: {"human1": s1[s], "human2": s2[s]} for s in systems},
    }
    per = {s: cv_star([s1[s] - shift, s2[s] - shift]) for s in systems}
    defined = [v for v in per.values() if v is not None]
    repro = {
        "cv_star_mean": float(np.mean(defined)) if defined else None,
        "cv_star": per,
        "shift": shift,
        "definition": "CV* (Belz, Popovic & Mille 2022, QRA): (1 + 1/(4n)) * 100 * (s / c4(n)) / mean over "
        "the n = 2 waves' system scores, scale shifted to start at 0; mean over systems",
    }
    return {"segment": segment, "system": system, "reproducibility": repro}


DISCREPANCY_THRESHOLD = 50.0  # WMT25 general task: segments whose two waves differ by more than 50 points


def discrepancies(
    h1: dict[int, float], h2: dict[int, float], outputs: dict, *, threshold: float = DISCREPANCY_THRESHOLD
) -> list[dict]:
    """Outputs both waves scored whose two scores differ by MORE than `threshold` (as WMT25's
    list of segments whose human1 and human2 differ by more than 50, wmt25-general-mt issue #3),
    largest difference first, then by item and system."""
    rows = []
    for o in h1:
        if o not in h2 or o not in outputs:
            continue
        a, b = h1[o], h2[o]
        if a is None or b is None or not (np.isfinite(a) and np.isfinite(b)):
            continue
        if abs(a - b) > threshold:
            info = outputs[o]
            rows.append(
                {
                    "output": o,
                    "item": info["item"],
                    "item_ext": info["item_ext"],
                    "system": info["system"],
                    "human1": float(a),
                    "human2": float(b),
                    "difference": float(b - a),
                }
            )
    rows.sort(key=lambda r: (-abs(r["difference"]), str(r["item_ext"]), r["system"]))
    return rows
