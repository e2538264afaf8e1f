"""Correlations equal scipy; grouping, acc23 and PERM-BOTH follow mt-metrics-eval's definitions.

mt-metrics-eval (google-research/mt-metrics-eval, stats.py): `_Reshape` packs
scores as systems x items; average_by "sys" correlates rows, "item" columns,
"none" the flattened matrix; rows with fewer than two non-missing gold scores
are skipped and NaN correlations (constant vectors) dropped before averaging.
`KendallWithTiesOpt(variant="acc23", sample_rate=1.0)` with tau_optimization:
candidate thresholds 0 and every |metric difference|, accuracy per row
(con + ties in both) / pairs, averaged over rows, first maximum wins.
`PermutationSigDiff`: z-score both metrics, swap each score with p=1/2, p =
share of resamples with corr(m2') - corr(m1') >= observed delta.
"""

import itertools

import numpy as np
import pytest
from scipy import stats

from annotations.analysis import correlation as co


def _data(seed, systems=5, items=12):
    rng = np.random.default_rng(seed)
    human = np.round(rng.normal(size=(systems, items)), 1)
    metric = human + rng.normal(scale=0.8, size=human.shape)
    human[rng.random(human.shape) < 0.15] = np.nan
    return human, metric


@pytest.mark.parametrize("seed", range(4))
def test_flat_correlations_equal_scipy(seed):
    h, m = _data(seed)
    ok = ~np.isnan(h)
    assert co.correlate(h, m, "pearson")["value"] == pytest.approx(stats.pearsonr(h[ok], m[ok])[0], abs=1e-12)
    assert co.correlate(h, m, "spearman")["value"] == pytest.approx(stats.spearmanr(h[ok], m[ok])[0], abs=1e-12)
    assert co.correlate(h, m, "kendall")["value"] == pytest.approx(
        stats.kendalltau(h[ok], m[ok], variant="b")[0], abs=1e-12
    )
    assert co.correlate(h, m, "pearson")["n"] == ok.sum()


@pytest.mark.parametrize(
    "method,fn", [("pearson", stats.pearsonr), ("kendall", stats.kendalltau), ("spearman", stats.spearmanr)]
)
@pytest.mark.parametrize("average_by", ["sys", "item"])
def test_grouped_correlation_follows_average_by(method, fn, average_by):
    h, m = _data(1)
    h[2, :] = 1.0  # a constant system row: NaN for Pearson/Spearman, dropped from the average
    rows = zip(h, m) if average_by == "sys" else zip(h.T, m.T)
    values = []
    for hr, mr in rows:
        ok = ~np.isnan(hr)
        if ok.sum() < 2:
            continue
        if method != "kendall" and (np.all(hr[ok] == hr[ok][0]) or np.all(mr[ok] == mr[ok][0])):
            continue
        v = fn(hr[ok], mr[ok])[0]
        if not np.isnan(v):
            values.append(v)
    assert co.correlate(h, m, method, average_by)["value"] == pytest.approx(np.mean(values), abs=1e-12)


def test_acc23_by_hand():
    # Pairs: (0,1) human tie, metric diff 0.2; (0,2), (1,2) concordant, diffs 2.0 and 1.8.
    # eps 0: 2/3; eps 0.2: the human tie becomes a tie in both -> 3/3; eps >= 1.8 loses concordant pairs.
    result = co.correlate(np.array([1.0, 1.0, 2.0]), np.array([1.0, 1.2, 3.0]), "acc23")
    assert result["value"] == pytest.approx(1.0)
    assert result["epsilon"] == pytest.approx(0.2)


