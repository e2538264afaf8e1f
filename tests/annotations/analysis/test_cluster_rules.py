"""Cluster rules equal the published scripts they are named after (issue 42 item 1).

`script_clusters` and `script_ranges` transcribe wmt-conference/wmt25-general-mt
humeval/05-compute_clusters.py at commit ebae87369fc8931d7f1c6faf8192e8f04a480d1f (its latest):
the `clusters.txt` loop and the `generated_human_ranking.tex` table. SCRIPT_OUTPUT is what the
real script printed, run once (Python 3, scipy 1.17.1, numpy 2.4, tqdm) on `generate(0, LANGS)`
written as its data/wmt25-genmt-humeval.jsonl (and a data/systems_humeval.json with made-up
autorank/constrained entries the table needs), parsed from generated/clusters.txt and
generated/generated_human_ranking.tex; the first test holds the transcription to it.
"""

import statistics

import numpy as np
import pytest
import scipy.stats

from annotations.analysis import cluster_rules as cr, systems as sy

LANGS = ["en-de", "en-cs", "cs-uk"]


def generate(seed, langs, n_sys=8, n_items=100, missing=0.1):
    """Records in the script's input format: {"doc_id": "<langs>_#_doc", "scores": {system:
    {"human1": x, "human2": y}}}, ~10% of the wave scores missing."""
    rng = np.random.default_rng(seed)
    out = []
    for lp in langs:
        quality = np.sort(rng.normal(70, 6, n_sys))[::-1]
        names = [f"sys{k:02d}" for k in range(n_sys)]
        for i in range(n_items):
            base = rng.normal(0, 10)
            scores = {}
            for s, q in zip(names, quality):
                sc = {}
                for w in (1, 2):
                    if rng.random() > missing:
                        sc[f"human{w}"] = float(np.clip(np.rint(q + base + rng.normal(0, 9)), 0, 100))
                if sc:
                    scores[s] = sc
            out.append({"doc_id": f"{lp}_#_doc{i:03d}", "scores": scores})
    return out


SCRIPT_OUTPUT = {
    "en-de": {
        "order": ["sys00", "sys01", "sys02", "sys04", "sys03", "sys05", "sys06", "sys07"],
        "clusters": [1, 2, 2, 3, 3, 3, 4, 4],
        "ranges": [[1, 1], [2, 3], [2, 3], [4, 5], [4, 6], [5, 6], [7, 8], [7, 8]],
        "range_clusters": [1, 2, 2, 3, 3, 3, 4, 4],
    },
    "en-cs": {
        "order": ["sys00", "sys01", "sys02", "sys03", "sys04", "sys05", "sys06", "sys07"],
        "clusters": [1, 2, 2, 2, 3, 4, 4, 5],
        "ranges": [[1, 1], [2, 4], [2, 4], [2, 4], [5, 5], [6, 7], [6, 7], [8, 8]],
        "range_clusters": [1, 2, 2, 2, 3, 4, 4, 5],
    },
    "cs-uk": {
        "order": ["sys00", "sys01", "sys02", "sys03", "sys04", "sys05", "sys06", "sys07"],
        "clusters": [1, 2, 2, 2, 2, 3, 3, 4],
        "ranges": [[1, 1], [2, 4], [2, 4], [2, 5], [4, 5], [6, 7], [6, 7], [8, 8]],
        "range_clusters": [1, 2, 2, 2, 2, 3, 3, 4],
    },
}


# ---- the transcription -------------------------------------------------------------


def get_significance(a, b) -> bool:
    return (
        scipy.stats.wilcoxon(
            [x - y for x, y in zip(a, b) if not (np.isnan(x) or np.isnan(y))], alternative="greater"
        ).pvalue
        < 0.05
    )


def script_systems(data, langs):
    local = [x for x in data if x["doc_id"].startswith(langs + "_#_")]
    names = {s for x in local for s in x["scores"]}
    systems = {s: [v["scores"].get(s, {}).get(f"human{w}", np.nan) for v in local for w in [1, 2]] for s in names}
    # The script sorts a dict built from a set (stable on equal means in set order); our rule
    # breaks equal means by name, so the transcription sorts the names first.
    return sorted(
        sorted(systems.items()), key=lambda x: statistics.mean([a for a in x[1] if not np.isnan(a)]), reverse=True
    )


def script_clusters(systems):
    clusters, cluster, prev = [], 1, None
    for _s, v in systems:
        if prev is not None and get_significance(prev, v):
            cluster += 1
        clusters.append(cluster)
        prev = v
    return clusters


def does_cluster_end_here(i, ranks) -> bool:
    return all(b <= i for a, b in ranks[:i]) and all(a > i for a, b in ranks[i:])


