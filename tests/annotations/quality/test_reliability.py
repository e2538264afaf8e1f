"""Reliability figures as pure functions, against scipy and hand-checkable cases."""

import random

import numpy as np
import pytest
from scipy import stats

from annotations.protocols.stats import degraded_passed
from annotations.quality.reliability import (
    DegradedPair,
    Figures,
    agreement_with_others,
    degraded_test,
    mann_whitney_p,
    self_consistency,
    straight_lining,
    time_figures,
)


@pytest.mark.parametrize("seed", range(8))
def test_mann_whitney_equals_scipy_one_sided(seed):
    rng = random.Random(seed)
    n, m = rng.randint(1, 30), rng.randint(1, 30)
    degraded = [rng.choice([1, 2, 3, 4, 5]) for _ in range(n)]  # with ties
    original = [rng.choice([2, 3, 4, 5]) for _ in range(m)]
    expected = stats.mannwhitneyu(degraded, original, alternative="less").pvalue
    assert mann_whitney_p(degraded, original) == pytest.approx(expected, rel=1e-12)


def test_mann_whitney_needs_both_sides():
    assert mann_whitney_p([], [1.0]) is None
    assert mann_whitney_p([1.0], []) is None


@pytest.mark.parametrize("seed", range(5))
def test_degraded_test_single_criterion_equals_scipy_on_raw_scores(seed):
    # z-scoring one annotator's scores keeps their ranks, so the p-value is scipy's on the raw scores.
    rng = np.random.default_rng(seed)
    originals = rng.uniform(40, 100, 12).round()
    damaged = (originals - rng.uniform(-10, 40, 12)).clip(0, 100).round()
    pairs = [DegradedPair("fluency", float(d), float(o)) for d, o in zip(damaged, originals)]
    population = list(originals) + list(damaged) + list(rng.uniform(0, 100, 30).round())
    expected = stats.mannwhitneyu(damaged, originals, alternative="less").pvalue
    assert degraded_test(pairs, {"fluency": population}) == pytest.approx(expected, rel=1e-12)


def test_degraded_test_pools_criteria_after_z_scoring_each():
    rng = np.random.default_rng(7)
    pairs, populations, deg_z, orig_z = [], {}, [], []
    for criterion, (low, high) in {"fluency": (1, 5), "adequacy": (0, 100)}.items():
        population = rng.integers(low, high + 1, 25).astype(float)
        d, o = population[:8], population[8:16]
        pairs += [DegradedPair(criterion, float(a), float(b)) for a, b in zip(d, o)]
        populations[criterion] = list(population)
        mean, sd = population.mean(), population.std()
        deg_z += list((d - mean) / sd)
        orig_z += list((o - mean) / sd)
    expected = stats.mannwhitneyu(deg_z, orig_z, alternative="less").pvalue
    assert degraded_test(pairs, populations) == pytest.approx(expected, rel=1e-9)


def test_degraded_passes_when_lower_or_both_at_the_floor():
    assert degraded_passed(2, 3)
    assert not degraded_passed(3, 3)
    assert not degraded_passed(4, 3)
    assert degraded_passed(1, 1, floor=1)
    assert not degraded_passed(2, 2, floor=1)


def test_self_consistency():
    assert self_consistency([(50, 50), (80, 80)], scale=(0, 100)) == 1.0
    assert self_consistency([(0, 100)], scale=(0, 100)) == 0.0
    assert self_consistency([(3, 4), (5, 5)], scale=(1, 5)) == pytest.approx(1 - 0.5 / 4)
    assert self_consistency([("a", "a"), ("a", "b")], categorical=True) == 0.5
    assert self_consistency([(100, 50), (80, 80)]) == pytest.approx(0.75)  # unbounded: min/max ratio
    assert self_consistency([]) is None


def test_time_figures():
    assert time_figures([3000, None, 1000, 8000]) == (3.0, 1.0)
    assert time_figures([None]) == (None, None)


def test_agreement_with_others_is_spearman_with_the_others_mean():
    mine = {1: 10, 2: 20, 3: 30, 4: 40, 5: 35}
    others = {1: [1, 3], 2: [4, 4], 3: [5, 7], 4: [9, 9], 5: [8, 8], 6: [1]}
    expected = stats.spearmanr([10, 20, 30, 40, 35], [2, 4, 6, 9, 8]).statistic
    assert agreement_with_others(mine, others) == pytest.approx(expected)
    assert agreement_with_others({1: 5, 2: 6}, {1: [1], 2: [2]}) is None  # too few shared units
    assert agreement_with_others({1: 5, 2: 5, 3: 5}, {1: [1], 2: [2], 3: [3]}) is None  # no variation


def test_agreement_with_others_on_choices_is_agreement_with_the_majority():
    mine = {1: "a", 2: "b", 3: "tie", 4: "a", 5: "b"}
    others = {1: ["a", "a", "b"], 2: ["a", "a"], 3: ["tie"], 4: ["a", "b"], 5: ["b"]}  # unit 4: others tied
    assert agreement_with_others(mine, others, categorical=True) == pytest.approx(3 / 4)


def test_straight_lining():
    assert straight_lining([5] * 10) is True
    assert straight_lining([5] * 9 + [4]) is True
    assert straight_lining([5] * 8 + [4, 3]) is False
    assert straight_lining([5] * 9) is None  # too few answers to tell


def test_controls_passed_pools_degraded_and_gold():
    figures = Figures(annotator="w", degraded_judged=4, degraded_passed=3, gold_judged=1, gold_passed=0)
    assert figures.controls_passed == pytest.approx(3 / 5)
    assert Figures(annotator="w").controls_passed is None
