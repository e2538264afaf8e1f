"""System-level human scores from every protocol, rankings and significance clusters.

Per output ("segment") human scores: ratings and ESA scores are averaged;
pairwise judgements give each output its win rate over its comparisons (a
tie counts half); best-worst judgements give (#best - #worst) / #appearances
(Orme 2009, as in Kiritchenko and Mohammad 2017). A system's score is the
mean of its outputs' scores. Bradley-Terry strengths come from `choix`
(I-LSR, a small ridge `alpha` so systems that never lose still get a finite
strength), ties dropped.

Clusters: systems sorted by score; a cluster ends after position i when every
system above is significantly better than every system below by a one-sided
Mann-Whitney U test (Wilcoxon rank-sum) on their per-output scores at
p < 0.05, as WMT's human rankings do (Barrault et al. 2019).

Paired clusters and rank ranges (`paired_ranks`, the rule `pairwise-ranges` of cluster_rules;
not the WMT 2025 script's rule, which cluster_rules has as `wmt25` and `wmt25-ranges`): for every
ordered pair of systems, a one-sided paired Wilcoxon
signed-rank test (scipy, zero differences dropped; the exact distribution for up to
50 differences without ties or zeros, else the normal approximation with tie and zero
corrections) over the items both systems have a score for, p < 0.05. A system's rank
range runs from 1 + the number of systems significantly better than it to N - the
number significantly worse; its paired cluster ends where every system above is
significantly better than every system below, the rule of the Mann-Whitney clusters.
"""

from __future__ import annotations

from collections import defaultdict

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

# scipy is imported when an analysis first needs it, not by every web worker at start-up (workbench.lazy).
stats = lazy_module("scipy.stats")


def win_rates(comparisons: list[tuple]) -> dict:
    """comparisons: (item, output_a, output_b, winner 'a'|'b'|'tie') -> {output: win rate}."""
    won: dict = defaultdict(float)
    seen: dict = defaultdict(int)
    for _item, a, b, winner in comparisons:
        seen[a] += 1
        seen[b] += 1
        if winner == "a":
            won[a] += 1
        elif winner == "b":
            won[b] += 1
        else:
            won[a] += 0.5
            won[b] += 0.5
    return {o: won[o] / seen[o] for o in seen}


def best_worst_scores(tuples: list[tuple]) -> dict:
    """tuples: (outputs, best, worst) -> {output: (#best - #worst) / #appearances}."""
    seen: dict = defaultdict(int)
    net: dict = defaultdict(int)
    for outputs, best, worst in tuples:
        for o in outputs:
            seen[o] += 1
        net[best] += 1
        net[worst] -= 1
    return {o: net[o] / seen[o] for o in seen}


def bradley_terry(wins: list[tuple[str, str]], systems: list[str], *, alpha: float = 0.01) -> dict[str, float]:
    """Bradley-Terry strengths (log scale, mean 0) from (winner, loser) system pairs, via choix."""
    import choix  # lazy: choix costs each web worker ~0.5 s and ~40 MB

    index = {s: i for i, s in enumerate(systems)}
    data = [(index[w], index[lo]) for w, lo in wins if w in index and lo in index]
    if len(systems) < 2 or not data:
        return {s: 0.0 for s in systems}
    params = choix.ilsr_pairwise(len(systems), data, alpha=alpha)
    params = params - params.mean()
    return {s: float(params[index[s]]) for s in systems}


