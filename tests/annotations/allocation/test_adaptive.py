"""The pure decision module of adaptive allocation (annotations.allocation.adaptive) and its JSON."""
import random

import pytest

from annotations.allocation.adaptive import AdaptiveParams, Verdict, unit_wanted, verdict
from annotations.allocation.state import params_clean, verdict_from_json, verdict_to_json


def _observations(means: dict, n_items: int, noise: float, seed: int = 0):
    rng = random.Random(seed)
    return [(item, system, mean + rng.gauss(0, noise)) for item in range(n_items) for system, mean in means.items()]


def test_cold_start_keeps_everything_open():
    obs = _observations({"a": 90, "b": 10}, n_items=4, noise=1)
    v = verdict(obs, ["a", "b"], AdaptiveParams(min_per_system=5))
    assert v.cold and not v.stop and v.undecided == {frozenset({"a", "b"})} and not v.decided
    assert unit_wanted(["a"], v) and unit_wanted(["a", "b"], v)


def test_clearly_separated_systems_are_decided_and_close_ones_are_not():
    # a and b far apart from the rest (10 standard deviations of the item noise); c and d the same.
    obs = _observations({"a": 90, "b": 60, "c": 30, "d": 30}, n_items=30, noise=5)
    v = verdict(obs, ["a", "b", "c", "d"], AdaptiveParams(min_per_system=10))
    assert not v.cold
    assert v.ranking[:2] == ("a", "b") and set(v.ranking[2:]) == {"c", "d"}
    assert v.undecided == {frozenset({"c", "d"})}
    assert len(v.decided) == 5
    assert v.clusters[:2] == (("a",), ("b",)) and set(v.clusters[2]) == {"c", "d"}
    # Units: a pairwise unit of a decided pair is not wanted, the undecided pair's is; one-output units
    # of a system in no undecided pair are not wanted.
    assert not unit_wanted(["a", "b"], v) and not unit_wanted(["a", "c"], v)
    assert unit_wanted(["c", "d"], v) and unit_wanted(["a", "c", "d"], v)
    assert not unit_wanted(["a"], v) and unit_wanted(["c"], v)


def test_the_interval_follows_alpha():
    """A paired difference whose t-test (scipy's ttest_rel, the reference) gives 0.001 < p < 0.05:
    decided at alpha 0.05, not at 0.001."""
    from scipy.stats import ttest_rel

    rng = random.Random(1)
    a, b, obs = [], [], []
    for item in range(100):
        base = rng.gauss(50, 10)  # item difficulty, shared by both systems: the comparison is paired
        a.append(base + 0.26 + (1 if item % 2 else -1))
        b.append(base)
        obs += [(item, "a", a[-1]), (item, "b", b[-1])]
    p = ttest_rel(a, b).pvalue
    assert 0.001 < p < 0.05
    assert verdict(obs, ["a", "b"], AdaptiveParams(alpha=0.05)).decided == {frozenset({"a", "b"})}
    assert verdict(obs, ["a", "b"], AdaptiveParams(alpha=0.001)).decided == frozenset()


def test_stability_counts_unchanged_checks_and_stops():
    params = AdaptiveParams(min_per_system=5, stable_checks=2)
    obs = _observations({"a": 60, "b": 59, "c": 58}, n_items=20, noise=10)
    first = verdict(obs, "abc", params)
    assert first.stable == 0 and not first.stop
    second = verdict(obs, "abc", params, previous=first)
    assert second.stable == 1 and not second.stop
    third = verdict(obs, "abc", params, previous=second)
    assert third.stable == 2 and third.stop and "unchanged" in third.reason
    # A changed ranking starts the count again.
    moved = Verdict(tuple(reversed(third.ranking)), third.clusters, third.decided, third.undecided, False, 5,
                    False, "")
    assert verdict(obs, "abc", params, previous=moved).stable == 0


def test_every_pair_decided_stops_at_once():
    obs = _observations({"a": 90, "b": 10}, n_items=20, noise=1)
    v = verdict(obs, ["a", "b"], AdaptiveParams(min_per_system=5))
    assert v.stop and v.reason == "every system pair is decided"


def test_verdict_round_trips_through_json_and_params_are_checked():
    v = verdict(_observations({"a": 90, "b": 60, "c": 30, "d": 30}, 30, 5), "abcd", AdaptiveParams())
    assert verdict_from_json(verdict_to_json(v)) == v
    assert params_clean({"alpha": 0.1}) == {"min_per_system": 10, "alpha": 0.1, "stable_checks": 3,
                                            "check_every": 20}
    for bad, message in [({"alpha": 0.9}, "alpha must be between"), ({"check_every": 2.5}, "whole number"),
                         ({"speed": 1}, "unknown adaptive parameter"), ({"min_per_system": True}, "whole number")]:
        with pytest.raises(ValueError, match=message):
            params_clean(bad)
