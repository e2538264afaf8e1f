"""Metric-human correlation, the way google-research/mt-metrics-eval computes it.

Scores are matrices of systems x items (NaN = missing). `average_by`
follows mt-metrics-eval's `Correlation`: "none" flattens every (system,
item) pair into one vector; "sys" computes one correlation per system (a
row) and "item" one per item (a column), then averages them, dropping NaN
correlations (constant rows) and rows with fewer than two scores. Pairs with
a missing human or metric score are left out. Pearson and Spearman of a
constant vector are NaN (as mt-metrics-eval does, although scipy returns
0 / 1 since 1.14); Kendall is tau-b.

`acc23` is tie-calibrated pairwise accuracy (Deutsch et al. 2023): over all
pairs within a row, (concordant + tied in both) / pairs, where the metric
ties a pair when its score difference is at most epsilon; epsilon is the
value (0 or one of the pairwise metric differences) that maximises the
row-averaged accuracy, the smallest one on a tie, as mt-metrics-eval's
`KendallWithTiesOpt(variant="acc23", sample_rate=1.0)`.

`perm_both` is the PERM-BOTH test of mt-metrics-eval's `PermutationSigDiff`
(Deutsch et al. 2021): both metrics' scores are z-scored, each (system, item)
score is swapped between the two metrics with probability 1/2, and the
p-value is the share of resamples whose difference of correlations is at
least the observed one (blocks of 1000 with early stopping below 0.02 or
above 0.5, as there).

`spa` is soft pairwise accuracy (Thompson et al. 2024), mt-metrics-eval's
`PairwiseConfidenceError` (`pce.py`): for every pair of systems, the p-value
that system i beats system j from a paired permutation test over segment
scores (sums of segment scores, each segment's two scores swapped with
probability 1/2, one draw of swaps shared by every pair and by humans and
metric, numpy `default_rng(seed)` float32 as there: mt-metrics-eval's seed is 4,
1000 permutations); SPA = 1 - mean |p_human - p_metric| over pairs. It needs
a complete systems x items matrix, so items where some system lacks a human or
metric score are left out (mt-metrics-eval needs the same rectangle).

`pdp` is pairwise difference Pearson, mt-metrics-eval's
`Correlation.Pearson(pdp=True)`: within each row of `_Reshape` (one row of
system scores at system level), every ordered difference x_j - x_i (the
diagonal zeros included, as there) of the human scores is correlated with the
same difference of the metric scores, over all rows at once.

`assign_ranks` is mt-metrics-eval's `data.AssignRanks`: metrics sorted by
decreasing value; a new cluster starts at metric i when some metric of the
current cluster above it beats it at p <= 0.05.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Callable

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

# scipy is imported when an analysis first needs it, not by every web worker at start-up (workbench.lazy).
stats = lazy_module("scipy.stats")

METHODS = ("pearson", "spearman", "kendall", "acc23")
# Whole-matrix statistics: they take the segment-level systems x items matrices and answer
# at system level.
SYSTEM_METHODS = ("spa", "pdp")
SPA_SEED = 4  # mt-metrics-eval's `compute_pairwise_p_values(seed=4)`, the figure it reports
SPA_PERMUTATIONS = 1000
AVERAGE_BY = ("none", "sys", "item")


def _constant(x: np.ndarray) -> bool:
    return bool(np.all(x == x[0]))


def pearson(h: np.ndarray, m: np.ndarray) -> float:
    if len(h) < 2 or _constant(h) or _constant(m):
        return float("nan")
    return float(stats.pearsonr(h, m)[0])


def spearman(h: np.ndarray, m: np.ndarray) -> float:
    if len(h) < 2 or _constant(h) or _constant(m):
        return float("nan")
    return float(stats.spearmanr(h, m)[0])


def kendall(h: np.ndarray, m: np.ndarray) -> float:
    if len(h) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.kendalltau(h, m, variant="b")[0])


FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "pearson": pearson,
    "spearman": spearman,
    "kendall": kendall,
}


def rows(human: np.ndarray, metric: np.ndarray, average_by: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The vectors correlated, after mt-metrics-eval's `_Reshape` and None filtering."""
    human = np.atleast_2d(np.asarray(human, dtype=float))
    metric = np.atleast_2d(np.asarray(metric, dtype=float))
    if average_by == "none":
        human, metric = human.reshape(1, -1), metric.reshape(1, -1)
    elif average_by == "item":
        human, metric = human.T, metric.T
    elif average_by != "sys":
        raise ValueError(f"unknown average_by {average_by!r}")
    out = []
    for h, m in zip(human, metric):
        ok = ~np.isnan(h) & ~np.isnan(m)
        if ok.sum() >= 2:
            out.append((h[ok], m[ok]))
    return out


