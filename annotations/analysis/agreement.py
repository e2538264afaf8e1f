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

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

# scipy is imported when an analysis first needs it, not by every web worker at start-up (workbench.lazy).
sparse = lazy_module("scipy.sparse")

LEVELS = ("nominal", "ordinal", "interval")
# Bootstrap resamples computed together (one sparse x dense product per batch).
BATCH = 25
# Above this many distinct values (continuous magnitudes) alpha is computed from sparse
# coincidences, and bootstrap intervals are not computed (each resample would need a dense
# values x values matrix).
DENSE_MAX = 2000


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
    m = sparse.csr_matrix((np.ones(len(cats)), (units, cats)), shape=(units.max() + 1, len(domain)))
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
    if len(counts.domain) > DENSE_MAX:
        return _alpha_sparse(counts, level)
    return alpha_from_coincidences(_coincidences(counts.matrix), counts.domain, level)


def _alpha_sparse(counts: Counts, level: str) -> float:
    """The same alpha without a dense values x values matrix, for continuous values (z-scored
    magnitudes: nearly every value distinct), where that matrix would not fit in memory."""
    m = counts.matrix
    n_u = np.asarray(m.sum(axis=1)).ravel()
    weighted = sparse.diags(1.0 / (n_u - 1)) @ m
    o = (m.T @ weighted).tocoo()
    self_pairs = np.asarray(weighted.sum(axis=0)).ravel()  # a value is not paired with itself
    n_v = np.asarray(o.sum(axis=1)).ravel() - self_pairs
    n = n_v.sum()
    if n <= 1:
        return float("nan")
    if level == "nominal":
        observed = o.data[o.row != o.col].sum()
        expected = (n * n - (n_v * n_v).sum()) / (n - 1)
    else:
        position = counts.domain.astype(float) if level == "interval" else np.cumsum(n_v) - n_v / 2.0
        observed = (o.data * (position[o.row] - position[o.col]) ** 2).sum()
        expected = (2 * n * (n_v * position**2).sum() - 2 * (n_v * position).sum() ** 2) / (n - 1)
    if expected <= 0:
        return float("nan")
    return float(1.0 - observed / expected)


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


def cohen_kappas(
    table: Table, names: dict[int, str] | None = None, *, min_common: int = 2, max_annotators: int = 60
) -> dict[str, dict]:
    """Cohen's kappa (nominal) for every pair of annotators with `min_common` units in common.

    A pair is named by its two names in sorted order joined by "|", and pairs come in the sorted
    order of those keys: the same pair has the same key in any database holding the same data."""
    from statsmodels.stats.inter_rater import cohens_kappa  # lazy: statsmodels costs each web worker ~0.5 s and ~40 MB

    domain, cats = np.unique(table.values, return_inverse=True)
    order = np.lexsort((table.units, table.annotators))
    ann, units, codes = table.annotators[order], table.units[order], cats[order]
    people, first = np.unique(ann, return_index=True)
    if len(people) > max_annotators:
        return {}
    bounds = dict(zip(people.tolist(), zip(first.tolist(), np.r_[first[1:], len(ann)].tolist())))
    out = {}
    names = names or {}
    label = {p: str(names.get(p, p)) for p in people.tolist()}
    v = len(domain)
    for a, b in combinations(sorted(people.tolist(), key=lambda p: (label[p], p)), 2):
        (sa, ea), (sb, eb) = bounds[a], bounds[b]
        _, ia, ib = np.intersect1d(units[sa:ea], units[sb:eb], return_indices=True)
        if len(ia) < min_common:
            continue
        x, y = codes[sa:ea][ia], codes[sb:eb][ib]
        used = np.unique(np.r_[x, y])
        index = np.full(v, -1)
        index[used] = np.arange(len(used))
        ct = np.bincount(index[x] * len(used) + index[y], minlength=len(used) ** 2).reshape(len(used), len(used))
        if len(used) < 2:
            kappa = float("nan")
        else:
            with np.errstate(all="ignore"):
                kappa = float(cohens_kappa(ct.astype(float), return_results=False))
        out[f"{label[a]}|{label[b]}"] = {"kappa": _clean(kappa), "n": int(len(ia))}
    return dict(sorted(out.items()))