def script_ranges(systems):
    ranges = []
    for i, (_a, va) in enumerate(systems):
        start = i + 1
        for _b, vb in systems[:i][::-1]:
            if get_significance(vb, va):
                break
            start -= 1
        end = i + 1
        for _b, vb in systems[i + 1 :]:
            if get_significance(va, vb):
                break
            end += 1
        ranges.append([start, end])
    clusters, cluster = [], 1
    for i in range(len(ranges)):
        if i > 0 and does_cluster_end_here(i, ranges):
            cluster += 1
        clusters.append(cluster)
    return ranges, clusters


# ---- tests --------------------------------------------------------------------------


def test_transcription_equals_what_the_script_printed():
    data = generate(0, LANGS)
    for lp in LANGS:
        systems = script_systems(data, lp)
        ranges, range_clusters = script_ranges(systems)
        assert {
            "order": [s for s, _ in systems],
            "clusters": script_clusters(systems),
            "ranges": ranges,
            "range_clusters": range_clusters,
        } == SCRIPT_OUTPUT[lp], lp


def _observations(data, lp):
    """What report.rule_observations builds from two waves: item-major, wave-minor, NaN where missing."""
    return {s: np.array(v, dtype=float) for s, v in script_systems(data, lp)}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_wmt25_rules_equal_the_transcription(seed):
    data = generate(seed, LANGS)
    for lp in LANGS:
        systems = script_systems(data, lp)
        obs = _observations(data, lp)
        got = cr.rank_systems(obs, rule="wmt25")
        assert [r["system"] for r in got["systems"]] == [s for s, _ in systems]
        assert [r["cluster"] for r in got["systems"]] == script_clusters(systems)
        means = [statistics.mean([a for a in v if not np.isnan(a)]) for _, v in systems]
        assert [r["mean"] for r in got["systems"]] == pytest.approx(means, abs=1e-12)
        ranges, range_clusters = script_ranges(systems)
        walked = cr.rank_systems(obs, rule="wmt25-ranges")
        assert [r["rank_range"] for r in walked["systems"]] == ranges
        assert [r["cluster"] for r in walked["systems"]] == range_clusters
        assert walked["rule"]["source"].startswith("wmt-conference/wmt25-general-mt")


def test_walk_differs_from_every_pair_where_significance_is_not_monotone():
    # A beats C and E but not B or D: the walk ends A's range where it meets C (rank 2); counting
    # every pair gives [1, 5 - 2] = [1, 3]. D beats nothing and nothing beats it: [1, 5], one cluster.
    order = ["A", "B", "C", "D", "E"]
    beats = {("A", "C"), ("A", "E"), ("B", "E"), ("C", "E")}
    ranges = cr.walk_ranges(order, lambda a, b: (a, b) in beats)
    assert ranges == [[1, 2], [1, 4], [2, 4], [1, 5], [4, 5]]
    assert cr.clusters_from_ranges(ranges) == [1, 1, 1, 1, 1]
    assert cr.clusters_from_ranges([[1, 1], [2, 3], [2, 3], [4, 4]]) == [1, 2, 2, 3]


# The two-systems case of the issue: one-sided Wilcoxon p = 0.0316 (scipy, asymptotic with ties).
D = [
    -14,
    -2,
    23,
    2,
    10,
    25,
    28,
    27,
    22,
    2,
    19,
    4,
    -5,
    16,
    -16,
    -12,
    -1,
    -9,
    10,
    19,
    -5,
    -10,
    10,
    10,
    15,
    17,
    2,
    -16,
    -2,
    5,
    1,
    6,
    17,
    -6,
    -18,
    -10,
    11,
    -3,
    3,
    -16,
    28,
    -3,
    16,
    23,
    -11,
    -1,
    3,
    -20,
    -18,
    -20,
    26,
    24,
    24,
    0,
    -20,
    5,
    -9,
    -10,
    27,
    9,
]


def test_small_samples_with_ties_or_zeros_get_scipys_permutation_p_value():
    """Up to 13 differences with ties or zeros, scipy's default runs an exact permutation test; the rule
    builds that null distribution in one product. The p-values must be scipy's own, to the last bit."""
    rng = np.random.default_rng(5)
    cases = [np.array([1.0, 1.0, 0.0, -1.0]), np.array([0.0, 0.0, 2.0]), np.array([-1.0, -1.0, -1.0])]
    for n in (2, 5, 7, 9, 11, 13):
        cases.append(rng.integers(-3, 4, n).astype(float))  # Likert-like differences: ties and zeros
        cases.append(np.round(rng.normal(0.3, 1.0, n), 1) * (rng.random(n) < 0.8))  # zeros
    checked = 0
    for d in cases:
        if not np.any(d != 0) or not (np.any(d == 0) or cr._tied(d)):
            continue
        b = np.zeros(len(d))
        assert cr._wilcoxon_greater(d, b) == scipy.stats.wilcoxon(d, alternative="greater").pvalue, d
        checked += 1
    assert checked >= 12


