"""The named cluster rules through the `rankings` command, the API, the page and the card, on a
campaign with two waves (issue 42 item 1), and rankings recomputed on the filtered systems
(issue 38 item 8)."""

import numpy as np
import pytest
from django.core.cache import cache
from django.utils.html import escape

from annotations.analysis import cluster_rules as cr
from annotations.models import Campaign, Membership
from tests.annotations.analysis.test_cluster_rules import script_clusters, script_ranges, script_systems
from tests.annotations.analysis.test_meta_evaluation import scored  # noqa: F401
from tests.annotations.analysis.test_protocols import dataset  # noqa: F401
from tests.annotations.analysis.test_waves import run, waves  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _script_data(first, second):
    """The two waves' judgements in WMT25's file format: per item and system, human1 and human2
    (each the mean of that wave's annotators, as the workbench scores an output)."""
    per = {}
    for wave, judgements in (("human1", first), ("human2", second)):
        for j in judgements:
            per.setdefault(j["item"], {}).setdefault(j["system"], {}).setdefault(wave, []).append(j["score"])
    return [
        {
            "doc_id": f"xx-yy_#_{item}",
            "scores": {s: {w: float(np.mean(v)) for w, v in waves_.items()} for s, waves_ in per[item].items()},
        }
        for item in sorted(per)
    ]


def _researcher(client, campaign):
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)


def test_rankings_command_equals_the_wmt25_script_on_two_waves(waves, client):  # noqa: F811
    first, second = waves
    systems = script_systems(_script_data(first, second), "xx-yy")
    ranges, range_clusters = script_ranges(systems)
    for name in ("likert", "likert-2"):  # either wave's page ranks both waves' observations
        got = run("rankings", "--campaign", name, "--criterion", "adequacy", "--rule", "wmt25")
        assert got["rule"]["name"] == "wmt25" and "05-compute_clusters.py" in got["rule"]["source"]
        assert [r["system"] for r in got["systems"]] == [s for s, _ in systems]
        assert [r["cluster"] for r in got["systems"]] == script_clusters(systems)
        assert [r["n"] for r in got["systems"]] == [int(np.sum(~np.isnan(v))) for _, v in systems]
        walked = run("rankings", "--campaign", name, "--criterion", "adequacy", "--rule", "wmt25-ranges")
        assert [r["rank_range"] for r in walked["systems"]] == ranges
        assert [r["cluster"] for r in walked["systems"]] == range_clusters

    campaign = Campaign.objects.get(name="likert")
    _researcher(client, campaign)
    api = client.get(f"/api/campaigns/{campaign.pk}/rankings/", {"rule": "wmt25-ranges"}).json()
    assert api["rule"]["name"] == "wmt25-ranges"
    assert [r["rank_range"] for r in api["rule_rankings"]["adequacy"]] == ranges
    assert client.get(f"/api/campaigns/{campaign.pk}/rankings/", {"rule": "nope"}).status_code == 400
    assert client.get(f"/api/campaigns/{campaign.pk}/rankings/", {"alpha": "2"}).status_code == 400
    page = client.get(f"/campaigns/{campaign.pk}/analysis/rankings/", {"rule": "wmt25-ranges"}).content.decode()
    assert escape(cr.get("wmt25-ranges").describe(alpha=0.05, resamples=100, seed=0)["label"]) in page
    assert "generated_human_ranking.tex" in page
    csv_text = client.get(
        f"/campaigns/{campaign.pk}/analysis/rankings/", {"rule": "wmt25-ranges", "format": "csv", "table": "rule"}
    ).content.decode()
    rows = [line.split(",") for line in csv_text.splitlines()[1:]]
    assert [[int(r[-3]), int(r[-2])] for r in rows] == ranges and all(r[1] == "wmt25-ranges" for r in rows)


def test_wmt26_seed_is_recorded_and_fixes_the_figures(scored):  # noqa: F811
    a = run(
        "rankings",
        "--campaign",
        "likert",
        "--criterion",
        "adequacy",
        "--rule",
        "wmt26",
        "--seed",
        "7",
        "--resamples",
        "50",
    )
    assert a["rule"]["seed"] == 7 and a["rule"]["resamples"] == 50 and "02b-analyze_results.py" in a["rule"]["source"]
    assert a == run(
        "rankings",
        "--campaign",
        "likert",
        "--criterion",
        "adequacy",
        "--rule",
        "wmt26",
        "--seed",
        "7",
        "--resamples",
        "50",
    )


def test_rankings_filter_recomputes_on_the_chosen_systems(scored, client):  # noqa: F811
    """Issue 38 item 8: excluding a system left ranks starting at #2 and ranges and clusters
    computed with it. Now everything is computed among the chosen systems."""
    cache.clear()
    campaign = Campaign.objects.get(name="likert")
    _researcher(client, campaign)
    kept = ["s2", "s3", "s4"]
    body = client.get(f"/api/campaigns/{campaign.pk}/rankings/", {"system": kept, "rule": "pairwise-ranges"}).json()
    rows = body["criteria"]["adequacy"]
    assert [r["system"] for r in rows] == kept and [r["rank"] for r in rows] == [1, 2, 3]
    assert [r["cluster"] for r in rows] == [1, 2, 3]
    assert max(r["rank_range"][1] for r in rows) == 3  # N is the number of chosen systems
    alone = run(
        "rankings",
        "--campaign",
        "likert",
        "--criterion",
        "adequacy",
        "--rule",
        "pairwise-ranges",
        *[x for s in kept for x in ("--system", s)],
    )
    assert body["rule_rankings"]["adequacy"] == alone["systems"]
    assert alone["systems_filter"] == kept
    for metric in body["metrics"].values():
        assert sorted(r["system"] for r in metric["ranking"]) == kept
        assert sorted(r["rank"] for r in metric["ranking"]) == [1, 2, 3]
    page = client.get(f"/campaigns/{campaign.pk}/analysis/rankings/", {"system": kept}).content.decode()
    assert 'id="systems-filter-note"' in page
    assert 'data-system="s1"' not in page
    csv_text = (
        client.get(f"/campaigns/{campaign.pk}/analysis/rankings/", {"system": kept, "format": "csv"})
        .content.decode()
        .splitlines()
    )
    human = [line.split(",") for line in csv_text[1:] if line.startswith("human:")]
    assert [r[2] for r in human] == ["1", "2", "3"]
