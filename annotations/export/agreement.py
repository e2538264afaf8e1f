"""Inter-annotator agreement of the exported judgements, per criterion (the card's figures).

Krippendorff's alpha over the units judged by at least two annotators: interval and ordinal for
scores (ratings, ESA), nominal for choices (pairwise winner, best-worst (best, worst) pair).

Computed from the coincidence matrix (Krippendorff 2011, "Computing Krippendorff's alpha-
reliability"), which is accumulated unit by unit while the export is written, so memory grows
with the number of distinct values, never with the number of judgements. (The `krippendorff`
package builds a units x values x values array: 8 GB for 100,000 units rated 0-100.) The tests
check the figures against the `krippendorff` package. The formula itself is
`annotations.analysis.agreement.alpha_from_coincidences` (the `agreement` command's), given the
streamed coincidences as a dense values x values matrix; only for more than DENSE_MAX distinct
values (continuous magnitudes), where that matrix would not fit, the sparse form below is used.

    o_ck = sum over units u of n_uc (n_uk - [c = k]) / (m_u - 1)
    n_c = sum_k o_ck,  n = sum_c n_c
    alpha = 1 - (n - 1) * sum_ck o_ck d(c, k)^2 / sum_ck n_c n_k d(c, k)^2

with d(c, k)^2 = [c != k] (nominal), (c - k)^2 (interval), and for ordinal (M_c - M_k)^2 where
M_v = sum_{g < v} n_g + n_v / 2 (so ordinal is interval on these mid-ranks).
"""
from __future__ import annotations

from collections import Counter, defaultdict

from annotations.export.judgements import Judgement

DENSE_MAX = 2000
LEVELS = {"rating": ("interval", "ordinal"), "esa": ("interval", "ordinal"), "pairwise": ("nominal",),
          "bws": ("nominal",)}


class AgreementCollector:
    def __init__(self, kind: str):
        self.kind = kind
        self._categories: dict = {}
        # criterion -> {(c, k): o_ck}
        self._coincidences: dict[str, dict[tuple, float]] = defaultdict(lambda: defaultdict(float))
        self._units: Counter = Counter()
        self._judgements: Counter = Counter()
        self._annotators: dict[str, set] = defaultdict(set)

    def add(self, judgements: list[Judgement]) -> None:
        """The judgements of whole units (one item's kept judgements)."""
        units: dict[tuple, list[Judgement]] = defaultdict(list)
        for j in judgements:
            units[(j.unit(), j.criterion)].append(j)
        for (_, criterion), found in units.items():
            if len(found) < 2:
                continue  # a unit judged once carries no information about agreement
            counts = Counter(self._value(j) for j in found)
            m = len(found)
            o = self._coincidences[criterion]
            for c, n_c in counts.items():
                for k, n_k in counts.items():
                    pairs = n_c * (n_k - (c == k))
                    if pairs:
                        o[(c, k)] += pairs / (m - 1)
            self._units[criterion] += 1
            self._judgements[criterion] += m
            self._annotators[criterion].update(j.annotator_id for j in found)

    def _value(self, j: Judgement):
        value = j.value()
        if self.kind in ("pairwise", "bws"):
            return self._categories.setdefault(value, len(self._categories))
        return float(value)

    def figures(self) -> dict[str, dict]:
        """criterion -> {"krippendorff_alpha": {level: alpha}, "n_units", "n_annotators", "n_judgements"}."""
        return {criterion: {
            "krippendorff_alpha": {level: alpha(self._coincidences[criterion], level) for level in LEVELS[self.kind]},
            "n_units": self._units[criterion], "n_annotators": len(self._annotators[criterion]),
            "n_judgements": self._judgements[criterion],
        } for criterion in sorted(self._units)}


def alpha(o: dict[tuple, float], level: str) -> float | None:
    """Krippendorff's alpha of sparse coincidences {(c, k): o_ck}; None when undefined."""
    import math

    domain = sorted({c for c, _ in o})
    if len(domain) > DENSE_MAX:
        return alpha_sparse(o, level)
    import numpy as np

    from annotations.analysis.agreement import alpha_from_coincidences

    index = {c: i for i, c in enumerate(domain)}
    dense = np.zeros((len(domain), len(domain)))
    for (c, k), value in o.items():
        dense[index[c], index[k]] = value
    found = alpha_from_coincidences(dense, np.asarray(domain, dtype=float), level)
    return None if math.isnan(found) else found


def alpha_sparse(o: dict[tuple, float], level: str) -> float | None:
    n_c: dict = defaultdict(float)
    for (c, _), value in o.items():
        n_c[c] += value
    n = sum(n_c.values())
    if n <= 1:
        return None
    if level == "nominal":
        observed = sum(value for (c, k), value in o.items() if c != k)
        expected = (n * n - sum(v * v for v in n_c.values())) / (n - 1)
    else:
        position = {c: float(c) for c in n_c}
        if level == "ordinal":
            below = 0.0
            for c in sorted(n_c):
                position[c] = below + n_c[c] / 2
                below += n_c[c]
        observed = sum(value * (position[c] - position[k]) ** 2 for (c, k), value in o.items())
        total = sum(n_c[c] * position[c] for c in n_c)
        squares = sum(n_c[c] * position[c] ** 2 for c in n_c)
        expected = (2 * n * squares - 2 * total * total) / (n - 1)
    if expected <= 0:
        return None  # one value everywhere: agreement is undefined
    return 1.0 - observed / expected
