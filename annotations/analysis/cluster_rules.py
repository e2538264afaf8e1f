"""System clusters and rank ranges by named rule, each computed as its authors compute it.

Every rule takes the same input: for each system, a vector of observations aligned across
systems (position k is the same item, or the same (item, wave), for every system; NaN where
the system has no score there) and returns, for systems sorted by their mean, a rank range and
a cluster. Rules are classes in `RULES`; the pages, the API, the `rankings` command and the
card ask the registry for a rule's label and source, and never branch on its name.

- `wmt25`: wmt-conference/wmt25-general-mt, humeval/05-compute_clusters.py at commit
  ebae87369fc8931d7f1c6faf8192e8f04a480d1f (its latest, 2025-08-26), the `clusters.txt` part:
  systems sorted by the mean of their non-missing observations, the two waves' scores of an
  item as two observations (NaN where missing); a new cluster opens where two ADJACENT systems
  differ by a one-sided Wilcoxon signed-rank test (scipy's defaults) on the differences of the
  observations both have, p < alpha. The script prints no rank range; a system's range here is
  the span of its cluster.
- `wmt25-ranges`: the same script's LaTeX table (`generated_human_ranking.tex`): a system's
  range walks up from its position until the first system significantly better than it and
  down until the first system it is significantly better than (same test); a cluster ends after
  position i when every range above ends at or before i and every range below starts after i
  (`does_cluster_end_here`). Every version of the script in the repository's history uses
  p < 0.05 (commits 00de451 .. ebae873: t-tests, then a permutation test, then Wilcoxon); none
  uses 0.05/2.
- `wmt26`: wmt-conference/wmt26-general-mt, humeval/02b-analyze_results.py at commit
  040f2c47d36bfdfaf371f7d9e336136bcfe44a05 (the draft analysis), `is_significantly_better`:
  A beats B when the one-sided (greater) BCa bootstrap interval of the mean paired difference
  lies above 0, or else that of the difference of the two means over each system's own
  observations (scipy.stats.bootstrap, `resamples` draws, level 1 - alpha); one observation per
  item (the mean of the item's scores, as the draft averages an item's annotations). Rank
  ranges by the walk above; a cluster ends where every system above beats every system below
  (the draft's "yes_cluster"). The draft draws unseeded; here each pair draws from
  numpy default_rng([seed, crc32(A), crc32(B)]), so a seed gives the same figures in any order.
  The draft's downward walk stops one short when nothing below is beaten (a range ending at
  N - 1); that slip is not copied: such a range ends at N.
- `pairwise-ranges`: rank ranges from one-sided Wilcoxon tests of every pair, p < alpha: range
  [1 + #systems significantly better, N - #systems significantly worse], a cluster boundary
  where every system above beats every system below (`systems.paired_ranks`).
- `mann-whitney`: the rank-sum clusters (`systems.clusters`), a one-sided Mann-Whitney U test
  of every pair on their observations; range = the span of the cluster.
"""

from __future__ import annotations

import math
import zlib
from typing import Callable

from annotations.analysis import systems as sy
from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

stats = lazy_module("scipy.stats")

DEFAULT_RULE = "wmt25"
DEFAULT_ALPHA = 0.05
DEFAULT_RESAMPLES = 100  # the WMT26 draft's n_resamples

# How a rule wants a campaign's scores laid out (report.rule_observations builds them):
WAVES_SEPARATE = "waves as separate observations"  # (item, wave) pairs, NaN where missing
ITEM_MEAN = "one observation per item, the mean of its waves"
THIS_WAVE = "one observation per item, this campaign's wave only"


def _wilcoxon_greater(a: np.ndarray, b: np.ndarray) -> float:
    """WMT25's `get_significance` p-value: scipy.stats.wilcoxon(a - b, alternative="greater")
    with scipy's defaults, over the positions where both have a score. No difference left (or
    only zeros) is no evidence: p = 1 (the script would get NaN, which is never < alpha)."""
    ok = ~(np.isnan(a) | np.isnan(b))
    d = a[ok] - b[ok]
    if len(d) == 0 or not np.any(d != 0):
        return 1.0
    if len(d) <= SIGN_FLIPS_MAX_N and (np.any(d == 0) or _tied(d)):
        return _sign_flip_p_greater(d)
    p = float(stats.wilcoxon(d, alternative="greater").pvalue)
    return p if np.isfinite(p) else 1.0


# scipy's default (>= 1.15) for up to 13 differences with ties or zeros: a permutation test over every
# sign flip (2**13 < its 9,999 resamples, so the null distribution is exact).
SIGN_FLIPS_MAX_N = 13


def _tied(d: np.ndarray) -> bool:
    nonzero = np.abs(d[d != 0])
    return len(np.unique(nonzero)) < len(nonzero)


