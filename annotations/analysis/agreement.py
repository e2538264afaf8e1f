"""Inter-annotator agreement on (unit, annotator, value) triples.

Krippendorff's alpha is computed from the coincidence matrix of the values
(Krippendorff 2011, "Computing Krippendorff's alpha-reliability"), built with
one sparse product so that a million judgements and bootstrap resampling over
units take seconds; tests check it equals the `krippendorff` package on
random data with missing values. Fleiss' kappa equals statsmodels'
`fleiss_kappa` on the units rated by the most common number of annotators
(Fleiss' kappa needs the same number of ratings per unit); Cohen's kappa per
annotator pair is statsmodels' `cohens_kappa` on the units both rated.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import sparse

LEVELS = ("nominal", "ordinal", "interval")


@dataclass
class Table:
    """Judgements as parallel arrays: unit index, annotator index, value."""

    units: np.ndarray
    annotators: np.ndarray
    values: np.ndarray

    @classmethod
    def from_triples(cls, triples) -> "Table":
        rows = list(triples)
        if not rows:
            return cls(np.zeros(0, int), np.zeros(0, int), np.zeros(0, float))
        u, a, v = zip(*rows)
        _, units = np.unique(np.asarray(u, dtype=object).astype(str), return_inverse=True)
        _, annotators = np.unique(np.asarray(a, dtype=object).astype(str), return_inverse=True)
        return cls(units.astype(np.int64), annotators.astype(np.int64), np.asarray(v, dtype=float))

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class Counts:
    """Pairable units (two or more values) x value domain, counts of each value."""

    matrix: sparse.csr_matrix
    domain: np.ndarray  # sorted distinct values

    @property
    def n_units(self) -> int:
        return self.matrix.shape[0]


def value_counts(table: Table) -> Counts:
    domain, cats = np.unique(table.values, return_inverse=True)
    if len(table) == 0:
        return Counts(sparse.csr_matrix((0, 0)), domain)
    _, units = np.unique(table.units, return_inverse=True)
    m = sparse.csr_matrix(
        (np.ones(len(cats)), (units, cats)), shape=(units.max() + 1, len(domain))
    )
    m.sum_duplicates()
    per_unit = np.asarray(m.sum(axis=1)).ravel()
    return Counts(m[per_unit >= 2], domain)


def _coincidences(counts: sparse.csr_matrix, weights: np.ndarray | None = None) -> np.ndarray:
    n_u = np.asarray(counts.sum(axis=1)).ravel()
    scale = 1.0 / (n_u - 1)
    if weights is not None:
        scale = scale * weights
    weighted = sparse.diags(scale) @ counts
    o = (counts.T @ weighted).toarray()
    # A value is not paired with itself.
    o -= np.diag(np.asarray(weighted.sum(axis=0)).ravel())
    return o


def _delta2(domain: np.ndarray, n_v: np.ndarray, level: str) -> np.ndarray:
    if level == "nominal":
        return 1.0 - np.eye(len(domain))
    if level == "interval":
        return (domain[:, None] - domain[None, :]) ** 2
    if level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_v)])
        i = np.arange(len(domain))
        lo, hi = np.minimum.outer(i, i), np.maximum.outer(i, i)
        between = cum[hi + 1] - cum[lo]
        return (between - (n_v[lo] + n_v[hi]) / 2.0) ** 2
    raise ValueError(f"unknown level {level!r}")


def alpha_from_coincidences(o: np.ndarray, domain: np.ndarray, level: str) -> float:
    n_v = o.sum(axis=1)
    n = n_v.sum()
    if n <= 1 or len(domain) < 2:
        return float("nan")
    d = _delta2(domain, n_v, level)
    observed = (o * d).sum()
    expected = (np.outer(n_v, n_v) * d).sum() / (n - 1)
    if expected == 0:
        return float("nan")
    return float(1.0 - observed / expected)


def krippendorff_alpha(counts: Counts, level: str = "interval") -> float:
    if counts.n_units == 0:
        return float("nan")
    return alpha_from_coincidences(_coincidences(counts.matrix), counts.domain, level)


def percent_agreement(counts: Counts, weights: np.ndarray | None = None) -> float:
    """Mean over units of the share of annotator pairs that gave the same value."""
    if counts.n_units == 0:
        return float("nan")
    m = counts.matrix
    n_u = np.asarray(m.sum(axis=1)).ravel()
    same = np.asarray(m.multiply(m).sum(axis=1)).ravel() - n_u
    share = same / (n_u * (n_u - 1))
    w = np.ones_like(share) if weights is None else weights
    return float((w * share).sum() / w.sum()) if w.sum() else float("nan")


def fleiss_table(counts: Counts) -> np.ndarray:
    """Rows of the units rated by the most common number of annotators."""
    if counts.n_units == 0:
        return np.zeros((0, 0))
    n_u = np.asarray(counts.matrix.sum(axis=1)).ravel().astype(int)
    modal = np.bincount(n_u).argmax()
    return counts.matrix[n_u == modal].toarray()


def fleiss_kappa(table: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Fleiss' kappa (same formula as statsmodels), with optional unit weights for the bootstrap."""
    if table.shape[0] == 0:
        return float("nan")
    w = np.ones(table.shape[0]) if weights is None else weights
    n = table.sum(axis=1)[0]
    p_cat = (w @ table) / (w.sum() * n)
    p_unit = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    p_mean = (w @ p_unit) / w.sum()
    p_exp = (p_cat * p_cat).sum()
    if p_exp == 1:
        return float("nan")
    return float((p_mean - p_exp) / (1 - p_exp))


