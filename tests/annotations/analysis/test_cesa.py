"""Contrastive ESA analysed like ESA and, pairwise, like side-by-side preferences: an imported
campaign whose screens hold 1-4 outputs of an item. Expected figures come from the reference
tools (krippendorff, choix) on preferences this test derives itself from the imported lines: the
two scores of every two outputs on one screen (the higher wins, equal scores tie), never from the
workbench's output. Then the export imports back with the same figures, spans and screens."""

import itertools
import json
from collections import defaultdict

import choix
import krippendorff
import numpy as np
import pytest

from annotations.analysis.report import agreement_report, ranking_report
from annotations.models import Campaign, SpanJudgement
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import SYSTEMS, dataset, run  # noqa: F401 (fixture)
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db

# Who saw which outputs of an item together: one screen of four, two of two, a screen of three
# and one of a single output (which gives no pair). Pairs exist only within a screen.
SCREENS = {"v1": [["s2", "s4", "s1", "s3"]], "v2": [["s3", "s1"], ["s4", "s2"]], "v3": [["s4", "s1", "s2"], ["s3"]]}


def _lines() -> list[dict]:
    rng = np.random.default_rng(7)
    lines = []
    for i in range(12):
        for annotator, screens in SCREENS.items():
            for screen in screens:
                for system in screen:
                    # Better systems score higher; steps of 10 make ties common.
                    score = float(
                        np.clip(10 * round((90 - 15 * SYSTEMS.index(system) + rng.normal(0, 15)) / 10), 0, 100)
                    )
                    spans = [{"start": 0, "end": 3, "severity": "major"}] if score < 50 else []
                    if (i + len(system)) % 4 == 0:
                        spans.append({"missing": True, "severity": "minor"})
                    lines.append(
                        {
                            "item": f"i{i}",
                            "system": system,
                            "annotator": annotator,
                            "criterion": "quality",
                            "score": score,
                            "spans": spans,
                            "shown_order": screen,
                        }
                    )
    return lines


def _derived(lines):
    """(item, x, y) with x before y by system name -> {annotator: 1 (x wins) | 0 (tie) | -1}."""
    by_screen = defaultdict(dict)
    for line in lines:
        by_screen[(line["annotator"], line["item"], tuple(line["shown_order"]))][line["system"]] = line["score"]
    votes = defaultdict(dict)
    for (annotator, item, _), scores in by_screen.items():
        for x, y in itertools.combinations(sorted(scores), 2):
            votes[(item, x, y)][annotator] = int(np.sign(scores[x] - scores[y]))
    return votes


def _alpha(units: dict, level: str) -> float:
    annotators = sorted({a for votes in units.values() for a in votes})
    keys = sorted(units)
    matrix = np.full((len(annotators), len(keys)), np.nan)
    for k, key in enumerate(keys):
        for a, v in units[key].items():
            matrix[annotators.index(a), k] = v
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)


@pytest.fixture
def cesa(dataset, tmp_path):  # noqa: F811
    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "contrastive",
        "--protocol",
        "cesa",
        "--criteria",
        "quality",
        "--tuple-size",
        "4",
        "--severities",
        "minor,major",
    )
    lines = _lines()
    assert run("import_judgements", str(write_jsonl(tmp_path / "c.jsonl", lines)), "--campaign", "contrastive")[
        "created"
    ] == len(lines)
    return lines


def test_agreement_like_esa_and_on_the_derived_pairs(cesa):
    fig = agreement_report(campaign=Campaign.objects.get(name="contrastive"), bootstrap=0)["criteria"]["quality"]
    # ESA's figure: interval alpha of the 0-100 scores, one unit per output.
    scores = defaultdict(dict)
    for line in cesa:
        scores[(line["item"], line["system"])][line["annotator"]] = line["score"]
    assert fig["headline"]["value"] == pytest.approx(_alpha(scores, "interval"), abs=1e-12)
    assert fig["spans"]["outputs"] == 48
    # The pairwise protocol's figure on the preferences the scores imply: nominal alpha over the
    # pairs of one screen, labelled as derived.
    derived = fig["pairwise_derived"]
    votes = _derived(cesa)
    assert len(votes) == 12 * 6  # every pair of the four systems shares a screen with someone
    assert derived["headline"]["level"] == "nominal"
    assert derived["headline"]["value"] == pytest.approx(_alpha(votes, "nominal"), abs=1e-12)
    assert derived["n_units"] == sum(1 for v in votes.values() if len(v) >= 2)
    assert "derived from cESA scores" in derived["headline"]["label"] and derived["derived_from"]
    # The command's text output prints it too, under its label.
    from io import StringIO

    from django.core.management import call_command

    text = StringIO()
    call_command("agreement", "--campaign", "contrastive", "--bootstrap", "0", stdout=text)
    assert f"  pairs: {derived['headline']['label']} = {derived['headline']['value']:.4f}" in text.getvalue()


