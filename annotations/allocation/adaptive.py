"""Adaptive allocation's decisions: which system pairs are still undecided, and when to stop.

Pure Python and numpy (no Django): the engine feeds it the campaign's judgements as
`(item, system, value)` observations and stores what it answers (`annotations.allocation.services`).

Method. Systems are compared by their mean value; the uncertainty of a difference between two systems
is a bootstrap over items (items resampled with replacement, every judgement of a resampled item
kept, as WMT's and mt-metrics-eval's item-level bootstraps do). A pair is *decided* when the
(1 - alpha) percentile interval of its mean difference excludes 0. Judgements then go only to units
holding an undecided pair: the pairs whose order is least certain get the next annotations, the idea
behind active evaluation of generation systems with dueling bandits (Mohankumar & Khapra 2022,
"Active Evaluation: Efficient NLG Evaluation with Few Pairwise Comparisons", ACL), and spending
fewer items where the system ranking is already settled (Zouhar et al. 2025, subset2evaluate,
"How to Select Datapoints for Efficient Human Evaluation of NLG Models?"). The campaign stops when the
ranking and its significance clusters stayed the same for `stable_checks` consecutive checks, or
every pair is decided.

No correction for multiple comparisons: a pair declared decided early only stops receiving new
units; its judgements so far stay in the data and every analysis recomputes its own statistics.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterable

import numpy as np

# Bootstrap resamples per check and their seed: fixed, so a verdict is reproducible from the judgements.
RESAMPLES = 1000
SEED = 20250


@dataclass(frozen=True)
class AdaptiveParams:
    min_per_system: int = 10      # cold start: every system in at least this many judged units
    alpha: float = 0.05           # significance level for "decided"
    stable_checks: int = 3        # stop after the ranking and clusters stayed the same this many checks
    check_every: int = 20         # judgements between two checks


@dataclass(frozen=True)
class Verdict:
    ranking: tuple[str, ...]                 # systems, best first
    clusters: tuple[tuple[str, ...], ...]    # significance clusters, best first
    decided: frozenset[frozenset[str]]       # system pairs whose order is settled
    undecided: frozenset[frozenset[str]]
    cold: bool                               # cold start: everything open
    stable: int                              # consecutive checks with the same ranking and clusters
    stop: bool                               # stopping rule met
    reason: str                              # human readable


def _pairs(systems) -> frozenset[frozenset[str]]:
    return frozenset(frozenset(p) for p in itertools.combinations(sorted(systems), 2))


def verdict(observations: Iterable, systems, params: AdaptiveParams, *, previous: Verdict | None = None) -> Verdict:
    """The verdict on `observations` ((item, system, value), higher = better) over `systems`."""
    systems = sorted({str(s) for s in systems})
    index = {s: i for i, s in enumerate(systems)}
    items: dict = {}
    sums, counts = [], []
    for item, system, value in observations:
        system = str(system)
        if system not in index:
            continue
        row = items.get(item)
        if row is None:
            row = items[item] = len(sums)
            sums.append([0.0] * len(systems))
            counts.append([0] * len(systems))
        sums[row][index[system]] += float(value)
        counts[row][index[system]] += 1
    all_pairs = _pairs(systems)
    S = np.array(sums, dtype=float).reshape(len(sums), len(systems))
    C = np.array(counts, dtype=float).reshape(len(counts), len(systems))
    judged_items = (C > 0).sum(axis=0) if len(systems) else np.zeros(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = S.sum(axis=0) / C.sum(axis=0)
    order = sorted(systems, key=lambda s: (-(means[index[s]] if np.isfinite(means[index[s]]) else -np.inf), s))
    if len(systems) < 2:
        return Verdict(tuple(order), (tuple(order),) if order else (), all_pairs, frozenset(), False, 0, True,
                       "fewer than two systems: nothing to decide")
    short = [s for s in systems if judged_items[index[s]] < params.min_per_system]
    if short:
        return Verdict(tuple(order), (tuple(order),), frozenset(), all_pairs, True, 0, False,
                       f"cold start: {len(short)} of {len(systems)} systems in fewer than "
                       f"{params.min_per_system} judged units")

    rng = np.random.default_rng(SEED)
    n = S.shape[0]
    weights = rng.multinomial(n, [1.0 / n] * n, size=RESAMPLES).astype(float)  # resample items
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (weights @ S) / (weights @ C)  # resamples x systems
    low_q, high_q = 100 * params.alpha / 2, 100 * (1 - params.alpha / 2)
    decided = set()
    for a, b in itertools.combinations(systems, 2):
        diff = boot[:, index[a]] - boot[:, index[b]]
        diff = diff[np.isfinite(diff)]
        if len(diff) == 0:
            continue
        low, high = np.percentile(diff, [low_q, high_q])
        if low > 0 or high < 0:
            decided.add(frozenset((a, b)))
    decided = frozenset(decided)
    # Clusters, best first: a system opens a new cluster when its order against the best system of the
    # current cluster is decided.
    clusters: list[list[str]] = []
    for s in order:
        if clusters and frozenset((clusters[-1][0], s)) not in decided:
            clusters[-1].append(s)
        else:
            clusters.append([s])
    ranking, cluster_tuple = tuple(order), tuple(tuple(c) for c in clusters)
    stable = 0
    if previous is not None and not previous.cold and previous.ranking == ranking \
            and previous.clusters == cluster_tuple:
        stable = previous.stable + 1
    undecided = all_pairs - decided
    if not undecided:
        stop, reason = True, "every system pair is decided"
    elif stable >= params.stable_checks:
        stop, reason = True, (f"ranking and significance clusters unchanged for {stable} consecutive checks "
                              f"({len(decided)} of {len(all_pairs)} pairs decided)")
    else:
        stop, reason = False, f"{len(decided)} of {len(all_pairs)} pairs decided, stable for {stable} checks"
    return Verdict(ranking, cluster_tuple, decided, undecided, False, stable, stop, reason)


def unit_wanted(unit_systems, v: Verdict) -> bool:
    """Whether a unit with these systems can still change the verdict."""
    if v.cold:
        return True
    systems = {str(s) for s in unit_systems}
    if len(systems) == 1:
        (only,) = systems
        return any(only in pair for pair in v.undecided)
    return any(pair <= systems for pair in v.undecided)