def cohen_kappas(table: Table, names: dict[int, str] | None = None, *, min_common: int = 2,
                 max_annotators: int = 60) -> dict[str, dict]:
    """Cohen's kappa (nominal) for every pair of annotators with `min_common` units in common."""
    from statsmodels.stats.inter_rater import cohens_kappa

    by_annotator: dict[int, dict[int, float]] = {}
    for u, a, v in zip(table.units.tolist(), table.annotators.tolist(), table.values.tolist()):
        by_annotator.setdefault(a, {})[u] = v
    if len(by_annotator) > max_annotators:
        return {}
    out = {}
    names = names or {}
    for a, b in combinations(sorted(by_annotator), 2):
        common = by_annotator[a].keys() & by_annotator[b].keys()
        if len(common) < min_common:
            continue
        x = [by_annotator[a][u] for u in common]
        y = [by_annotator[b][u] for u in common]
        cats = sorted(set(x) | set(y))
        index = {c: i for i, c in enumerate(cats)}
        ct = np.zeros((len(cats), len(cats)))
        for xi, yi in zip(x, y):
            ct[index[xi], index[yi]] += 1
        if len(cats) < 2:
            kappa = float("nan")
        else:
            with np.errstate(all="ignore"):
                kappa = float(cohens_kappa(ct, return_results=False))
        out[f"{names.get(a, a)}|{names.get(b, b)}"] = {"kappa": _clean(kappa), "n": len(common)}
    return out