def test_two_systems_at_p_0_0316():
    a = 50 + np.array(D, dtype=float)
    b = np.full(len(D), 50.0)
    assert round(scipy.stats.wilcoxon(a - b, alternative="greater").pvalue, 4) == 0.0316
    for rule in ("wmt25", "wmt25-ranges", "pairwise-ranges"):
        got = cr.rank_systems({"A": a, "B": b}, rule=rule)["systems"]
        assert [(r["system"], r["rank_range"], r["cluster"]) for r in got] == [("A", [1, 1], 1), ("B", [2, 2], 2)]
        # At 0.05/2 the same data give one cluster and shared ranks.
        got = cr.rank_systems({"A": a, "B": b}, rule=rule, alpha=0.025)["systems"]
        assert [(r["rank_range"], r["cluster"]) for r in got] == [([1, 2], 1), ([1, 2], 1)], rule
    assert "p < 0.025" in cr.rank_systems({"A": a, "B": b}, rule="wmt25", alpha=0.025)["rule"]["label"]


def draft_is_significantly_better(a, b, n_resamples, rng):
    """wmt-conference/wmt26-general-mt humeval/02b-analyze_results.py @ 040f2c47d36b,
    `is_significantly_better`, transcribed with the draws taken from `rng`."""
    pairs = [(x, y) for x, y in zip(a, b) if not np.isnan(x) and not np.isnan(y)]
    diffs = np.array([x - y for x, y in pairs])
    va = np.array([x for x in a if not np.isnan(x)])
    vb = np.array([y for y in b if not np.isnan(y)])
    if len(diffs) >= 2 and np.any(diffs > 0):
        try:
            res = scipy.stats.bootstrap(
                (diffs,),
                statistic=np.mean,
                vectorized=True,
                n_resamples=n_resamples,
                confidence_level=0.95,
                alternative="greater",
                rng=rng,
            )
            if res.confidence_interval.low > 0:
                return True
        except ValueError:
            pass
    if len(va) >= 2 and len(vb) >= 2:

        def ind_mean_diff(x, y, axis=-1):
            return np.mean(x, axis=axis) - np.mean(y, axis=axis)

        try:
            res = scipy.stats.bootstrap(
                (va, vb),
                statistic=ind_mean_diff,
                vectorized=True,
                n_resamples=n_resamples,
                confidence_level=0.95,
                alternative="greater",
                rng=rng,
            )
            if res.confidence_interval.low > 0:
                return True
        except ValueError:
            pass
    return False


def test_wmt26_bootstrap_rule_equals_the_draft_with_the_same_draws():
    import zlib

    data = generate(5, ["en-de"], n_sys=6, n_items=60)
    obs = {s: np.nanmean(np.array(v, dtype=float).reshape(-1, 2), axis=1) for s, v in script_systems(data, "en-de")}
    got = cr.rank_systems(obs, rule="wmt26", resamples=100, seed=3)
    order = [r["system"] for r in got["systems"]]

    def better(x, y):
        rng = np.random.default_rng([3, zlib.crc32(x.encode()), zlib.crc32(y.encode())])
        return draft_is_significantly_better(obs[x], obs[y], 100, rng)

    n = len(order)
    for i, s in enumerate(order):
        top = i
        while top > 0 and not better(order[top - 1], s):
            top -= 1
        bottom = i
        while bottom < n - 1 and not better(s, order[bottom + 1]):
            bottom += 1
        assert got["systems"][i]["rank_range"] == [top + 1, bottom + 1]
    boundaries = [i for i in range(1, n) if all(better(u, d) for u in order[:i] for d in order[i:])]
    assert [r["cluster"] for r in got["systems"]] == [1 + sum(b <= i for b in boundaries) for i in range(n)]
    assert got["rule"]["seed"] == 3 and got["rule"]["resamples"] == 100
    assert got == cr.rank_systems(obs, rule="wmt26", resamples=100, seed=3)  # the seed fixes the figures


def test_pairwise_ranges_and_mann_whitney_are_todays_rules():
    data = generate(1, ["en-de"], n_sys=5, n_items=50)
    obs = {s: np.array(v, dtype=float)[::2] for s, v in script_systems(data, "en-de")}  # one wave
    got = cr.rank_systems(obs, rule="pairwise-ranges")
    order = [r["system"] for r in got["systems"]]
    by_item = {s: {k: float(x) for k, x in enumerate(obs[s]) if not np.isnan(x)} for s in order}
    expected = sy.paired_ranks(by_item, order)
    assert [r["rank_range"] for r in got["systems"]] == [expected[s]["rank_range"] for s in order]
    assert got["rule"]["label"] == "rank ranges from one-sided Wilcoxon tests of every pair, p < 0.05"
    mw = cr.rank_systems(obs, rule="mann-whitney")
    today = sy.clusters({s: obs[s] for s in order})
    assert [(r["system"], r["cluster"]) for r in mw["systems"]] == [(r["system"], r["cluster"]) for r in today]
