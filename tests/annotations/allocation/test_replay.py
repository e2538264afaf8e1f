"""The replay benchmark's readers and policies (bench/bench_allocation.py) on the real studies.

Expected counts come from SOURCES.md (HATS: 7,150 votes over 1,000 triplets; ASSET: 100 outputs
x 15 raters per aspect) and from the files' own structure (E2E: one CrowdFlower unit per screen).
"""

import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import bench_allocation as bench  # noqa: E402

from annotations.allocation.adaptive import AdaptiveParams  # noqa: E402


def test_readers(shared_data):
    hats = bench.hats(shared_data)
    assert (len(hats.units), len(hats.judgements)) == (1000, 7150)
    asset = bench.asset_ratings(shared_data)
    assert (len(asset.units), len(asset.judgements)) == (100, 1500)
    assert Counter(len(u.judgements) for u in asset.units) == {15: 100}
    quality = bench.e2e(shared_data, "quality.csv", "quality")
    assert len(quality.units) == 1413 and all(len(u.systems) == 5 for u in quality.units)


def test_policies_are_orders_of_every_judgement(shared_data):
    study = bench.asset_pairwise(shared_data)
    everything = sorted(study.judgements)
    rng = np.random.default_rng(0)
    overlap = bench.order_overlap_first(study, rng)
    assert sorted(overlap) == everything
    # Overlap-first: a unit's judgements come together.
    seen, last = set(), None
    for u, _j in overlap:
        assert u == last or u not in seen
        seen.add(u)
        last = u
    order, stop = bench.order_adaptive(study, rng, AdaptiveParams())
    assert sorted(order) == everything
    assert 0 < stop["judgements"] <= len(order) and stop["stopped"] in (True, False)


def test_full_data_conclusions_from_the_workbench(shared_data):
    # HATS: hypA vs hypB over the full data; the test is the workbench's (systems.clusters).
    import csv

    from scipy import stats

    study = bench.hats(shared_data)
    ranking, clusters = bench.conclusions(study, [j for u in study.units for j in u.judgements])
    # Independently from the TSV: each output's win rate is its share of the row's votes.
    with (shared_data / "hats" / "hats.tsv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    a = np.array([int(r["nbrA"]) / (int(r["nbrA"]) + int(r["nbrB"])) for r in rows])
    first, second = ("hypA", "hypB") if a.mean() > 0.5 else ("hypB", "hypA")
    top, bottom = (a, 1 - a) if first == "hypA" else (1 - a, a)
    separated = stats.mannwhitneyu(top, bottom, alternative="greater").pvalue < 0.05
    assert ranking == (first, second)
    assert clusters == ((frozenset([first]), frozenset([second])) if separated else (frozenset(ranking),))