def _clean(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def _interval(samples: list[float]) -> list[float | None]:
    s = np.asarray([x for x in samples if np.isfinite(x)])
    if len(s) < 2:
        return [None, None]
    lo, hi = np.percentile(s, [2.5, 97.5])
    return [_clean(lo), _clean(hi)]


def agreement_figures(table: Table, *, bootstrap: int = 200, seed: int = 0) -> dict:
    """Alpha at every level, Fleiss' kappa, percent agreement, bootstrap 95% intervals over units."""
    counts = value_counts(table)
    fl = fleiss_table(counts)
    out = {
        "krippendorff_alpha": {level: _clean(krippendorff_alpha(counts, level)) for level in LEVELS},
        "fleiss_kappa": _clean(fleiss_kappa(fl)),
        "fleiss_units": int(fl.shape[0]),
        "percent_agreement": _clean(percent_agreement(counts)),
        "n_units": counts.n_units,
        "n_annotators": int(len(np.unique(table.annotators))),
        "n_judgements": len(table),
        "n_values": int(len(counts.domain)),
    }
    out["ci95"] = bootstrap_intervals(counts, fl, reps=bootstrap, seed=seed)
    return out


def bootstrap_intervals(counts: Counts, fl: np.ndarray, *, reps: int, seed: int) -> dict:
    """Percentile intervals from resampling units with replacement.

    A resample is a vector of multiplicity weights over units; the coincidence
    matrix, Fleiss' margins and percent agreement are all sums over units, so
    each unit's share is computed once and a resample is one sparse product.
    """
    samples: dict[str, list[float]] = {f"krippendorff_alpha_{lv}": [] for lv in LEVELS}
    samples["fleiss_kappa"] = []
    samples["percent_agreement"] = []
    if reps <= 0 or counts.n_units < 2:
        return {k: [None, None] for k in samples} | {"reps": 0}
    rng = np.random.default_rng(seed)
    m = counts.matrix.tocsr()
    u, v = m.shape
    n_u = np.asarray(m.sum(axis=1)).ravel()
    # Each unit's contribution to the coincidence matrix, flattened: n_uc n_uk / (n_u - 1) - [c = k] n_uc / (n_u - 1).
    coo = m.tocoo()
    order = np.lexsort((coo.col, coo.row))
    r, c, x = coo.row[order], coo.col[order], coo.data[order]
    per_row = np.bincount(r, minlength=u)
    first = np.r_[0, np.cumsum(per_row)][:-1]  # index of each row's first entry
    # Every ordered pair (i, j) of entries of the same unit.
    repeat = per_row[r]
    left = np.repeat(np.arange(len(r)), repeat)
    starts = np.r_[0, np.cumsum(repeat)][:-1]
    right = first[r[left]] + (np.arange(len(left)) - np.repeat(starts, repeat))
    scale = 1.0 / (n_u[r[left]] - 1)
    value = x[left] * x[right] * scale - np.where(left == right, x[left] * scale, 0.0)
    rows, cols, vals = [r[left]], [c[left] * v + c[right]], [value]
    contrib = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(u, v * v))
    share = (np.asarray(m.multiply(m).sum(axis=1)).ravel() - n_u) / (n_u * (n_u - 1))
    modal = np.bincount(n_u.astype(int)).argmax()
    modal_rows = np.flatnonzero(n_u == modal)
    fl_sparse = sparse.csr_matrix(fl)
    n_f = float(modal)
    p_unit = (np.asarray(fl_sparse.multiply(fl_sparse).sum(axis=1)).ravel() - n_f) / (n_f * (n_f - 1)) \
        if n_f > 1 else np.zeros(fl.shape[0])
    for _ in range(reps):
        w = np.bincount(rng.integers(0, u, u), minlength=u).astype(float)
        o = np.asarray(contrib.T @ w).reshape(v, v)
        for lv in LEVELS:
            samples[f"krippendorff_alpha_{lv}"].append(alpha_from_coincidences(o, counts.domain, lv))
        samples["percent_agreement"].append(float(w @ share / w.sum()))
        fw = w[modal_rows]
        if fw.sum() and n_f > 1:
            p_cat = (fl_sparse.T @ fw) / (fw.sum() * n_f)
            p_exp = float((p_cat * p_cat).sum())
            p_mean = float(fw @ p_unit / fw.sum())
            samples["fleiss_kappa"].append((p_mean - p_exp) / (1 - p_exp) if p_exp != 1 else float("nan"))
    return {k: _interval(v) for k, v in samples.items()} | {"reps": reps, "seed": seed}


def alpha_without_each(table: Table, names: dict[int, str] | None = None, level: str = "interval") -> dict:
    """Alpha after leaving out each annotator in turn: who lowers agreement."""
    names = names or {}
    out = {}
    for a in np.unique(table.annotators):
        keep = table.annotators != a
        sub = Table(table.units[keep], table.annotators[keep], table.values[keep])
        out[str(names.get(int(a), int(a)))] = {
            "judgements": int((~keep).sum()),
            "alpha_without": _clean(krippendorff_alpha(value_counts(sub), level)),
        }
    return out