def bootstrap_mean_ci(values: np.ndarray, *, reps: int = 200, seed: int = 0) -> list[float | None]:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) < 2 or reps <= 0:
        return [None, None]
    # Sorted so that the draws do not depend on the order the scores were read in (import order).
    values = np.sort(values)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (reps, len(values)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return [float(lo), float(hi)]


def clusters(
    samples: dict[str, np.ndarray],
    *,
    higher_is_better: bool = True,
    p: float = 0.05,
    scores: dict[str, float] | None = None,
    seed: int = 0,
) -> list[dict]:
    """Rank systems by mean score, or by `scores` when given (a metric's corpus score of each
    system: the test still compares per-output scores); significance clusters (rank 1 = best
    cluster). With `scores`, each row's "score" is that score and the mean of its per-output
    scores is "segment_mean" (its interval "segment_mean_ci95"); "ci95" is then [None, None],
    since the interval is the mean's, not the score's."""
    clean = {s: np.asarray(v, dtype=float)[~np.isnan(np.asarray(v, dtype=float))] for s, v in samples.items()}
    clean = {s: v for s, v in clean.items() if len(v)}
    sign = 1.0 if higher_is_better else -1.0
    key = {s: float(clean[s].mean()) if scores is None else float(scores[s]) for s in clean}
    order = sorted(clean, key=lambda s: (-sign * key[s], s))  # equal scores: by name, not read order
    better: dict[tuple[str, str], bool] = {}
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            x, y = sign * clean[a], sign * clean[b]
            if len(x) < 2 or len(y) < 2:
                better[(a, b)] = False
                continue
            better[(a, b)] = bool(stats.mannwhitneyu(x, y, alternative="greater").pvalue < p)
    rows, cluster = [], 1
    for i, s in enumerate(order):
        if i > 0 and all(better[(a, b)] for a in order[:i] for b in order[i:]):
            cluster += 1
        ci = bootstrap_mean_ci(clean[s], seed=seed + i)
        row = {"system": s, "rank": i + 1, "cluster": cluster, "score": key[s], "n": int(len(clean[s])), "ci95": ci}
        if scores is not None:
            row.update({"ci95": [None, None], "segment_mean": float(clean[s].mean()), "segment_mean_ci95": ci})
        rows.append(row)
    return rows


PAIRED_TEST = (
    "pairwise-ranges: rank ranges from one-sided Wilcoxon tests of every pair, p < 0.05 (paired "
    "Wilcoxon signed-rank over the items both systems share); rank range = [1 + #systems significantly "
    "better, N - #systems significantly worse]. Not WMT25's rule: see the rule selector (cluster_rules)"
)


def paired_p(x: dict, y: dict) -> float:
    """p-value that the system with per-item scores x beats y (paired over shared items)."""
    shared = sorted(set(x) & set(y), key=str)
    d = np.array([x[k] - y[k] for k in shared], dtype=float)
    d = d[~np.isnan(d)]
    if len(d) == 0 or not np.any(d != 0):
        return 1.0
    return float(stats.wilcoxon(d, alternative="greater", method=wilcoxon_method(d)).pvalue)


def wilcoxon_method(d: np.ndarray) -> str:
    """scipy's exact distribution for up to 50 differences without ties or zeros, else the normal
    approximation with its tie and zero corrections. (scipy >= 1.15's default would run a
    permutation test on small samples with ties: seconds per pair, too slow for a page.)"""
    nonzero = d[d != 0]
    tied = len(np.unique(np.abs(nonzero))) < len(nonzero)
    return "exact" if len(nonzero) == len(d) and not tied and len(d) <= 50 else "asymptotic"


def paired_ranks(
    by_item: dict[str, dict], order: list[str], *, higher_is_better: bool = True, p: float = 0.05
) -> dict[str, dict]:
    """{system: {"rank_range": [lo, hi], "paired_cluster": k}} for systems in `order` (best first)."""
    sign = 1.0 if higher_is_better else -1.0
    signed = {s: {k: sign * v for k, v in by_item.get(s, {}).items()} for s in order}
    better = {(a, b): paired_p(signed[a], signed[b]) < p for a in order for b in order if a != b}
    n = len(order)
    out, cluster = {}, 1
    for i, s in enumerate(order):
        if i > 0 and all(better[(a, b)] for a in order[:i] for b in order[i:]):
            cluster += 1
        above = sum(better[(o, s)] for o in order if o != s)
        below = sum(better[(s, o)] for o in order if o != s)
        out[s] = {"rank_range": [1 + above, n - below], "paired_cluster": cluster}
    return out
