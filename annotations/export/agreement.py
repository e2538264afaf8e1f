"""Inter-annotator agreement of the exported judgements, per criterion (the card's figures).

Krippendorff's alpha from the `krippendorff` package (Castro 2017), over units judged by at least
two annotators: interval and ordinal for scores (ratings, ESA), nominal for choices (pairwise
winner, best-worst (best, worst) pair). One place to swap for `annotations.analysis` (issue 9)
once it is merged. The judgements are collected as they are written, in compact arrays (a few
bytes each), and the dense annotators x units matrix is built per criterion at the end.
"""
from __future__ import annotations

from array import array
from collections import defaultdict

from annotations.export.judgements import Judgement

LEVELS = {"rating": ("interval", "ordinal"), "esa": ("interval", "ordinal"), "pairwise": ("nominal",),
          "bws": ("nominal",)}


class AgreementCollector:
    def __init__(self, kind: str):
        self.kind = kind
        self._annotators: dict[int, int] = {}
        self._units: dict[str, dict[tuple, int]] = defaultdict(dict)
        self._categories: dict = {}
        self._rows: dict[str, tuple[array, array, array]] = {}

    def add(self, judgements: list[Judgement]) -> None:
        for j in judgements:
            rows = self._rows.get(j.criterion)
            if rows is None:
                rows = self._rows[j.criterion] = (array("i"), array("i"), array("d"))
            units = self._units[j.criterion]
            annotator = self._annotators.setdefault(j.annotator_id, len(self._annotators))
            unit = units.setdefault(j.unit(), len(units))
            value = j.value()
            if self.kind in ("pairwise", "bws"):
                value = self._categories.setdefault(value, len(self._categories))
            rows[0].append(annotator)
            rows[1].append(unit)
            rows[2].append(float(value))

    def figures(self) -> dict[str, dict]:
        """criterion -> {"krippendorff_alpha": {level: alpha}, "n_units", "n_annotators", "n_judgements"}."""
        return {criterion: self._criterion(criterion) for criterion in sorted(self._rows)}

    def _criterion(self, criterion: str) -> dict:
        import numpy as np

        annotators, units, values = (np.frombuffer(a, dtype=t) for a, t in zip(
            self._rows[criterion], ("i4", "i4", "f8")))
        # Units judged by fewer than two annotators carry no information about agreement.
        counts = np.bincount(units)
        pairable = counts[units] >= 2
        annotators, units, values = annotators[pairable], units[pairable], values[pairable]
        figures = {"krippendorff_alpha": {level: None for level in LEVELS[self.kind]},
                   "n_units": 0, "n_annotators": 0, "n_judgements": int(pairable.sum())}
        if not len(units):
            return figures
        unit_ids, unit_index = np.unique(units, return_inverse=True)
        annotator_ids, annotator_index = np.unique(annotators, return_inverse=True)
        figures["n_units"], figures["n_annotators"] = len(unit_ids), len(annotator_ids)
        figures["krippendorff_alpha"] = {
            level: alpha(annotator_index, unit_index, values, len(annotator_ids), len(unit_ids), level)
            for level in LEVELS[self.kind]}
        return figures


def alpha(annotator_index, unit_index, values, n_annotators: int, n_units: int, level: str) -> float | None:
    import krippendorff
    import numpy as np

    matrix = np.full((n_annotators, n_units), np.nan)
    matrix[annotator_index, unit_index] = values
    try:
        value = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
    except ValueError:  # one value everywhere: agreement is undefined
        return None
    return None if np.isnan(value) else float(value)