# acc23 over more pairs than this samples pairs, as mt-metrics-eval's `sample_rate` does.
MAX_PAIRS = 5_000_000


def correlate(human: np.ndarray, metric: np.ndarray, method: str, average_by: str = "none", *, seed: int = 0) -> dict:
    """{"value": r, "n": pairs used, "groups": rows averaged}; acc23 adds "epsilon"."""
    vectors = rows(human, metric, average_by)
    n = int(sum(len(h) for h, _ in vectors))
    if method == "acc23":
        total = sum(len(h) * (len(h) - 1) // 2 for h, _ in vectors)
        rate = 1.0 if total <= MAX_PAIRS else MAX_PAIRS / total
        value, epsilon = acc23(vectors, sample_rate=rate, seed=seed)
        out = {"value": value, "n": n, "groups": len(vectors), "epsilon": epsilon}
        if rate < 1.0:
            out["sample_rate"] = rate
        return out
    if average_by != "none" and vectors:
        values = _batched(human, metric, method, average_by)
    else:
        fn = FUNCTIONS[method]
        values = np.array([fn(h, m) for h, m in vectors], dtype=float)
    values = values[~np.isnan(values)]
    value = float(values.mean()) if len(values) else float("nan")
    return {"value": value, "n": n, "groups": int(len(values))}


def _grid(human, metric, average_by):
    h = np.atleast_2d(np.asarray(human, dtype=float))
    m = np.atleast_2d(np.asarray(metric, dtype=float))
    if average_by == "item":
        h, m = h.T, m.T
    ok = ~np.isnan(h) & ~np.isnan(m)
    keep = ok.sum(axis=1) >= 2
    return h[keep], m[keep], ok[keep]


def _row_ranks(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, np.nan)
    for k in range(x.shape[0]):
        out[k, ok[k]] = stats.rankdata(x[k, ok[k]])
    return out


def _batched(human, metric, method: str, average_by: str) -> np.ndarray:
    """One correlation per row (system or item) for many short rows at once; same values as
    the per-row scipy calls (tests compare them), NaN where scipy / mt-metrics-eval give NaN."""
    h, m, ok = _grid(human, metric, average_by)
    if method == "spearman":
        h, m = _row_ranks(h, ok), _row_ranks(m, ok)
    if method in ("pearson", "spearman"):
        n = ok.sum(axis=1)
        hz = np.where(ok, h, 0.0)
        mz = np.where(ok, m, 0.0)
        hc = np.where(ok, h - (hz.sum(axis=1) / n)[:, None], 0.0)
        mc = np.where(ok, m - (mz.sum(axis=1) / n)[:, None], 0.0)
        sh = np.sqrt((hc * hc).sum(axis=1))
        sm = np.sqrt((mc * mc).sum(axis=1))
        const_h = np.array([np.all(h[k, ok[k]] == h[k, ok[k]][0]) for k in range(len(h))], dtype=bool)
        const_m = np.array([np.all(m[k, ok[k]] == m[k, ok[k]][0]) for k in range(len(m))], dtype=bool)
        with np.errstate(all="ignore"):
            r = (hc * mc).sum(axis=1) / (sh * sm)
        r = np.clip(r, -1.0, 1.0)
        r[const_h | const_m] = np.nan
        return r
    if method == "kendall" and h.shape[1] <= 200:
        # tau-b = sum sign(dh) sign(dm) / sqrt(#pairs untied in h * #pairs untied in m), pairs i < j.
        i, j = np.triu_indices(h.shape[1], k=1)
        both = ok[:, i] & ok[:, j]
        sh = np.where(both, np.sign(h[:, i] - h[:, j]), 0.0)
        sm = np.where(both, np.sign(m[:, i] - m[:, j]), 0.0)
        with np.errstate(all="ignore"):
            return (sh * sm).sum(axis=1) / np.sqrt(np.abs(sh).sum(axis=1) * np.abs(sm).sum(axis=1))
    fn = FUNCTIONS[method]
    return np.array([fn(h[k, ok[k]], m[k, ok[k]]) for k in range(len(h))], dtype=float)


def _pairs(n: int, rate: float, rng) -> tuple[np.ndarray, np.ndarray]:
    if rate >= 1.0:
        return np.triu_indices(n, k=1)
    return _flat_pairs(_sampled_flat(n, rate, rng), n)


def _sampled_flat(n: int, rate: float, rng) -> np.ndarray:
    """Row-major indexes of the pairs kept: each of the n(n-1)/2 pairs with probability `rate`
    (drawn by index, not enumerated). `np.unique` of the draws, sorted in place: the same values
    without its copy (the draws are 8 bytes per kept pair; up to MAX_PAIRS of them)."""
    total = n * (n - 1) // 2
    k = rng.binomial(total, rate)
    flat = rng.integers(0, total, k)
    if len(flat) < 2:
        return flat
    flat.sort()
    keep = np.empty(len(flat), dtype=bool)
    keep[0] = True
    np.not_equal(flat[1:], flat[:-1], out=keep[1:])
    return flat[keep]


def _flat_pairs(flat: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair (i, j), i < j, of each row-major index: flat = i*n - i(i+1)/2 + (j - i - 1)."""
    i = (n - 0.5 - np.sqrt((n - 0.5) ** 2 - 2 * flat)).astype(np.int64)
    i = np.clip(i, 0, n - 2)
    start = i * n - i * (i + 1) // 2
    too_far = flat < start
    i[too_far] -= 1
    start = i * n - i * (i + 1) // 2
    nxt = (i + 1) * n - (i + 1) * (i + 2) // 2
    fix = flat >= nxt
    i[fix] += 1
    start = i * n - i * (i + 1) // 2
    j = flat - start + i + 1
    return i, j


# Pairs whose differences are worked out at once in acc23: its memory is the kept pairs' 16 bytes
# (difference and change) plus a block's temporaries, not ~100 bytes for each of up to MAX_PAIRS
# pairs (the meta-evaluation page grew a worker by 560 MB, issue 46).
PAIR_BLOCK = 1 << 18


def _pair_blocks(n: int, rate: float, rng) -> tuple[int, Iterator[tuple[np.ndarray, np.ndarray]]]:
    """How many pairs `_pairs` gives, and those pairs in blocks, in its order (row-major)."""
    if rate < 1.0:
        # The sampled indexes once (8 bytes a pair), turned into pairs a block at a time: turning
        # them all at once held some ten arrays of every pair (a worker grew by 440 MB on the
        # meta-evaluation page at 60,000 judgements, issue 46).
        flat = _sampled_flat(n, rate, rng)
        return len(flat), (_flat_pairs(flat[s : s + PAIR_BLOCK], n) for s in range(0, len(flat), PAIR_BLOCK))

    def blocks():
        first = 0
        while first < n - 1:
            last, count = first, 0
            while last < n - 1 and (count == 0 or count + (n - 1 - last) <= PAIR_BLOCK):
                count += n - 1 - last
                last += 1
            rows = np.arange(first, last)
            yield np.repeat(rows, n - 1 - rows), np.concatenate([np.arange(r + 1, n) for r in rows])
            first = last

    return n * (n - 1) // 2, blocks()


def acc23(
    vectors: list[tuple[np.ndarray, np.ndarray]], *, sample_rate: float = 1.0, seed: int = 0
) -> tuple[float, float]:
    """Tie-calibrated pairwise accuracy, averaged over rows; returns (accuracy, epsilon).

    Each pair contributes to its row's (concordant + tied-in-both) count; when
    the threshold reaches the pair's metric difference the pair becomes a metric
    tie, which adds one if the humans tied it (and was not a tie already) and
    removes one if it was concordant. Sorting pairs by metric difference and
    accumulating those changes gives the accuracy at every threshold at once.
    Pairs whose change is zero are not kept: a threshold they alone would add
    has the accuracy of the one before it, so the best (first maximum) is the same.
    """
    diffs, deltas, base = [], [], 0.0
    n_rows = 0
    rng = np.random.default_rng(seed)
    for h, m in vectors:
        count, blocks = _pair_blocks(len(h), sample_rate, rng)
        if count == 0:
            continue
        n_rows += 1
        weight = 1.0 / count
        good = 0  # counted whole, then weighted once: the same sum as all pairs at once
        for i, j in blocks:
            dh = h[i] - h[j]
            dm = m[i] - m[j]
            human_tie = dh == 0
            metric_tie = dm == 0
            concordant = (dh * dm) > 0
            good += int((concordant | (human_tie & metric_tie)).sum())
            # Change when this pair becomes a metric tie.
            change = np.where(human_tie, (~metric_tie).astype(float), -concordant.astype(float)) * weight
            moves = change != 0
            diffs.append(np.abs(dm[moves]))
            deltas.append(change[moves])
        base += good * weight
    if n_rows == 0:
        return float("nan"), 0.0
    if not any(len(d) for d in diffs):  # no pair changes at any threshold
        return float(base / n_rows), 0.0
    d = np.concatenate(diffs)
    del diffs
    c = np.concatenate(deltas)
    del deltas
    order = np.argsort(d, kind="stable")
    d = d[order]
    c = c[order]
    del order
    totals = np.cumsum(c)
    del c
    totals += base
    totals /= n_rows
    # The value at a threshold counts every pair with a difference up to it: the last of equal diffs.
    last = np.r_[d[1:] != d[:-1], True]
    thresholds = np.r_[0.0, d[last]]
    taus = np.r_[base / n_rows, totals[last]]
    if len(thresholds) > 1 and thresholds[1] == 0.0:  # metric ties already at epsilon 0
        thresholds, taus = thresholds[1:], taus[1:]
    best = int(np.nanargmax(taus))
    return float(taus[best]), float(thresholds[best])


def perm_both(
    human: np.ndarray,
    metric1: np.ndarray,
    metric2: np.ndarray,
    method: str,
    average_by: str = "none",
    *,
    k: int = 1000,
    seed: int = 0,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
    corr_fn: Callable[[np.ndarray, np.ndarray], float] | None = None,
) -> dict:
    """PERM-BOTH: p-value that metric2 correlates better than metric1, and the delta.

    `corr_fn(human, metric)` replaces `correlate(..., method, average_by)` (SPA: a whole-matrix
    statistic, as mt-metrics-eval passes `PairwiseConfidenceError` as the correlation)."""
    human = np.atleast_2d(np.asarray(human, dtype=float))
    m1 = np.atleast_2d(np.asarray(metric1, dtype=float))
    m2 = np.atleast_2d(np.asarray(metric2, dtype=float))
    ok = ~np.isnan(human) & ~np.isnan(m1) & ~np.isnan(m2)
    # z-score each metric over the scores used (mt-metrics-eval z-scores the filtered vectors).
    z1, z2 = np.full(m1.shape, np.nan), np.full(m2.shape, np.nan)
    z1[ok] = stats.zscore(m1[ok])
    z2[ok] = stats.zscore(m2[ok])
    h = np.where(ok, human, np.nan)

    flat_ok = ok.ravel()
    hv = h.ravel()[flat_ok]
    hc = hv - hv.mean()
    hn = np.sqrt((hc * hc).sum())

    def corr(m):
        if corr_fn is not None:
            return corr_fn(h, m)
        if method == "pearson" and average_by == "none":
            # Same value as scipy's pearsonr on the flattened pairs, without its per-call overhead.
            mv = m.ravel()[flat_ok]
            mc = mv - mv.mean()
            denom = hn * np.sqrt((mc * mc).sum())
            return float((hc * mc).sum() / denom) if denom else float("nan")
        return correlate(h, m, method, average_by)["value"]

    delta = corr(z2) - corr(z1)
    rng = np.random.default_rng(seed)
    large = 0
    i = 0
    for i in range(1, k + 1):
        w = rng.integers(0, 2, z1.shape).astype(bool)
        a = np.where(w, z1, z2)
        b = np.where(w, z2, z1)
        c1, c2 = corr(a), corr(b)
        if np.nan_to_num(c2) - np.nan_to_num(c1) >= delta:
            large += 1
        if i % block_size == 0:
            p = large / i
            if p < early_min or p > early_max:
                break
    return {"p_value": large / i if i else float("nan"), "delta": float(delta), "resamples": i}


def bootstrap_ci(
    human: np.ndarray,
    metric: np.ndarray,
    method: str,
    average_by: str = "none",
    *,
    reps: int = 200,
    seed: int = 0,
    axis: int = 1,
) -> list[float | None]:
    """95% percentile interval from resampling items (columns) with replacement."""
    human = np.atleast_2d(np.asarray(human, dtype=float))
    metric = np.atleast_2d(np.asarray(metric, dtype=float))
    n = human.shape[axis]
    if reps <= 0 or n < 3:
        return [None, None]
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(reps):
        pick = rng.integers(0, n, n)
        value = correlate(np.take(human, pick, axis=axis), np.take(metric, pick, axis=axis), method, average_by)[
            "value"
        ]
        if np.isfinite(value):
            values.append(value)
    if len(values) < 2:
        return [None, None]
    lo, hi = np.percentile(values, [2.5, 97.5])
    return [float(lo), float(hi)]


# ---- soft pairwise accuracy, pairwise difference Pearson, rank clusters --------------


def complete_columns(*matrices: np.ndarray) -> list[np.ndarray]:
    """The items (columns) scored for every system in every matrix."""
    mats = [np.atleast_2d(np.asarray(m, dtype=float)) for m in matrices]
    ok = np.all([~np.isnan(m).any(axis=0) for m in mats], axis=0)
    # C order: a boolean-mask column selection returns a Fortran-ordered copy (see pairwise_p_values).
    return [np.ascontiguousarray(m[:, ok]) for m in mats]


def permutation_signs(n_segments: int, *, k: int = SPA_PERMUTATIONS, seed: int = SPA_SEED) -> np.ndarray:
    """The +1/-1 swap matrix (k x segments) drawn as mt-metrics-eval's `pce.py` draws it."""
    rng = np.random.default_rng(seed)
    signs = rng.random(size=(k, n_segments), dtype=np.float32)
    np.rint(signs, out=signs, casting="same_kind")
    signs *= 2.0
    signs -= 1.0
    return signs


def pairwise_p_values(seg: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Upper triangle: p-value that system i beats system j (paired permutation over segments).

    The scores are copied into a C-ordered float32 matrix, the one pce.py gets from
    mt-metrics-eval's `_Reshape` of a packed vector: float32 sums and products depend on the
    memory layout (BLAS and numpy's pairwise summation take other paths on a Fortran-ordered
    or strided matrix, such as a boolean-mask column selection returns), and with human means
    that tie exactly (multiples of 1/3) a last-bit difference flips `null >= test`. Copying
    makes the figure the same whatever built the matrix."""
    seg = np.ascontiguousarray(seg, dtype=np.float32)
    signs = np.ascontiguousarray(signs, dtype=np.float32)
    totals = seg.sum(axis=1)
    partial = signs @ seg.T  # permutations x systems
    n = seg.shape[0]
    # Every pair at once, in float32 as pce.py subtracts them.
    null = partial[:, :, None] - partial[:, None, :]
    test = totals[:, None] - totals[None, :]
    counts = (null >= test[None, :, :]).sum(axis=0)
    p = np.full((n, n), np.nan)
    upper = np.triu_indices(n, 1)
    p[upper] = counts[upper] / signs.shape[0]
    return p


def spa(
    human: np.ndarray,
    metric: np.ndarray,
    *,
    k: int = SPA_PERMUTATIONS,
    seed: int = SPA_SEED,
    human_p: np.ndarray | None = None,
) -> dict:
    """Soft pairwise accuracy of a metric against humans, from systems x items matrices."""
    h, m = complete_columns(human, metric)
    if h.shape[0] < 2 or h.shape[1] < 1:
        return {"value": float("nan"), "n": int(h.size), "groups": int(h.shape[1]), "systems": int(h.shape[0])}
    signs = permutation_signs(h.shape[1], k=k, seed=seed)
    hp = pairwise_p_values(h, signs) if human_p is None else human_p
    mp = pairwise_p_values(m, signs)
    upper = np.triu_indices(h.shape[0], 1)
    value = 1.0 - float(np.mean(np.abs(hp - mp)[upper]))
    return {"value": value, "n": int(h.size), "groups": int(h.shape[1]), "systems": int(h.shape[0])}


def pdp(human: np.ndarray, metric: np.ndarray, average_by: str = "none") -> dict:
    """Pairwise difference Pearson over the rows of `_Reshape(..., average_by)`."""
    h = np.atleast_2d(np.asarray(human, dtype=float))
    m = np.atleast_2d(np.asarray(metric, dtype=float))
    if average_by == "none":
        h, m = h.reshape(1, -1), m.reshape(1, -1)
    elif average_by == "item":
        h, m = h.T, m.T
    if h.shape[1] * h.shape[1] * h.shape[0] > 25_000_000:
        raise ValueError("pdp over more than 25 million differences: group by item or system")
    dh = (h[:, None, :] - h[:, :, None]).ravel()
    dm = (m[:, None, :] - m[:, :, None]).ravel()
    ok = ~np.isnan(dh) & ~np.isnan(dm)
    return {"value": pearson(dh[ok], dm[ok]), "n": int(ok.sum()), "groups": int(h.shape[0])}


def assign_ranks(p_values: np.ndarray, threshold: float = 0.05) -> list[int]:
    """Cluster rank of each metric; `p_values[i, j]` (j > i, metrics sorted best first) is the
    p-value that metric i is not better than metric j."""
    n = p_values.shape[0]
    ranks, rank, start = [0] * n, 1, 0
    for i in range(n):
        if np.any(p_values[start:i, i] <= threshold):
            rank += 1
            start = i
        ranks[i] = rank
    return ranks


# ---- acc23 significance by permuting pairs ---------------------------------------


def _pair_outcomes(h: np.ndarray, m: np.ndarray, epsilon: float) -> np.ndarray:
    """Per pair i < j of one row: does the metric get it right under acc23 with this epsilon
    (concordant, or tied in both, a metric tie being |difference| <= epsilon)?"""
    i, j = np.triu_indices(len(h), k=1)
    dh, dm = h[i] - h[j], m[i] - m[j]
    metric_tie = np.abs(dm) <= epsilon
    dm = np.where(metric_tie, 0.0, dm)
    return ((dh * dm) > 0) | ((dh == 0) & metric_tie)


def perm_pairs(
    human: np.ndarray,
    metric1: np.ndarray,
    metric2: np.ndarray,
    average_by: str = "none",
    *,
    epsilon1: float | None = None,
    epsilon2: float | None = None,
    k: int = 1000,
    seed: int = 0,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> dict:
    """acc23 significance by permuting pairs: mt-metrics-eval's `PairwisePermutationSigDiff`
    (variant "acc23"), the `perm_test="pairs"` of its WMT23-25 tasks. Each metric keeps its own
    tie threshold (its optimal epsilon unless given); a resample takes, for every pair of every
    row, the outcome of metric 1 or of metric 2 with probability 1/2 (the other hybrid takes the
    other); p = share of resamples whose acc23 difference (hybrid 2 - hybrid 1) is at least the
    observed one. As there, the early-stopping check at a block boundary runs only on a
    resample that counted. Draws: numpy default_rng(seed), one bit per pair (mt-metrics-eval
    draws an n x n matrix from the unseeded global generator and keeps its upper triangle)."""
    human = np.atleast_2d(np.asarray(human, dtype=float))
    m1 = np.atleast_2d(np.asarray(metric1, dtype=float))
    m2 = np.atleast_2d(np.asarray(metric2, dtype=float))
    both = np.where(np.isnan(m2), np.nan, human)
    v1 = rows(both, m1, average_by)
    v2 = rows(np.where(np.isnan(m1), np.nan, human), m2, average_by)
    if epsilon1 is None:
        epsilon1 = acc23(v1)[1]
    if epsilon2 is None:
        epsilon2 = acc23(v2)[1]
    g1 = [_pair_outcomes(h, m, epsilon1) for h, m in v1]
    g2 = [_pair_outcomes(h, m, epsilon2) for h, m in v2]
    keep = [n for n, g in enumerate(g1) if len(g)]
    g1, g2 = [g1[n] for n in keep], [g2[n] for n in keep]
    if not g1:
        return {
            "p_value": float("nan"),
            "delta": float("nan"),
            "resamples": 0,
            "epsilon1": epsilon1,
            "epsilon2": epsilon2,
        }

    def corr(goods):
        return float(np.mean([g.mean() for g in goods]))

    delta = corr(g2) - corr(g1)
    rng = np.random.default_rng(seed)
    large, i = 0, 0
    for i in range(1, k + 1):
        h1, h2 = [], []
        for a, b in zip(g1, g2):
            w = rng.integers(0, 2, len(a)).astype(bool)
            h1.append(np.where(w, a, b))
            h2.append(np.where(w, b, a))
        if corr(h2) - corr(h1) >= delta:
            large += 1
            if i % block_size == 0:
                p = large / i
                if p < early_min or p > early_max:
                    break
    return {
        "p_value": large / i if i else float("nan"),
        "delta": float(delta),
        "resamples": i,
        "epsilon1": float(epsilon1),
        "epsilon2": float(epsilon2),
    }