def _clean(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


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

    Units are drawn by their row in `counts`, i.e. in the order of the table's unit numbers:
    `TableBuilder` numbers them in the data's own order (item external id, system name), so
    the same seed gives the same intervals whatever the import order or database ids.

    A resample is a vector of multiplicity weights over units; the coincidence
    matrix, Fleiss' margins and percent agreement are all sums over units, so
    each unit's share is computed once and a resample is one sparse product.
    """
    samples: dict[str, list[float]] = {f"krippendorff_alpha_{lv}": [] for lv in LEVELS}
    samples["fleiss_kappa"] = []
    samples["percent_agreement"] = []
    if reps <= 0 or counts.n_units < 2:
        return {k: [None, None] for k in samples} | {"reps": 0, "seed": seed}
    if len(counts.domain) > DENSE_MAX:
        return {k: [None, None] for k in samples} | {
            "reps": 0,
            "seed": seed,
            "note": f"more than {DENSE_MAX} distinct values: no bootstrap intervals",
        }
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
    fl_sparse = m[modal_rows]  # the rows of `fl`, kept sparse
    n_f = float(modal)
    p_unit = (
        (np.asarray(fl_sparse.multiply(fl_sparse).sum(axis=1)).ravel() - n_f) / (n_f * (n_f - 1))
        if n_f > 1
        else np.zeros(fl.shape[0])
    )
    done = 0
    while done < reps:
        b = min(BATCH, reps - done)
        # b resamples at once: multiplicity weights, one row per resample (same draws as one at a time).
        draws = np.stack([rng.integers(0, u, u) for _ in range(b)])
        w = np.stack([np.bincount(d, minlength=u) for d in draws]).astype(float)
        o_all = np.asarray(contrib.T @ w.T)  # (v*v) x b
        pct = (w @ share) / w.sum(axis=1)
        fw = w[:, modal_rows]
        if n_f > 1:
            p_cat_all = np.asarray(fl_sparse.T @ fw.T)  # categories x b
            p_mean_all = fw @ p_unit
        for k in range(b):
            o = o_all[:, k].reshape(v, v)
            for lv in LEVELS:
                samples[f"krippendorff_alpha_{lv}"].append(alpha_from_coincidences(o, counts.domain, lv))
            samples["percent_agreement"].append(float(pct[k]))
            total = fw[k].sum()
            if total and n_f > 1:
                p_cat = p_cat_all[:, k] / (total * n_f)
                p_exp = float((p_cat * p_cat).sum())
                p_mean = float(p_mean_all[k] / total)
                samples["fleiss_kappa"].append((p_mean - p_exp) / (1 - p_exp) if p_exp != 1 else float("nan"))
        done += b
    return {k: _interval(v) for k, v in samples.items()} | {"reps": reps, "seed": seed}


def alpha_without_each(table: Table, names: dict[int, str] | None = None, level: str = "interval") -> dict:
    """Alpha after leaving out each annotator in turn: who lowers agreement."""
    names = names or {}
    out = {}
    # In the order of the names shown, not of database ids.
    for a in sorted(np.unique(table.annotators).tolist(), key=lambda a: (str(names.get(a, a)), a)):
        keep = table.annotators != a
        sub = Table(table.units[keep], table.annotators[keep], table.values[keep])
        out[str(names.get(a, a))] = {
            "judgements": int((~keep).sum()),
            "alpha_without": _clean(krippendorff_alpha(value_counts(sub), level)),
        }
    return out


# ---- the one agreement definition: a protocol's units and values, labelled ---------------------

# Below this many points a bounded scale is categorical enough for nominal alpha, Fleiss' kappa and
# percent agreement to be headline-worthy; on 0-100 or unbounded magnitudes two annotators almost
# never give the same number, so those figures measure the scale's resolution, not agreement.
FEW_POINTS = 11


class TableBuilder:
    """The reliability data of one criterion, fed with rows as they stream (the export feeds it
    chunk by chunk; the dashboard all at once): unit keys are numbered on the way and values
    kept in numpy arrays, so memory grows with the number of judgements as three numbers each.

    `identity` (output id -> (item external id, system name), `annotations.selectors.outputs.
    output_identities`) puts the units in the data's own order, whatever order the rows came in
    (`Protocol.agreement_unit_identity`); without it they are ordered by their keys (database ids)."""

    def __init__(self, protocol, *, batch: int = 50_000, identity: dict[int, tuple] | None = None):
        self.protocol, self.batch, self.identity = protocol, batch, identity
        self._index: dict = {}
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._u: list[int] = []
        self._a: list[int] = []
        self._v: list[float] = []

    def add(self, rows) -> None:
        index = self._index
        for key, annotator, value in self.protocol.agreement_triples(rows):
            self._u.append(index.setdefault(key, len(index)))
            self._a.append(annotator)
            self._v.append(value)
            if len(self._u) >= self.batch:
                self._flush()

    def _flush(self) -> None:
        self._parts.append((np.asarray(self._u, np.int64), np.asarray(self._a, np.int64), np.asarray(self._v, float)))
        self._u, self._a, self._v = [], [], []

    def _canonical_units(self, table: Table) -> None:
        """Number units by the rank of their identity and orient their values as it says."""
        keys = list(self._index)
        if not keys:
            return
        if self.identity is None:
            found = [(key, False) for key in keys]
        else:
            found = [self.protocol.agreement_unit_identity(key, self.identity) for key in keys]
        order = sorted(range(len(keys)), key=lambda k: found[k][0])
        rank = np.empty(len(keys), np.int64)
        rank[order] = np.arange(len(keys))
        flip = np.array([f for _, f in found], dtype=bool)
        if flip.any():
            table.values = np.where(flip[table.units], -table.values, table.values)
        table.units = rank[table.units]

    def table(self) -> Table:
        """Values z-scored per annotator when the protocol's variant is "z"."""
        from annotations.protocols.base import Z  # lazy: protocols load the models
        from annotations.protocols.stats import zscore_by_annotator  # lazy: protocols load the models

        self._flush()
        table = Table(*(np.concatenate([p[k] for p in self._parts]) for k in range(3)))
        self._canonical_units(table)
        if self.protocol.agreement.variant == Z and len(table):
            table.values = zscore_by_annotator(table.annotators, table.values)
        return table


def protocol_table(protocol, rows, identity: dict[int, tuple] | None = None) -> Table:
    """The reliability data of one criterion's rows, as the protocol defines unit and value."""
    builder = TableBuilder(protocol, identity=identity)
    builder.add(rows)
    return builder.table()


def headline_caveats(protocol, scale: tuple[float | None, float | None]) -> list[str]:
    """The figures that are not headline figures for this protocol and scale."""
    if not protocol.scored:
        return []
    low, high = scale
    if low is None or high is None or high - low + 1 > FEW_POINTS or protocol.agreement.variant != "raw":
        return ["krippendorff_alpha.nominal", "fleiss_kappa", "percent_agreement"]
    return []


def headline(protocol, figures: dict, *, annotators: str) -> dict:
    """The one agreement figure every surface shows for a criterion, with what it measured."""
    spec = protocol.agreement
    return {
        "measure": "krippendorff_alpha",
        "level": spec.level,
        "variant": spec.variant,
        "value": figures["krippendorff_alpha"][spec.level],
        "unit": spec.unit,
        "value_compared": spec.value,
        "n_units": figures["n_units"],
        "n_annotators": figures["n_annotators"],
        "n_judgements": figures["n_judgements"],
        "annotators": annotators,
        "label": spec.label(),
    }


def criterion_agreement(
    protocol,
    rows,
    *,
    scale=(None, None),
    annotators: str,
    bootstrap: int = 0,
    seed: int = 0,
    names: dict | None = None,
    cohen: bool = False,
    per_annotator: bool = False,
    table: Table | None = None,
    identity: dict[int, tuple] | None = None,
) -> dict:
    """Every agreement figure of one criterion's rows, with the headline and its label.

    Called by the dashboard, the `agreement` command and API, the quality page and API,
    and the export's card and campaign.json: the same rows give the same numbers everywhere.
    """
    table = protocol_table(protocol, rows, identity) if table is None else table
    figures = agreement_figures(table, bootstrap=bootstrap, seed=seed)
    figures["variant"] = protocol.agreement.variant
    figures["headline"] = headline(protocol, figures, annotators=annotators)
    figures["not_headline"] = headline_caveats(protocol, scale)
    if cohen:
        figures["cohen_kappa"] = cohen_kappas(table, names)
    if per_annotator:
        figures["per_annotator"] = alpha_without_each(table, names, protocol.agreement.level)
    return figures
