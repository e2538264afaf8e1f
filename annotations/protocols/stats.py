"""Small statistics the protocols share (pure: no Django, no scipy at import)."""

from __future__ import annotations

import math
from collections import Counter

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")


def degraded_passed(degraded: float, original: float, *, floor: float | None = None) -> bool:
    """A damaged copy passes when it scored lower than its original, or both sit at the floor."""
    if degraded < original:
        return True
    return floor is not None and degraded == original == floor


def pstdev(values: list[float]) -> float:
    """Population standard deviation in floats (statistics.pstdev is exact but slow: Fractions)."""
    mean = sum(values) / len(values)
    return math.sqrt(max(0.0, sum((v - mean) ** 2 for v in values) / len(values)))


def stdev(values: list[float]) -> float:
    """Sample standard deviation (n >= 2) in floats."""
    mean = sum(values) / len(values)
    return math.sqrt(max(0.0, sum((v - mean) ** 2 for v in values) / (len(values) - 1)))


def majority_share(values: list) -> float:
    """The share of the most frequent answer."""
    return Counter(values).most_common(1)[0][1] / len(values)


def zscore_by_annotator(annotators: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each annotator's values z-scored with their own mean and standard deviation
    (a constant annotator's values become 0)."""
    out = np.zeros(len(values), dtype=float)
    for a in np.unique(annotators):
        mask = annotators == a
        v = values[mask]
        sd = v.std()
        out[mask] = (v - v.mean()) / sd if sd > 0 else 0.0
    return out