def _sign_flip_p_greater(d: np.ndarray) -> float:
    """The p-value scipy.stats.wilcoxon(d, alternative="greater") gives for these samples, from the
    same exact null distribution (the signed-rank sum over every sign flip of the non-zero
    differences, zeros dropped, average ranks for ties) built in one matrix product: scipy evaluates
    its statistic once per flip in Python, seconds per pair of systems on a small campaign's page."""
    nonzero = d[d != 0]
    ranks = stats.rankdata(np.abs(nonzero))
    observed = float(ranks[nonzero > 0].sum())
    flips = (np.arange(2 ** len(nonzero))[:, None] >> np.arange(len(nonzero))) & 1
    null = flips @ ranks
    # permutation_test's tolerance for sums equal in theory but not in floating point
    gamma = abs(observed) * np.finfo(float).eps * 100
    return float(np.count_nonzero(null >= observed - gamma) / len(null))


def _ordered(obs: dict[str, np.ndarray]) -> list[str]:
    """Best first by the mean of the non-missing observations; equal means by name."""
    mean = {s: float(np.nanmean(v)) for s, v in obs.items()}
    return sorted(obs, key=lambda s: (-mean[s], s))


def walk_ranges(order: list[str], better: Callable[[str, str], bool]) -> list[list[int]]:
    """WMT25's table: up to the first system that beats this one, down to the first it beats."""
    out = []
    for i, s in enumerate(order):
        start = i + 1
        for above in order[:i][::-1]:
            if better(above, s):
                break
            start -= 1
        end = i + 1
        for below in order[i + 1 :]:
            if better(s, below):
                break
            end += 1
        out.append([start, end])
    return out


def clusters_from_ranges(ranges: list[list[int]]) -> list[int]:
    """`does_cluster_end_here`: a boundary after position i (1-based count above) when every
    range above ends at or before i and every range below starts after i."""
    cluster, out = 1, []
    for i in range(len(ranges)):
        if i > 0 and all(hi <= i for _lo, hi in ranges[:i]) and all(lo > i for lo, _hi in ranges[i:]):
            cluster += 1
        out.append(cluster)
    return out


