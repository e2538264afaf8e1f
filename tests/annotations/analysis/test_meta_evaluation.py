"""Soft pairwise accuracy, pairwise difference Pearson, metric clusters (--compare-all), against
google-research/mt-metrics-eval; CV* against Belz et al. (2022)."""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.analysis import correlation as co, waves as wv
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import SYSTEMS, _likert, dataset  # noqa: F401


def generated(seed=7, n_sys=6, n_seg=40):
    """Six systems x 40 segments; metric a follows the humans, metric b is noise."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(0, 1, n_sys)
    human = np.round(60 + 10 * quality[:, None] + rng.normal(0, 8, (n_sys, n_seg)), 2)
    metric_a = np.round(0.5 * human + rng.normal(0, 6, (n_sys, n_seg)), 3)
    metric_b = np.round(rng.normal(0, 6, (n_sys, n_seg)), 3)
    return human, metric_a, metric_b


# Expected values: google-research/mt-metrics-eval at commit 68a481aea1a7 (run from a scratch
# copy in /tmp with numpy 2 / scipy, apache_beam and dacite stubbed out), on `generated()`:
#   stats.Correlation(6, list(h.ravel()), list(m.ravel())).PairwiseConfidenceError()[0]
#   stats.Correlation(6, list(h.mean(1)), list(m.mean(1))).Pearson(pdp=True)[0]
#   stats.Correlation(6, list(h.ravel()), list(m.ravel())).Pearson(average_by='item', pdp=True)[0]
MTME = {
    "a": {"spa": 0.8246, "pdp_sys": 0.9155714167381263, "pdp_item": 0.5664364212216677},
    "b": {"spa": 0.7614666666666667, "pdp_sys": 0.7282841867094095, "pdp_item": 0.03989644435472593},
}


def test_spa_and_pdp_equal_mt_metrics_eval():
    human, a, b = generated()
    for name, metric in (("a", a), ("b", b)):
        assert co.spa(human, metric)["value"] == pytest.approx(MTME[name]["spa"], abs=1e-12)
        assert co.pdp(human.mean(axis=1), metric.mean(axis=1))["value"] == pytest.approx(
            MTME[name]["pdp_sys"], abs=1e-12
        )
        assert co.pdp(human, metric, "item")["value"] == pytest.approx(MTME[name]["pdp_item"], abs=1e-12)
    # Another seed draws other permutations: a different figure (the seed is part of the result).
    assert co.spa(human, a, seed=0)["value"] != MTME["a"]["spa"]


def test_spa_leaves_out_items_some_system_lacks():
    human, a, _ = generated()
    holed = human.copy()
    holed[2, 5] = np.nan
    keep = [k for k in range(human.shape[1]) if k != 5]
    assert co.spa(holed, a)["value"] == co.spa(human[:, keep], a[:, keep])["value"]


# mt-metrics-eval data.AssignRanks(P, 0.05) on these matrices (same scratch copy): [1, 1, 2, 2, 3], [1, 2, 3].
RANKS = [
    (
        np.array(
            [
                [0, 0.30, 0.04, 0.01, 0.00],
                [0, 0, 0.20, 0.06, 0.01],
                [0, 0, 0, 0.50, 0.03],
                [0, 0, 0, 0, 0.04],
                [0, 0, 0, 0, 0],
            ]
        ),
        [1, 1, 2, 2, 3],
    ),
    (np.array([[0, 0.05, 0.2], [0, 0, 0.05], [0, 0, 0]]), [1, 2, 3]),
]


@pytest.mark.parametrize("p_values, expected", RANKS)
def test_assign_ranks_equals_mt_metrics_eval(p_values, expected):
    assert co.assign_ranks(p_values, 0.05) == expected


def test_cv_star_equals_belz_et_al_2022():
    # Table 4 of Belz, Popovic & Mille (2022), as checked by their coeff-var code (check_cv).
    for values, published in (
        ([84.51, 84.50, 87.46, 85.60, 84.20, 86.61, 86.20], 1.562),
        ([30.65, 30.65, 29.13, 30.65, 29.96], 2.487),
        ([87.50, 80.75, 89.36, 88.10, 89.64, 88.80], 4.176),
        ([31.11, 30.28, 31.11, 29.12], 3.572),
    ):
        assert round(wv.cv_star(values), 3) == published
    assert wv.cv_star([50.0]) is None and wv.cv_star([0.0, 0.0]) is None


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def scored(dataset, tmp_path):  # noqa: F811
    judgements = _likert(tmp_path)
    score_dataset("toy", "bleu")
    score_dataset("toy", "wer")
    score_dataset("toy", "chrf")
    return judgements


def _matrices(judgements, metric_json):
    """systems x items: mean human score per output; the metric's segment scores from `score --json`."""
    items = sorted({j["item"] for j in judgements})
    H = np.full((len(SYSTEMS), len(items)), np.nan)
    for si, s in enumerate(SYSTEMS):
        for ii, i in enumerate(items):
            H[si, ii] = np.mean([j["score"] for j in judgements if j["system"] == s and j["item"] == i])
    return items, H


