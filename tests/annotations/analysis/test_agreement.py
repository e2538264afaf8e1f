"""Agreement equals the reference packages (krippendorff, statsmodels) on random data with missing values."""

import itertools

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

from annotations.analysis import agreement as ag


def _random(seed, annotators=7, units=60, levels=5, missing=0.35):
    rng = np.random.default_rng(seed)
    data = rng.integers(1, levels + 1, (annotators, units)).astype(float)
    # Correlated raters, so alpha is not just noise around 0.
    truth = rng.integers(1, levels + 1, units)
    agree = rng.random((annotators, units)) < 0.5
    data[agree] = np.broadcast_to(truth, data.shape)[agree]
    data[rng.random(data.shape) < missing] = np.nan
    return data


def _table(data):
    return ag.Table.from_triples(
        (u, a, data[a, u]) for a in range(data.shape[0]) for u in range(data.shape[1]) if not np.isnan(data[a, u])
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_equals_krippendorff_package(seed, level):
    data = _random(seed)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert ag.krippendorff_alpha(ag.value_counts(_table(data)), level) == pytest.approx(expected, abs=1e-10)


def test_alpha_on_continuous_scores_with_many_values():
    rng = np.random.default_rng(3)
    data = np.round(rng.normal(50, 20, (5, 80)) + rng.normal(0, 15, 80), 1)
    data[rng.random(data.shape) < 0.4] = np.nan
    for level in ("interval", "ordinal"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert ag.krippendorff_alpha(ag.value_counts(_table(data)), level) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_fleiss_kappa_equals_statsmodels(seed):
    data = _random(seed, missing=0.0)
    expected = fleiss_kappa(aggregate_raters(data.T.astype(int))[0])
    counts = ag.value_counts(_table(data))
    assert ag.fleiss_kappa(ag.fleiss_table(counts)) == pytest.approx(expected, abs=1e-12)


def test_fleiss_kappa_uses_the_units_with_the_modal_number_of_ratings():
    data = _random(1)
    counts = ag.value_counts(_table(data))
    n_u = (~np.isnan(data)).sum(axis=0)
    modal = np.bincount(n_u[n_u >= 2]).argmax()
    rows = [u for u in range(data.shape[1]) if n_u[u] == modal]
    table = np.array([[np.sum(data[:, u] == v) for v in counts.domain] for u in rows])
    assert ag.fleiss_kappa(ag.fleiss_table(counts)) == pytest.approx(fleiss_kappa(table), abs=1e-12)


def test_cohen_kappa_per_pair_equals_statsmodels():
    data = _random(2, annotators=3)
    table = _table(data)
    result = ag.cohen_kappas(table, {0: "a", 1: "b", 2: "c"})
    for (i, x), (j, y) in itertools.combinations(enumerate("abc"), 2):
        both = ~np.isnan(data[i]) & ~np.isnan(data[j])
        cats = sorted(set(data[i][both]) | set(data[j][both]))
        ct = np.array([[np.sum((data[i][both] == p) & (data[j][both] == q)) for q in cats] for p in cats])
        assert result[f"{x}|{y}"]["kappa"] == pytest.approx(cohens_kappa(ct).kappa, abs=1e-6)
        assert result[f"{x}|{y}"]["n"] == both.sum()


def test_percent_agreement_by_hand():
    # unit 0: 1,1,2 -> 1 agreeing pair of 3; unit 1: 3,3 -> 1 of 1; unit 2: one rating -> not pairable.
    table = ag.Table.from_triples([(0, "a", 1), (0, "b", 1), (0, "c", 2), (1, "a", 3), (1, "b", 3), (2, "a", 1)])
    assert ag.percent_agreement(ag.value_counts(table)) == pytest.approx((1 / 3 + 1) / 2)


def test_bootstrap_interval_is_seeded_and_covers_the_estimate():
    table = _table(_random(4, units=120))
    a = ag.agreement_figures(table, bootstrap=100, seed=7)
    b = ag.agreement_figures(table, bootstrap=100, seed=7)
    assert a == b
    lo, hi = a["ci95"]["krippendorff_alpha_interval"]
    assert lo < a["krippendorff_alpha"]["interval"] < hi
    lo, hi = a["ci95"]["fleiss_kappa"]
    assert lo < a["fleiss_kappa"] < hi


def test_bootstrap_weights_equal_repeating_units():
    # A resample with multiplicity weights must equal alpha on the units physically repeated.
    data = _random(5, units=30, missing=0.2)
    counts = ag.value_counts(_table(data))
    rng = np.random.default_rng(0)
    pick = rng.integers(0, counts.n_units, counts.n_units)
    weights = np.bincount(pick, minlength=counts.n_units).astype(float)
    repeated = ag.Counts(counts.matrix[pick], counts.domain)
    for level in ag.LEVELS:
        got = ag.alpha_from_coincidences(ag._coincidences(counts.matrix, weights), counts.domain, level)
        assert got == pytest.approx(ag.krippendorff_alpha(repeated, level), abs=1e-10)


def test_fast_bootstrap_equals_resampling_units_one_by_one():
    data = _random(6, units=40, missing=0.3)
    counts = ag.value_counts(_table(data))
    fl = ag.fleiss_table(counts)
    fast = ag.bootstrap_intervals(counts, fl, reps=30, seed=3)
    # The same resamples, recomputed from each resample's own units.
    rng = np.random.default_rng(3)
    n_u = np.asarray(counts.matrix.sum(axis=1)).ravel().astype(int)
    modal_rows = np.flatnonzero(n_u == np.bincount(n_u).argmax())
    samples = {f"krippendorff_alpha_{lv}": [] for lv in ag.LEVELS} | {"fleiss_kappa": [], "percent_agreement": []}
    for _ in range(30):
        pick = rng.integers(0, counts.n_units, counts.n_units)
        sub = ag.Counts(counts.matrix[pick], counts.domain)
        for lv in ag.LEVELS:
            samples[f"krippendorff_alpha_{lv}"].append(ag.krippendorff_alpha(sub, lv))
        samples["percent_agreement"].append(ag.percent_agreement(sub))
        fpick = [k for k in pick if k in set(modal_rows)]
        samples["fleiss_kappa"].append(fleiss_kappa(counts.matrix[fpick].toarray()))
    for key, values in samples.items():
        assert fast[key] == pytest.approx(list(np.percentile(values, [2.5, 97.5])), abs=1e-6), key
