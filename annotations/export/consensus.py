"""How far the annotators of one unit agree (pure functions; defined in the README's export section).

- ratings and ESA scores on a bounded scale [lo, hi]: 1 - s / ((hi - lo) / 2), where s is the
  population standard deviation of the unit's scores (1 = everyone gave the same score, 0 = half
  at each end of the scale); unbounded magnitudes (RankME without a scale) have none;
- pairwise: the majority share (the share of the most frequent answer a / b / tie), as
  `correlate --min-consensus`;
- best-worst: the mean of the majority shares of "best" and of "worst".

A unit judged by fewer than two annotators has no consensus (None). An item's consensus is the
mean over its units and criteria that have one.
"""
from __future__ import annotations

import math
from collections import Counter


def unit_consensus(kind: str, values: list, scale: tuple[float | None, float | None] = (None, None)) -> float | None:
    if len(values) < 2:
        return None
    if kind in ("rating", "esa"):
        low, high = scale
        if low is None or high is None or high <= low:
            return None
        return max(0.0, 1.0 - pstdev(values) / ((high - low) / 2))
    if kind == "pairwise":
        return _majority_share(values)
    return (_majority_share([best for best, _ in values]) + _majority_share([worst for _, worst in values])) / 2


def pstdev(values: list[float]) -> float:
    """Population standard deviation in floats (statistics.pstdev is exact but slow: Fractions)."""
    mean = sum(values) / len(values)
    return math.sqrt(max(0.0, sum((v - mean) ** 2 for v in values) / len(values)))


def stdev(values: list[float]) -> float:
    """Sample standard deviation (n >= 2) in floats."""
    mean = sum(values) / len(values)
    return math.sqrt(max(0.0, sum((v - mean) ** 2 for v in values) / (len(values) - 1)))


def _majority_share(values: list) -> float:
    return Counter(values).most_common(1)[0][1] / len(values)


def mean_or_none(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None