def test_bradley_terry_and_win_rates_from_the_derived_pairs(cesa):
    ranking = ranking_report(campaign=Campaign.objects.get(name="contrastive"), bootstrap=5)
    rows = {r["system"]: r for r in ranking["criteria"]["quality"]}
    assert "derived from cESA scores" in ranking["pairwise_derived"]["from"]
    wins, won, seen = [], defaultdict(float), defaultdict(int)
    for (item, x, y), by_annotator in _derived(cesa).items():
        for v in by_annotator.values():
            seen[(item, x)] += 1
            seen[(item, y)] += 1
            won[(item, x)] += {1: 1, 0: 0.5, -1: 0}[v]
            won[(item, y)] += {1: 0, 0: 0.5, -1: 1}[v]
            if v:
                wins.append((SYSTEMS.index(x), SYSTEMS.index(y)) if v > 0 else (SYSTEMS.index(y), SYSTEMS.index(x)))
    expected = choix.ilsr_pairwise(4, wins, alpha=0.01)
    expected -= expected.mean()
    for s in SYSTEMS:
        assert rows[s]["bradley_terry"] == pytest.approx(expected[SYSTEMS.index(s)], abs=1e-6)
        rate = np.mean([won[(f"i{i}", s)] / seen[(f"i{i}", s)] for i in range(12)])
        assert rows[s]["win_rate"] == pytest.approx(rate, abs=1e-12)
        # The score stays ESA's: the mean of the system's outputs' mean scores.
        per_output = defaultdict(list)
        for line in cesa:
            if line["system"] == s:
                per_output[line["item"]].append(line["score"])
        assert rows[s]["score"] == pytest.approx(np.mean([np.mean(v) for v in per_output.values()]), abs=1e-9)


def test_correlate_adds_metric_agreement_on_the_derived_pairs(cesa):
    score_dataset("toy", "wer")
    res = run("correlate", "--campaign", "contrastive", "--metric", "wer", "--criterion", "quality")
    assert res["n"] == 48 and "pearson" in res  # like ESA: segment-level correlation
    assert res["pairwise_derived"]["pairs"] == len(_derived(cesa))
    assert 0 <= res["pairwise_derived"]["agreement"] <= 1


def test_the_export_imports_back_with_its_screens_spans_and_figures(cesa, tmp_path):
    campaign = Campaign.objects.get(name="contrastive")
    before = agreement_report(campaign=campaign, bootstrap=0)["criteria"]["quality"]
    out = tmp_path / "export"
    run("export_dataset", "--campaign", "contrastive", "--format", "jsonl", "--out", str(out))
    exported = [json.loads(line) for line in (out / "judgements.jsonl").read_text().splitlines()]
    assert len(exported) == len(cesa)
    # One ESA line per output: the lines of one screen share item, annotator and shown_order.
    first = exported[0]
    assert {"item", "system", "annotator", "criterion", "score", "spans", "shown_order"} <= set(first)
    screens = defaultdict(set)
    for line in exported:
        screens[(line["item"], line["annotator"], tuple(line["shown_order"]))].add(line["system"])
    assert all(set(screen) == systems for (_, _, screen), systems in screens.items())
    assert sorted(len(s) for s in screens.values()) == sorted(
        len(s) for screens_ in SCREENS.values() for s in screens_ for _ in range(12)
    )
    config = json.loads((out / "campaign.json").read_text())
    assert config["protocol"] == "cesa" and config["options"]["tuple_size"] == 4
    # The card and campaign.json give ESA's headline and, labelled, the one on the derived pairs.
    assert config["agreement"]["quality"]["value"] == pytest.approx(before["headline"]["value"], abs=1e-12)
    derived = config["agreement_pairwise_derived"]["quality"]
    assert derived["value"] == pytest.approx(before["pairwise_derived"]["headline"]["value"], abs=1e-12)
    assert "derived from cESA scores" in derived["label"]
    card = (out / "README.md").read_text()
    assert "- Agreement on the pairs derived from the scores: " in card

    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "again",
        "--protocol",
        "cesa",
        "--criteria",
        "quality",
        "--tuple-size",
        "4",
        "--severities",
        "minor,major",
    )
    assert run("import_judgements", str(out / "judgements.jsonl"), "--campaign", "again")["created"] == len(cesa)
    again = Campaign.objects.get(name="again")
    after = agreement_report(campaign=again, bootstrap=0)["criteria"]["quality"]
    for key in ("headline", "spans"):
        assert after[key]["value" if key == "headline" else "mean_f1"] == pytest.approx(
            before[key]["value" if key == "headline" else "mean_f1"], abs=1e-12
        )
    assert after["pairwise_derived"]["headline"]["value"] == pytest.approx(
        before["pairwise_derived"]["headline"]["value"], abs=1e-12
    )

    def stored(c):
        return sorted(
            (
                j.item.external_id,
                j.output.system.name,
                j.score,
                tuple(sorted((s.start or -1, s.end or -1, s.severity, s.missing) for s in j.spans.all())),
            )
            for j in SpanJudgement.objects.filter(campaign=c).select_related("item", "output__system")
        )

    assert stored(again) == stored(campaign)


def test_the_rankings_and_dashboard_pages_show_the_derived_figures_labelled(cesa, client):
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from annotations.models import Membership

    campaign = Campaign.objects.get(name="contrastive")
    user = get_user_model().objects.create_user("researcher-cesa", password="pw")
    Membership.objects.create(project=campaign.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    page = client.get(reverse("analysis-rankings", args=[campaign.pk])).content.decode()
    assert '<th class="num">Bradley-Terry</th><th class="num">Win rate</th>' in page
    assert 'id="pairs-derived"' in page and "derived from cESA scores" in page
    page = client.get(reverse("analysis-dashboard", args=[campaign.pk])).content.decode()
    assert 'data-derived="pairs"' in page and "quality (pairs derived from the scores)" in page
    csv_text = client.get(reverse("analysis-dashboard", args=[campaign.pk]), {"format": "csv"}).content.decode()
    assert "quality (pairs derived from the scores)" in csv_text