def _acc23_definition(h, m, average_by):
    vectors = co.rows(h, m, average_by)
    thresholds = [0.0] + sorted(
        {abs(b[i] - b[j]) for _, b in vectors for i, j in itertools.combinations(range(len(b)), 2)}
    )
    best = (-1.0, None)
    for eps in thresholds:
        accs = []
        for a, b in vectors:
            good = total = 0
            for i, j in itertools.combinations(range(len(a)), 2):
                dh, dm = a[i] - a[j], b[i] - b[j]
                tie = abs(dm) <= eps
                good += (dh == 0 and tie) or (not tie and dh * dm > 0)
                total += 1
            accs.append(good / total)
        value = float(np.mean(accs))
        if value > best[0] + 1e-12:
            best = (value, eps)
    return best


@pytest.mark.parametrize("average_by", ["none", "sys", "item"])
@pytest.mark.parametrize("seed", range(3))
def test_acc23_equals_tie_optimised_definition(average_by, seed):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 4, (4, 8)).astype(float)  # many human ties
    m = np.round(rng.normal(size=(4, 8)), 1)  # some metric ties
    h[0, 3] = np.nan
    value, eps = _acc23_definition(h, m, average_by)
    result = co.correlate(h, m, "acc23", average_by)
    assert result["value"] == pytest.approx(value, abs=1e-12)
    assert result["epsilon"] == pytest.approx(eps, abs=1e-12)


def test_perm_both_identical_metrics_give_p_one():
    h, m = _data(2)
    result = co.perm_both(h, m, m.copy(), "pearson", k=200)
    assert result["delta"] == pytest.approx(0.0)
    assert result["p_value"] == 1.0


@pytest.mark.parametrize("method", ["pearson", "kendall"])
def test_perm_both_matches_exact_permutation_distribution(method):
    rng = np.random.default_rng(5)
    h = rng.normal(size=(1, 10))
    m1 = h + rng.normal(scale=1.5, size=h.shape)
    m2 = h + rng.normal(scale=0.5, size=h.shape)
    z1, z2 = stats.zscore(m1.ravel()), stats.zscore(m2.ravel())
    corr = {
        "pearson": lambda a: stats.pearsonr(h.ravel(), a)[0],
        "kendall": lambda a: stats.kendalltau(h.ravel(), a)[0],
    }[method]
    delta = corr(z2) - corr(z1)
    hits = 0
    for mask in itertools.product([False, True], repeat=10):
        w = np.array(mask)
        hits += corr(np.where(w, z2, z1)) - corr(np.where(w, z1, z2)) >= delta - 1e-12
    exact = hits / 2**10
    result = co.perm_both(h, m1, m2, method, k=2000, block_size=10_000, seed=1)
    assert result["delta"] == pytest.approx(delta, abs=1e-12)
    assert result["p_value"] == pytest.approx(exact, abs=0.03)


def test_perm_both_better_metric_is_significant():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(1, 300))
    worse = h + rng.normal(scale=3.0, size=h.shape)
    better = h + rng.normal(scale=0.3, size=h.shape)
    assert co.perm_both(h, worse, better, "pearson")["p_value"] < 0.02
    assert co.perm_both(h, better, worse, "pearson")["p_value"] > 0.5


def test_bootstrap_interval_is_seeded():
    h, m = _data(3)
    a = co.bootstrap_ci(h, m, "pearson", reps=100, seed=2)
    assert a == co.bootstrap_ci(h, m, "pearson", reps=100, seed=2)
    assert a[0] < co.correlate(h, m, "pearson")["value"] < a[1]


def test_acc23_samples_pairs_beyond_the_limit(monkeypatch):
    rng = np.random.default_rng(7)
    h = rng.integers(0, 5, (1, 400)).astype(float)
    m = h + rng.normal(scale=1.0, size=h.shape)
    exact = co.correlate(h, m, "acc23")
    assert "sample_rate" not in exact
    monkeypatch.setattr(co, "MAX_PAIRS", 20_000)  # 79,800 pairs -> about a quarter sampled
    sampled = co.correlate(h, m, "acc23")
    assert sampled["sample_rate"] == pytest.approx(20_000 / 79_800)
    assert sampled["value"] == pytest.approx(exact["value"], abs=0.02)
