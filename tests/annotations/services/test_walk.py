"""The annotators' walks: a bijection on the units' positions for every campaign
size, a different order for every seed, with no drift between step and position."""

import numpy as np
import pytest
from scipy.stats import chisquare, spearmanr

from annotations.services.walk import walk_position, walk_positions


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12, 255, 256, 257, 4096, 4097, 10007])
def test_a_walk_visits_every_position_exactly_once(n):
    for seed in (0, 1, -5, 2**62 - 1):
        assert sorted(walk_position(seed, n, step) for step in range(n)) == list(range(n))


def test_steps_outside_the_campaign_are_refused_and_windows_stop_at_its_end():
    with pytest.raises(ValueError):
        walk_position(1, 10, 10)
    with pytest.raises(ValueError):
        walk_position(1, 10, -1)
    assert walk_positions(1, 10, 8, 5) == [(8, walk_position(1, 10, 8)), (9, walk_position(1, 10, 9))]
    assert walk_positions(1, 10, 10, 5) == [] and walk_positions(1, 0, 0, 5) == []


def _looks_shuffled(walk, n: int) -> bool:
    """Over 200 seeds: the rank correlation between step and position centres on 0
    with the spread of a uniform random permutation (1 / sqrt(n - 1)), two seeds'
    orders are uncorrelated the same way, and the first unit is uniform over the
    positions (chi-square, or over tenths of the positions for large n)."""
    seeds = range(1000, 1200)
    walks = {seed: [walk(seed, n, step) for step in range(n)] for seed in seeds}
    drift = [spearmanr(range(n), walks[seed])[0] for seed in seeds]
    pairs = [spearmanr(walks[seed], walks[seed + 1])[0] for seed in list(seeds)[:-1]]
    sd = 1 / np.sqrt(n - 1)
    for rhos in (drift, pairs):
        if not (abs(np.mean(rhos)) < 4 * sd / np.sqrt(len(rhos)) and 0.8 * sd < np.std(rhos) < 1.2 * sd):
            return False
    first = [walk(seed, n, 0) for seed in range(3000)]
    bins = np.bincount(first, minlength=n) if n <= 300 else np.bincount(np.array(first) * 10 // n, minlength=10)
    return chisquare(bins).pvalue > 0.001


@pytest.mark.parametrize("n", [12, 300, 4000])
def test_orders_look_like_independent_shuffles(n):
    assert _looks_shuffled(walk_position, n)


def test_a_rotation_of_one_shuffle_fails_the_same_checks():
    """The checks can fail: every annotator walking one fixed order from a different
    start (a rotation) gives correlated orders."""
    n = 300
    shuffled = np.random.default_rng(0).permutation(n)
    assert not _looks_shuffled(lambda seed, n, step: int(shuffled[(step + seed) % n]), n)