@pytest.mark.django_db
def test_correlate_spa_command_and_compare_all(scored):
    from annotations.analysis.report import _matrices as matrices, human_output_scores, load
    from annotations.models import Campaign
    from annotations.selectors.outputs import output_index
    from metrics.models import MetricRun
    from metrics.selectors import scores_by_output

    result = run("correlate", "--campaign", "likert", "--metric", "bleu", "--criterion", "adequacy", "--method", "spa")
    assert result["level"] == "system" and result["permutations"]["seed"] == 4
    assert result["permutations"]["permutations"] == 1000
    # The same figure from the matrices assembled here from the imported judgements.
    items, H = _matrices(scored, None)
    campaign = Campaign.objects.get(name="likert")
    run_ = MetricRun.objects.filter(metric="bleu").latest("id")
    outputs = output_index(campaign=campaign)
    human = human_output_scores(load(campaign=campaign, criterion="adequacy"), "adequacy")
    _, _, H2, M = matrices(outputs, human, scores_by_output(run=run_), 1.0)
    np.testing.assert_allclose(H2, H)
    assert result["spa"] == pytest.approx(co.spa(H, M)["value"], abs=1e-12)

    pdp = run(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--method",
        "pdp",
        "--group-by",
        "item",
        "--bootstrap",
        "10",
    )
    assert pdp["pdp"] == pytest.approx(co.pdp(H, M, "item")["value"], abs=1e-12)

    full = run(
        "correlate",
        "--campaign",
        "likert",
        "--criterion",
        "adequacy",
        "--method",
        "spa",
        "--compare-all",
        "--resamples",
        "200",
    )
    names = [m["metric"] for m in full["metrics"]]
    assert sorted(names) == ["bleu", "chrf", "wer"]
    values = [m["value"] for m in full["metrics"]]
    assert values == sorted(values, reverse=True)
    assert [n for cluster in full["clusters"] for n in cluster] == names
    P = np.zeros((3, 3))
    for a in range(3):
        for b in range(a + 1, 3):
            P[a, b] = full["p_values"][names[a]][names[b]]
    ranks = co.assign_ranks(P, 0.05)
    assert [m["rank"] for m in full["metrics"]] == ranks
    assert full["seed"] == 0 and full["resamples"] == 200

    with pytest.raises(CommandError, match="leave out --metric"):
        run("correlate", "--campaign", "likert", "--criterion", "adequacy", "--compare-all", "--metric", "bleu")
    with pytest.raises(CommandError, match="give --metric"):
        run("correlate", "--campaign", "likert", "--criterion", "adequacy")


def test_paired_wilcoxon_rank_ranges_against_scipy():
    from scipy import stats

    from annotations.analysis import systems as sy

    rng = np.random.default_rng(3)
    base = rng.normal(60, 10, 12)  # items differ a lot: only a paired test sees small system gaps
    wobble = np.array([0.5, -0.5] * 6)
    gaps = np.linspace(1, 3, 12)  # distinct differences: scipy's exact distribution
    scores = {"A": base + 2, "B": base + 2 + wobble, "C": base + 2 - gaps, "D": base - 2 - gaps}
    by_item = {s: {f"i{k}": float(v) for k, v in enumerate(vals)} for s, vals in scores.items()}
    order = ["B", "A", "C", "D"]  # best first (B's mean is A's; the order given is kept)
    for a in order:
        for b in order:
            if a != b:
                d = scores[a] - scores[b]
                # Ties (A vs B: every |d| is 0.5): the normal approximation; none: the exact distribution.
                method = "asymptotic" if len(np.unique(np.abs(d))) < len(d) else "exact"
                assert sy.wilcoxon_method(d) == method
                expected = stats.wilcoxon(d, alternative="greater", method=method).pvalue
                assert sy.paired_p(by_item[a], by_item[b]) == pytest.approx(expected, rel=1e-12)
    got = sy.paired_ranks(by_item, order)
    # A and B tie (alternating +-0.5: p about 0.5 both ways); both beat C and D on every item
    # (exact p = 1/4096), C beats D.
    assert got == {
        "B": {"rank_range": [1, 2], "paired_cluster": 1},
        "A": {"rank_range": [1, 2], "paired_cluster": 1},
        "C": {"rank_range": [3, 3], "paired_cluster": 2},
        "D": {"rank_range": [4, 4], "paired_cluster": 3},
    }
    # The unpaired rank-sum clusters cannot separate them (items vary by 10 points).
    assert {r["cluster"] for r in sy.clusters({s: v for s, v in scores.items()})} == {1}
    # Lower-is-better flips the direction; missing items are left out of the pairs.
    flipped = sy.paired_ranks(by_item, ["D", "C", "A", "B"], higher_is_better=False)
    assert flipped["D"]["rank_range"] == [1, 1] and flipped["B"]["rank_range"] == [3, 4]
    del by_item["C"]["i0"]
    assert sy.paired_p(by_item["A"], by_item["C"]) == pytest.approx(
        stats.wilcoxon((scores["A"] - scores["C"])[1:], alternative="greater", method="exact").pvalue
    )


@pytest.mark.django_db
def test_rankings_carry_the_paired_clusters(scored, client):
    from annotations.analysis import systems as sy
    from annotations.models import Campaign, Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    campaign = Campaign.objects.get(name="likert")
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    body = client.get(f"/api/campaigns/{campaign.pk}/rankings/").json()
    assert "paired Wilcoxon signed-rank" in body["paired_test"]
    rows = body["criteria"]["adequacy"]
    # Rebuilt here from the imported judgements: each output's mean score, by system and item.
    by_item = {}
    for j in scored:
        by_item.setdefault(j["system"], {}).setdefault(j["item"], []).append(j["score"])
    by_item = {s: {i: float(np.mean(v)) for i, v in items.items()} for s, items in by_item.items()}
    expected = sy.paired_ranks(by_item, [r["system"] for r in rows])
    assert {
        r["system"]: {"rank_range": r["rank_range"], "paired_cluster": r["paired_cluster"]} for r in rows
    } == expected
    for metric in body["metrics"].values():
        assert all(len(r["rank_range"]) == 2 for r in metric["ranking"])
    csv_text = client.get(f"/campaigns/{campaign.pk}/analysis/rankings/", {"format": "csv"}).content.decode()
    assert "paired_cluster,rank_range_low,rank_range_high" in csv_text.splitlines()[0]
