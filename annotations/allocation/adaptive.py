"""Adaptive allocation: spend judgements only where the system ranking is still undecided.

The conclusions a campaign reports are the workbench's own (annotations/analysis/systems.py):
systems ranked by the mean of their per-output scores, and significance clusters whose
boundaries need every system above to beat every system below by a one-sided Mann-Whitney U
test at p < alpha (WMT's human rankings, Barrault et al. 2019). `verdict` computes exactly
these from the judgements so far, and asks, for every pair of systems, whether more judgements
can still change what the *full* campaign will conclude about that pair:

- **decided, significant**: the pair is significant now (p < alpha) and the predictive
  probability that it is still significant, in the same direction, once the campaign has all
  its planned outputs is at least `certainty`;
- **decided, out of reach**: the predictive probability that the full campaign makes the pair
  significant (either way) is below 1 - `certainty`: the two systems will end up in the same
  cluster whatever is added, so judging them further is spent for nothing;
- **undecided** otherwise.

The predictive probability is the Bayesian predictive power of a group-sequential trial
(Spiegelhalter, Freedman and Blackburn 1986; Jennison and Turnbull 2000, "Group Sequential
Methods with Applications to Clinical Trials", ch. 10, stochastic curtailment): with the
standardised statistic Z now and the information fraction t (information of a two-sample
comparison ~ n_a n_b / (n_a + n_b), judged outputs now over planned outputs), the final
statistic is Normal with mean Z / sqrt(t) and variance (1 - t) / t under a flat prior, so
P(final Z > z_alpha) = Phi((Z - z_alpha sqrt(t)) / sqrt(1 - t)). Without `planned` sizes the
verdict cannot look ahead: a pair is decided only when it is significant now (no "out of reach").

Allocation then follows the dueling-bandit idea of Active Evaluation (Mohankumar and Khapra
2022, "Active Evaluation: Efficient NLG Evaluation with Few Pairwise Comparisons"): ask only
about pairs whose order is still uncertain, and stop asking about the others. A unit (one
item shown with a set of systems) is wanted while it contains an undecided pair; after a cold
start in which every system has `min_per_system` judged outputs, so that the first tests are
not made on two or three outputs (subset2evaluate, Zouhar et al. 2025, shows item subsets
of about half a test set rank systems as the full set does, not a handful of items). The
stopping rule ends the campaign once no pair is undecided and the clusters and decided pairs
stayed the same for `stable_checks` consecutive checks.

Everything here is pure (numpy/scipy): the assignment engine feeds it judgements and asks
`unit_wanted` for each candidate unit; the replay benchmark (bench/bench_allocation.py) feeds
it recorded judgements.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

# scipy is imported when a verdict first needs it, not by every web worker at start-up (workbench.lazy).
special = lazy_module("scipy.special")
stats = lazy_module("scipy.stats")


@dataclass(frozen=True)
class AdaptiveParams:
    # Cold start: every system in at least this many judged outputs (one per judged unit that
    # shows the system) before any pair is decided; below 10 a Mann-Whitney test has too
    # little power for a "significant" to mean much, and every system must be seen anyway.
    min_per_system: int = 10
    # Significance level of the one-sided Mann-Whitney test, the workbench's clusters' p.
    alpha: float = 0.05
    # The stopping rule: stop once no pair is undecided and the clusters and the decided pairs
    # have not changed for this many consecutive checks (a guard against a lucky streak).
    stable_checks: int = 3
    # Judgements between two checks (verdicts): smaller reacts sooner, costs more computation.
    check_every: int = 20
    # How sure (predictive probability) the verdict must be of the full campaign's conclusion
    # about a pair before that pair stops receiving units. Higher: fewer wrong early calls,
    # fewer savings. 0.9 is a usual futility/efficacy threshold in stochastic curtailment.
    certainty: float = 0.9


@dataclass(frozen=True)
class Verdict:
    ranking: tuple[str, ...]
    clusters: tuple[tuple[str, ...], ...]
    decided: frozenset[frozenset[str]]
    undecided: frozenset[frozenset[str]]
    cold: bool
    stable: int
    stop: bool
    reason: str
    # The decided pairs that are decided because no significant difference is within reach of the
    # planned judgements (not because one is significantly better): the pair table says which.
    out_of_reach: frozenset[frozenset[str]] = frozenset()


def output_samples(observations: Iterable[tuple]) -> dict[str, np.ndarray]:
    """(item, system, value) -> {system: per-output scores}: the mean of each output's values,
    which is the workbench's per-output score for ratings (mean), pairwise (win rate, a tie
    half) and best-worst ((#best - #worst) / #appearances)."""
    sums: dict[tuple, list] = defaultdict(lambda: [0.0, 0])
    for item, system, value in observations:
        cell = sums[(item, system)]
        cell[0] += float(value)
        cell[1] += 1
    samples: dict[str, list] = defaultdict(list)
    for (_item, system), (total, count) in sums.items():
        samples[system].append(total / count)
    return {s: np.asarray(v, dtype=float) for s, v in samples.items()}


def mann_whitney_z(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """One-sided (x > y) Mann-Whitney U test: (standardised statistic with continuity
    correction, p-value), as scipy.stats.mannwhitneyu(x, y, alternative="greater") computes it
    (tie-corrected normal approximation; scipy's exact test when a sample has at most 8 values
    and there are no ties)."""
    n1, n2 = len(x), len(y)
    # U1 = #(x > y) + #(x = y) / 2, counted on the sorted y; scipy.special for the normal tail
    # (scipy.stats.norm's machinery costs more than the test, and the verdict runs many).
    ys = np.sort(y)
    u1 = float((np.searchsorted(ys, x, "left") + np.searchsorted(ys, x, "right")).sum()) / 2
    _values, counts = np.unique(np.concatenate([x, y]), return_counts=True)
    n = n1 + n2
    tie_term = float(np.sum(counts.astype(float) ** 3 - counts))
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    z = (u1 - n1 * n2 / 2 - 0.5) / math.sqrt(var) if var > 0 else 0.0
    if min(n1, n2) <= 8 and counts.max() == 1:
        return z, float(stats.mannwhitneyu(x, y, alternative="greater").pvalue)
    return z, float(special.ndtr(-z)) if var > 0 else 1.0


def predictive_power(z: float, t: float, alpha: float) -> float:
    """P(the final one-sided test is significant at alpha | Z = z now at information fraction t),
    flat prior (Spiegelhalter et al. 1986)."""
    crit = -float(special.ndtri(alpha))
    if t >= 1:
        return 1.0 if z > crit else 0.0
    return float(special.ndtr((z - crit * math.sqrt(t)) / math.sqrt(1 - t)))


def _information(n_a: float, n_b: float) -> float:
    return n_a * n_b / (n_a + n_b) if n_a + n_b else 0.0


def verdict(
    observations: Iterable[tuple],
    systems: Iterable[str],
    params: AdaptiveParams = AdaptiveParams(),
    *,
    previous: Verdict | None = None,
    planned: Mapping[str, int] | None = None,
) -> Verdict:
    """The current conclusions and which pairs still need judgements.

    observations: (item, system, value), one per judged output per annotator, higher = better.
    systems: every system of the campaign (those not judged yet count as cold).
    previous: the last check's verdict, for the stopping rule's count of stable checks.
    planned: outputs of each system the campaign can judge in all (its units showing the
    system); without it no pair is ever "out of reach" (see the module docstring).
    """
    samples = output_samples(observations)
    systems = sorted(set(systems) | set(samples))
    n = {s: len(samples.get(s, ())) for s in systems}
    mean = {s: float(samples[s].mean()) if n[s] else float("-inf") for s in systems}
    ranking = tuple(sorted(systems, key=lambda s: (-mean[s], s)))
    cold_systems = [s for s in systems if n[s] < params.min_per_system]
    cold = bool(cold_systems)

    better: dict[tuple[str, str], bool] = {}
    decided, undecided, unreachable = set(), set(), set()
    significant = out_of_reach = 0
    for a, b in combinations(ranking, 2):  # a ranked above b
        pair = frozenset((a, b))
        if n[a] < 2 or n[b] < 2:
            better[(a, b)] = False
            undecided.add(pair)
            continue
        z, p = mann_whitney_z(samples[a], samples[b])
        better[(a, b)] = p < params.alpha
        if cold:
            undecided.add(pair)
            continue
        if planned and planned.get(a) and planned.get(b):
            t = min(1.0, _information(n[a], n[b]) / _information(max(planned[a], n[a]), max(planned[b], n[b])))
            up = predictive_power(z, t, params.alpha)
            down = predictive_power(-z, t, params.alpha)
            if better[(a, b)] and up >= params.certainty:
                decided.add(pair)
                significant += 1
            elif up + down < 1 - params.certainty:
                decided.add(pair)
                unreachable.add(pair)
                out_of_reach += 1
            else:
                undecided.add(pair)
        elif better[(a, b)]:
            decided.add(pair)
            significant += 1
        else:
            undecided.add(pair)

    clusters: list[list[str]] = []
    for i, s in enumerate(ranking):
        if i == 0 or all(better[(a, b)] for a in ranking[:i] for b in ranking[i:]):
            clusters.append([])
        clusters[-1].append(s)
    clusters_t = tuple(tuple(c) for c in clusters)

    same = (
        previous is not None
        and not cold
        and not previous.cold
        and _conclusions(previous.clusters, previous.decided) == _conclusions(clusters_t, decided)
    )
    stable = previous.stable + 1 if same else 0
    stop = not cold and not undecided and stable >= params.stable_checks
    if cold:
        reason = (
            f"cold start: {len(cold_systems)} of {len(systems)} systems have fewer than "
            f"{params.min_per_system} judged outputs"
        )
    elif stop:
        reason = (
            f"stopped: every pair of systems is decided ({significant} significant, {out_of_reach} "
            f"beyond reach of the planned judgements) and the clusters stayed the same for {stable} checks"
        )
    elif not undecided:
        reason = f"every pair decided; confirming: clusters stable for {stable} of {params.stable_checks} checks"
    else:
        reason = (
            f"{len(undecided)} of {len(decided) + len(undecided)} pairs undecided "
            f"({significant} significant, {out_of_reach} beyond reach)"
        )
    return Verdict(
        ranking=ranking,
        clusters=clusters_t,
        decided=frozenset(decided),
        undecided=frozenset(undecided),
        cold=cold,
        stable=stable,
        stop=stop,
        reason=reason,
        out_of_reach=frozenset(unreachable),
    )


def _conclusions(clusters, decided) -> tuple:
    # The order inside a cluster is not a conclusion (no pair there need be significant): with
    # many close systems it changes at nearly every check, and comparing it would never stop.
    return tuple(frozenset(c) for c in clusters), frozenset(decided)


def unit_wanted(unit_systems: Iterable[str], v: Verdict) -> bool:
    """Is a unit showing these systems worth handing out? During the cold start every unit is;
    after the stop none is; while every pair is decided but the stopping rule still counts its
    stable checks, every unit is (the checks need judgements); otherwise a unit is wanted when
    some pair of its systems is undecided.

    A unit showing one or two systems (a single-output rating, a pairwise comparison) is
    wanted while one of its systems is in an undecided pair: with S systems such units rarely
    hold the very pair (S(S-1)/2 pairs; some designs never show it, such as ASSET's
    comparisons, always against ASSET), and the clusters' test compares per-output scores, which
    every judged output of either system moves. A screen of three or more systems holds several
    pairs at once, and only the screens holding an undecided pair are wanted."""
    if v.stop:
        return False
    if v.cold or not v.undecided:
        return True
    shown = sorted(set(unit_systems))
    if len(shown) <= 2:
        return any(s in pair for s in shown for pair in v.undecided)
    return any(frozenset(pair) in v.undecided for pair in combinations(shown, 2))
