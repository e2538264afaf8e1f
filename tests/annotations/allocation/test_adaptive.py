"""The adaptive allocation's verdict (annotations/allocation/adaptive.py): pure, no database.

Expected values come from independent computations: scipy's Mann-Whitney U test and the
workbench's own `clusters` (annotations/analysis/systems.py), which the verdict must agree with
so that a campaign stopped early reports what the full analysis reports.
"""

import math

import numpy as np
import pytest
from scipy import stats

from annotations.allocation.adaptive import (
    AdaptiveParams,
    Verdict,
    mann_whitney_z,
    predictive_power,
    unit_wanted,
    verdict,
)
from annotations.analysis import systems as sy


def ratings(means: dict[str, float], items: int, *, sd: float = 10.0, seed: int = 0, annotators: int = 1):
    """(item, system, value) with each system's outputs around its mean."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(items):
        for s, m in means.items():
            for _ in range(annotators):
                out.append((f"i{i}", s, float(np.round(rng.normal(m, sd)))))
    return out


@pytest.mark.parametrize("n1,n2,ties", [(30, 40, True), (12, 9, False), (5, 7, False), (6, 20, True), (200, 150, True)])
def test_mann_whitney_as_scipy(n1, n2, ties):
    rng = np.random.default_rng(n1 * 100 + n2)
    x = rng.normal(0.3, 1, n1)
    y = rng.normal(0, 1, n2)
    if ties:
        x, y = np.round(x), np.round(y)
    z, p = mann_whitney_z(x, y)
    assert p == pytest.approx(stats.mannwhitneyu(x, y, alternative="greater").pvalue, rel=1e-9)
    # Two-sided p from the same z (asymptotic: no continuity subtlety at this size).
    if n1 > 8 and n2 > 8:
        assert stats.norm.sf(z) == pytest.approx(p)


def test_predictive_power_limits():
    # At the end of the campaign (t = 1) the final test is the current one.
    assert predictive_power(2.0, 1.0, 0.05) == 1.0 and predictive_power(1.0, 1.0, 0.05) == 0.0
    # Half way with no effect: the final test is significant with probability Phi(-z_a), 5 %.
    assert predictive_power(0.0, 0.5, 0.05) == pytest.approx(0.05, abs=1e-9)
    # Formula of Spiegelhalter et al. (1986) by hand: Phi((Z - z_a sqrt(t)) / sqrt(1 - t)).
    z_a = 1.6448536269514722
    assert predictive_power(2.5, 0.3, 0.05) == pytest.approx(
        0.5 * math.erfc(-((2.5 - z_a * math.sqrt(0.3)) / math.sqrt(0.7)) / math.sqrt(2))
    )


def test_cold_start_until_every_system_has_its_outputs():
    params = AdaptiveParams(min_per_system=10)
    obs = ratings({"a": 80, "b": 20}, 9)
    v = verdict(obs, ["a", "b", "c"], params)
    assert v.cold and not v.stop and "3 of 3 systems" in v.reason
    assert not v.decided and v.undecided == {frozenset("ab"), frozenset("ac"), frozenset("bc")}
    # Cold: every unit is wanted, whichever systems it shows.
    assert unit_wanted(["a", "b"], v) and unit_wanted(["c"], v)
    v = verdict(ratings({"a": 80, "b": 20, "c": 50}, 10), ["a", "b", "c"], params)
    assert not v.cold


def test_clear_cut_pairs_decided_and_clusters_as_the_workbench():
    means = {"best": 90, "good": 60, "mid1": 40, "bad": 10}
    obs = ratings(means, 40, sd=8)
    # mid2: the very scores of mid1 on other items, a tie by construction.
    mid1 = [(i, v) for i, s, v in obs if s == "mid1"]
    obs += [(mid1[n - 1][0], "mid2", mid1[n][1]) for n in range(len(mid1))]
    means["mid2"] = 40
    v = verdict(obs, list(means), AdaptiveParams())
    samples = {s: np.array([val for _i, sys_, val in obs if sys_ == s]) for s in means}
    rows = sy.clusters(samples)
    assert v.ranking == tuple(r["system"] for r in rows)
    clusters = {}
    for r in rows:
        clusters.setdefault(r["cluster"], []).append(r["system"])
    assert v.clusters == tuple(tuple(c) for _k, c in sorted(clusters.items()))
    assert v.clusters[0] == ("best",) and set(v.clusters[2]) == {"mid1", "mid2"} and v.clusters[-1] == ("bad",)
    assert frozenset(("best", "bad")) in v.decided and frozenset(("good", "mid1")) in v.decided
    # Without planned sizes the verdict cannot tell that mid1-mid2 will never separate.
    assert v.undecided == {frozenset(("mid1", "mid2"))}
    assert unit_wanted(["mid1", "mid2", "bad"], v)
    assert not unit_wanted(["best", "good", "bad"], v)  # every pair inside is decided
    assert not v.stop


def test_ties_stay_undecided_while_much_is_left_and_out_of_reach_near_the_end():
    obs = ratings({"x": 50, "y": 50}, 30, sd=15, seed=3)
    early = verdict(obs, ["x", "y"], AdaptiveParams(), planned={"x": 60, "y": 60})
    assert early.undecided == {frozenset("xy")} and not early.decided
    assert len(early.clusters) == 1
    # Same data, but it is nearly all the campaign will ever have: the pair cannot become
    # significant any more, so it is decided (no more units for it), still in one cluster.
    late = verdict(obs, ["x", "y"], AdaptiveParams(), planned={"x": 31, "y": 31})
    assert late.decided == {frozenset("xy")} and not late.undecided and len(late.clusters) == 1
    assert late.out_of_reach == {frozenset("xy")}  # the pair table says which pairs are beyond reach
    assert unit_wanted(["x", "y"], late)  # confirming: the stopping rule still counts checks


def test_stopping_rule_after_stable_checks():
    params = AdaptiveParams(stable_checks=3)
    obs = ratings({"a": 90, "b": 50, "c": 10}, 20, sd=5)
    v = verdict(obs, "abc", params)
    assert not v.undecided and v.stable == 0 and not v.stop
    for expected in (1, 2):
        v = verdict(obs, "abc", params, previous=v)
        assert v.stable == expected and not v.stop and unit_wanted("ab", v)
    v = verdict(obs, "abc", params, previous=v)
    assert v.stable == 3 and v.stop and v.reason.startswith("stopped")
    assert not unit_wanted("abc", v)
    # A change of the conclusions restarts the count.
    changed = verdict(ratings({"a": 90, "b": 89, "c": 10}, 20, sd=5), "abc", params, previous=v)
    assert changed.stable == 0 and not changed.stop


def test_undecided_pair_keeps_the_campaign_going():
    params = AdaptiveParams(stable_checks=1)
    obs = ratings({"a": 50, "b": 50.5, "c": 5}, 15, sd=10, seed=1)
    v = verdict(obs, "abc", params, planned={"a": 500, "b": 500, "c": 500})
    v = verdict(obs, "abc", params, previous=v, planned={"a": 500, "b": 500, "c": 500})
    assert v.stable >= 1 and v.undecided == {frozenset("ab")} and not v.stop
    assert unit_wanted(["a", "b"], v) and unit_wanted(["a"], v) and not unit_wanted(["c"], v)
    assert not unit_wanted(["a", "c", "d"], v)


def test_pairwise_and_best_worst_values():
    # Pairwise: 1 / 0 per side, a tie 0.5 each: a output's mean value is its win rate.
    obs = []
    for i in range(12):
        obs += [(f"i{i}", "a", 1.0), (f"i{i}", "b", 0.0)]
    obs += [("i0", "a", 0.5), ("i0", "b", 0.5)]
    v = verdict(obs, ["a", "b"], AdaptiveParams())
    assert v.ranking == ("a", "b") and v.decided == {frozenset("ab")} and len(v.clusters) == 2
    assert isinstance(v, Verdict)
