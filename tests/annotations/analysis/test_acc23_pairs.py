"""acc23 significance by permuting pairs, mt-metrics-eval's `perm_test="pairs"` (issue 42 item 5)."""

import numpy as np
import pytest

from annotations.analysis import correlation as co
from tests.annotations.analysis.test_meta_evaluation import generated, scored  # noqa: F401
from tests.annotations.analysis.test_protocols import dataset  # noqa: F401


def close_metrics():
    human, a, _ = generated()
    b = np.round(a + np.random.default_rng(11).normal(0, 3, a.shape), 3)
    return human, a, b


# google-research/mt-metrics-eval at commit 68a481aea1a7 (var/mtme copy, numpy 2.4, scipy 1.17):
#   stats.PairwisePermutationSigDiff(Correlation(6, h, a), Correlation(6, h, b), "acc23", avg, k=200,
#                                    sample_rate=1.0, params=PermutationSigDiffParams(block_size=B))
# with its `np.random.binomial(1, 0.5, (n, n))` replaced by a matrix whose upper triangle (row-major)
# holds `default_rng(seed).integers(0, 2, n(n-1)/2)`, zeros elsewhere: the draws perm_pairs takes.
# (p-value, delta, resamples used); both epsilons 0.0 there and here.
MTME = {
    ("none", 0, 1000): (1.0, -0.013214783821478338, 200),
    ("item", 0, 1000): (0.685, -0.0050000000000000044, 200),
    ("item", 1, 1000): (0.635, -0.0050000000000000044, 200),
    ("item", 0, 50): (0.64, -0.0050000000000000044, 50),
    ("item", 1, 50): (0.54, -0.0050000000000000044, 50),
}


@pytest.mark.parametrize("avg, seed, block", list(MTME))
def test_perm_pairs_equals_mt_metrics_eval(avg, seed, block):
    human, a, b = close_metrics()
    got = co.perm_pairs(human, a, b, avg, k=200, seed=seed, block_size=block)
    p, delta, used = MTME[(avg, seed, block)]
    assert got["p_value"] == pytest.approx(p, abs=1e-12)
    assert got["delta"] == pytest.approx(delta, abs=1e-12)
    assert got["resamples"] == used
    assert got["epsilon1"] == co.correlate(human, a, "acc23", avg)["epsilon"]
    assert got["delta"] == pytest.approx(
        co.correlate(human, b, "acc23", avg)["value"] - co.correlate(human, a, "acc23", avg)["value"], abs=1e-12
    )


@pytest.mark.django_db
def test_correlate_acc23_compare_reports_both_tests(scored):  # noqa: F811
    from tests.annotations.analysis.test_meta_evaluation import run

    out = run(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--method",
        "acc23",
        "--compare",
        "chrf",
        "--bootstrap",
        "0",
    )
    assert "PERM-BOTH" in out["test"] and 0 <= out["p_value"] <= 1
    pairs = out["pairs_test"]
    assert "PairwisePermutationSigDiff" in pairs["label"] and pairs["seed"] == 0
    assert 0 <= pairs["p_value"] <= 1 and pairs["delta"] == pytest.approx(out["delta"], abs=1e-12)


@pytest.mark.django_db
def test_the_pages_pairs_only_comparison_is_correlates_and_skips_above_its_budget(scored):  # noqa: F811
    """The meta page asks correlate_report for the pairs test alone (no PERM-BOTH), within a budget
    of pairs per resample: the same p-value as the command's, or the reason it was not run."""
    from annotations.analysis import report
    from annotations.models import Campaign
    from tests.annotations.analysis.test_meta_evaluation import run

    campaign = Campaign.objects.get(name="likert")
    args = dict(campaign=campaign, metric="bleu", criterion="adequacy", method="acc23", group_by="item")
    full = run(
        *("correlate", "--campaign", "likert", "--metric", "bleu", "--criterion", "adequacy"),
        *("--method", "acc23", "--group-by", "item", "--compare", "chrf", "--bootstrap", "0"),
    )
    only = report.correlate_report(**args, compare="chrf", bootstrap=0, perm_both_test=False)
    assert "p_value" not in only and only["compare"] == "chrf"
    assert only["pairs_test"]["p_value"] == full["pairs_test"]["p_value"]
    small = report.correlate_report(**args, compare="chrf", bootstrap=0, perm_both_test=False, max_pairs=1)
    assert small["pairs_test"]["p_value"] is None and "too many for this page" in small["pairs_test"]["skipped"]