def spans(clusters: list[int]) -> list[list[int]]:
    """Rank range of each position = the positions its cluster covers."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, c in enumerate(clusters):
        first.setdefault(c, i + 1)
        last[c] = i + 1
    return [[first[c], last[c]] for c in clusters]


class Rule:
    name = ""
    label = ""
    source = ""
    observations = WAVES_SEPARATE
    seeded = False  # whether `seed` and `resamples` change the figures

    def describe(self, *, alpha: float, resamples: int, seed: int) -> dict:
        out = {
            "name": self.name,
            "label": self.label.format(alpha=f"{alpha:g}", resamples=resamples),
            "source": self.source,
            "observations": self.observations,
            "alpha": alpha,
        }
        if self.seeded:
            out.update({"resamples": resamples, "seed": seed})
        return out

    def rank(
        self, obs: dict[str, np.ndarray], order: list[str], *, alpha: float, resamples: int, seed: int
    ) -> tuple[list[list[int]], list[int]]:
        raise NotImplementedError


class Wmt25(Rule):
    name = "wmt25"
    label = (
        "WMT25 clusters: systems by mean, a new cluster where two adjacent systems differ by a one-sided "
        "Wilcoxon signed-rank test, p < {alpha}; waves as separate observations; rank range = the cluster"
    )
    source = "wmt-conference/wmt25-general-mt humeval/05-compute_clusters.py @ ebae87369fc8 (clusters.txt)"

    def rank(self, obs, order, *, alpha, resamples, seed):
        clusters, cluster = [], 1
        for i, s in enumerate(order):
            if i > 0 and _wilcoxon_greater(obs[order[i - 1]], obs[s]) < alpha:
                cluster += 1
            clusters.append(cluster)
        return spans(clusters), clusters


class Wmt25Ranges(Rule):
    name = "wmt25-ranges"
    label = (
        "WMT25 rank ranges: walk up to the first system significantly better and down to the first "
        "significantly worse (one-sided Wilcoxon signed-rank, p < {alpha}); clusters where ranges separate; "
        "waves as separate observations"
    )
    source = (
        "wmt-conference/wmt25-general-mt humeval/05-compute_clusters.py @ ebae87369fc8 (generated_human_ranking.tex)"
    )

    def rank(self, obs, order, *, alpha, resamples, seed):
        memo: dict = {}

        def better(a, b):
            if (a, b) not in memo:
                memo[(a, b)] = _wilcoxon_greater(obs[a], obs[b]) < alpha
            return memo[(a, b)]

        ranges = walk_ranges(order, better)
        return ranges, clusters_from_ranges(ranges)


def bootstrap_better(a: np.ndarray, b: np.ndarray, *, alpha: float, resamples: int, rng) -> bool:
    """The WMT26 draft's `is_significantly_better`: paired bootstrap of the mean difference, or
    else the bootstrap of the difference of means; one-sided BCa intervals above 0."""
    ok = ~(np.isnan(a) | np.isnan(b))
    diffs = a[ok] - b[ok]
    va, vb = a[~np.isnan(a)], b[~np.isnan(b)]
    if len(diffs) >= 2 and np.any(diffs > 0):
        try:
            res = stats.bootstrap(
                (diffs,),
                np.mean,
                vectorized=True,
                n_resamples=resamples,
                confidence_level=1 - alpha,
                alternative="greater",
                rng=rng,
            )
            if res.confidence_interval.low > 0:
                return True
        except ValueError:
            pass
    if len(va) >= 2 and len(vb) >= 2:

        def mean_diff(x, y, axis=-1):
            return np.mean(x, axis=axis) - np.mean(y, axis=axis)

        try:
            res = stats.bootstrap(
                (va, vb),
                mean_diff,
                vectorized=True,
                n_resamples=resamples,
                confidence_level=1 - alpha,
                alternative="greater",
                rng=rng,
            )
            if res.confidence_interval.low > 0:
                return True
        except ValueError:
            pass
    return False


class Wmt26(Rule):
    name = "wmt26"
    label = (
        "WMT26 draft: one-sided bootstrap (BCa, {resamples} resamples) of the mean paired difference, or "
        "else of the difference of means, interval at 1 - {alpha} above 0; rank ranges by walking to the first "
        "significant neighbour; a cluster ends where every system above beats every system below"
    )
    source = "wmt-conference/wmt26-general-mt humeval/02b-analyze_results.py @ 040f2c47d36b (is_significantly_better)"
    observations = ITEM_MEAN
    seeded = True

    def describe(self, *, alpha, resamples, seed):
        out = super().describe(alpha=alpha, resamples=resamples, seed=seed)
        out["draws"] = f"each pair from numpy default_rng([{seed}, crc32(A), crc32(B)])"
        return out

    def rank(self, obs, order, *, alpha, resamples, seed):
        memo: dict = {}

        def better(a, b):
            if (a, b) not in memo:
                rng = np.random.default_rng([seed, zlib.crc32(a.encode()), zlib.crc32(b.encode())])
                memo[(a, b)] = bootstrap_better(obs[a], obs[b], alpha=alpha, resamples=resamples, rng=rng)
            return memo[(a, b)]

        ranges = walk_ranges(order, better)
        clusters, cluster = [], 1
        for i in range(len(order)):
            if i > 0 and all(better(up, down) for up in order[:i] for down in order[i:]):
                cluster += 1
            clusters.append(cluster)
        return ranges, clusters


class PairwiseRanges(Rule):
    name = "pairwise-ranges"
    label = "rank ranges from one-sided Wilcoxon tests of every pair, p < {alpha}"
    source = (
        "this workbench (systems.paired_ranks): range [1 + #significantly better, N - #significantly worse]; "
        "not WMT25's rule"
    )
    observations = THIS_WAVE

    def rank(self, obs, order, *, alpha, resamples, seed):
        by_item = {s: {k: float(v) for k, v in enumerate(obs[s]) if not math.isnan(v)} for s in order}
        paired = sy.paired_ranks(by_item, order, p=alpha)
        return [paired[s]["rank_range"] for s in order], [paired[s]["paired_cluster"] for s in order]


class MannWhitney(Rule):
    name = "mann-whitney"
    label = (
        "rank-sum clusters: one-sided Mann-Whitney U of every pair, p < {alpha}; a cluster ends where every "
        "system above beats every system below; rank range = the cluster"
    )
    source = "WMT human rankings (Barrault et al. 2019); this workbench's systems.clusters"
    observations = THIS_WAVE

    def rank(self, obs, order, *, alpha, resamples, seed):
        rows = sy.clusters({s: obs[s] for s in order}, p=alpha, scores={s: float(np.nanmean(obs[s])) for s in order})
        by = {r["system"]: r["cluster"] for r in rows}
        clusters = [by[s] for s in order]
        return spans(clusters), clusters


RULES: dict[str, Rule] = {r.name: r for r in (Wmt25(), Wmt25Ranges(), Wmt26(), PairwiseRanges(), MannWhitney())}


def get(name: str) -> Rule:
    try:
        return RULES[name]
    except KeyError:
        raise ValueError(f"unknown rule {name!r}: one of {', '.join(RULES)}") from None


def rank_systems(
    obs: dict[str, np.ndarray],
    *,
    rule: str = DEFAULT_RULE,
    higher_is_better: bool = True,
    alpha: float = DEFAULT_ALPHA,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict:
    """{"rule": {...}, "systems": [{system, mean, n, rank, rank_range, cluster}]} best first."""
    r = get(rule)
    sign = 1.0 if higher_is_better else -1.0
    clean = {s: sign * np.asarray(v, dtype=float) for s, v in obs.items()}
    clean = {s: v for s, v in clean.items() if np.any(~np.isnan(v))}
    order = _ordered(clean)
    ranges, clusters = r.rank(clean, order, alpha=alpha, resamples=resamples, seed=seed) if order else ([], [])
    rows = [
        {
            "system": s,
            "mean": float(sign * np.nanmean(clean[s])),
            "n": int(np.sum(~np.isnan(clean[s]))),
            "rank": i + 1,
            "rank_range": [int(x) for x in ranges[i]],
            "cluster": int(clusters[i]),
        }
        for i, s in enumerate(order)
    ]
    return {"rule": r.describe(alpha=alpha, resamples=resamples, seed=seed), "systems": rows}
