"""Agreement and metric-human correlation over 1,000,000 synthetic judgements.

20 systems x 10,000 items = 200,000 outputs, each rated 0-100 by 5 of 40
annotators (1,000,000 ratings, 10% of them missing at random: ~900,000
kept unless --no-missing). A metric score per output correlates with the
hidden quality. Times (seconds, wall clock) each step of what the
`agreement` and `correlate` commands compute, and compares with the
reference packages where one computes the same figure (krippendorff's
alpha, scipy's correlations). Not run as a test:

    .venv/bin/python bench/bench_analysis.py [--judgements 1000000] [--bootstrap 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotations.analysis import (
    agreement as ag,  # noqa: E402
    correlation as co,  # noqa: E402
)


def timed(label: str, fn, results: dict):
    t = time.perf_counter()
    value = fn()
    results[label] = time.perf_counter() - t
    print(f"{label:<58} {results[label]:8.2f} s", flush=True)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--systems", type=int, default=20)
    parser.add_argument("--per-output", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--no-missing", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings.test")

    rng = np.random.default_rng(args.seed)
    outputs = args.judgements // args.per_output
    items = outputs // args.systems
    outputs = items * args.systems
    quality = rng.normal(50, 15, outputs)
    units = np.repeat(np.arange(outputs), args.per_output)
    annotators = rng.integers(0, 40, len(units))
    bias = rng.normal(0, 8, 40)
    scores = np.clip(np.round(quality[units] + bias[annotators] + rng.normal(0, 12, len(units))), 0, 100)
    if not args.no_missing:
        keep = rng.random(len(units)) > 0.1
        units, annotators, scores = units[keep], annotators[keep], scores[keep]
    print(
        f"{len(scores):,} ratings of {outputs:,} outputs ({args.systems} systems x {items:,} items), "
        f"bootstrap {args.bootstrap}"
    )
    results: dict[str, float] = {}
    table = ag.Table(units, annotators, scores)

    # ---- agreement ---------------------------------------------------------
    def agreement():
        return ag.agreement_figures(table, bootstrap=args.bootstrap, seed=0)

    timed(f"agreement: alpha x3, Fleiss, % agreement, bootstrap {args.bootstrap}", agreement, results)
    counts = ag.value_counts(table)
    timed("agreement: alpha interval, point estimate only", lambda: ag.krippendorff_alpha(counts, "interval"), results)

    import krippendorff

    # The package builds a units x values x values array: on all units that needs
    # ~16 GB, so the comparison runs on the first 20,000 units (both sides).
    sub = ag.Counts(counts.matrix[:20_000], counts.domain)
    timed("agreement: alpha interval, 20,000 units", lambda: ag.krippendorff_alpha(sub, "interval"), results)
    ref = timed(
        "  peer: krippendorff.alpha (value counts given), 20,000 units",
        lambda: krippendorff.alpha(
            value_counts=sub.matrix.toarray(), value_domain=sub.domain, level_of_measurement="interval"
        ),
        results,
    )
    assert abs(ref - ag.krippendorff_alpha(sub, "interval")) < 1e-9
    timed(
        "agreement: Cohen's kappa per annotator pair (780 pairs)", lambda: ag.cohen_kappas(table, min_common=2), results
    )

    # ---- correlation ---------------------------------------------------------
    sums = np.bincount(units, weights=scores, minlength=outputs)
    n = np.bincount(units, minlength=outputs)
    human = np.where(n > 0, sums / np.maximum(n, 1), np.nan).reshape(args.systems, items)
    metric = (quality + rng.normal(0, 10, outputs)).reshape(args.systems, items)
    from scipy import stats

    ok = ~np.isnan(human)
    timed("correlate: pearson, segment, flattened", lambda: co.correlate(human, metric, "pearson"), results)
    timed("  peer: scipy.stats.pearsonr", lambda: stats.pearsonr(human[ok], metric[ok]), results)
    timed("correlate: kendall tau-b, segment, flattened", lambda: co.correlate(human, metric, "kendall"), results)
    timed("correlate: spearman, segment, flattened", lambda: co.correlate(human, metric, "spearman"), results)
    timed(
        "correlate: pearson, grouped by item (average_by item)",
        lambda: co.correlate(human, metric, "pearson", "item"),
        results,
    )
    timed("correlate: kendall, grouped by item", lambda: co.correlate(human, metric, "kendall", "item"), results)
    timed(
        "correlate: acc23, grouped by item (all pairs, sample_rate 1)",
        lambda: co.correlate(human, metric, "acc23", "item"),
        results,
    )
    timed(
        "correlate: acc23, grouped by system (50M pairs per system: sampled, 5M in all)",
        lambda: co.correlate(human, metric, "acc23", "sys"),
        results,
    )
    timed(
        f"correlate: pearson bootstrap CI ({args.bootstrap} resamples)",
        lambda: co.bootstrap_ci(human, metric, "pearson", reps=args.bootstrap),
        results,
    )
    metric2 = (quality + rng.normal(0, 12, outputs)).reshape(args.systems, items)
    timed(
        "correlate --compare: PERM-BOTH, pearson (up to 1000 resamples)",
        lambda: co.perm_both(human, metric2, metric, "pearson"),
        results,
    )
    total = sum(v for k, v in results.items() if not k.startswith("  peer"))
    print(f"{'total (without peers)':<58} {total:8.2f} s")


if __name__ == "__main__":
    main()
