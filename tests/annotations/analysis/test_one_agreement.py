"""One agreement figure per criterion, the same on every surface.

One campaign per protocol (ASSET 0-100 ratings and RankME magnitudes from ../shared/data, and
simulated pairwise, best-worst, ESA and MQM judgements): the dashboard, `agreement --json`, the
agreement API, the quality API, the exported card and campaign.json report the same alpha (to
1e-9) under the same label, equal to the `krippendorff` package on the reliability matrix the
protocol defines (built here from the raw data, not from our tables).
"""

import csv
import html
import json
import random
import re
from collections import defaultdict
from io import StringIO

import krippendorff
import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Campaign, Membership
from tests.annotations.export.conftest import asset_campaign, asset_ratings, read_jsonl, run, write_jsonl  # noqa: F401

pytestmark = pytest.mark.django_db


def _matrix(cells: dict[tuple, float]) -> np.ndarray:
    """annotators x units reliability matrix from {(annotator, unit): value}."""
    annotators = sorted({a for a, _ in cells})
    units = sorted({u for _, u in cells}, key=str)
    m = np.full((len(annotators), len(units)), np.nan)
    ai = {a: k for k, a in enumerate(annotators)}
    ui = {u: k for k, u in enumerate(units)}
    for (a, u), v in cells.items():
        m[ai[a], ui[u]] = v
    return m


def _zscored(cells: dict[tuple, float]) -> dict[tuple, float]:
    """Each annotator's values as z-scores over their own values (population s.d.)."""
    by_annotator = defaultdict(list)
    for (a, _u), v in cells.items():
        by_annotator[a].append(v)
    stats = {a: (np.mean(v), np.std(v)) for a, v in by_annotator.items()}
    return {(a, u): (v - stats[a][0]) / stats[a][1] if stats[a][1] > 0 else 0.0 for (a, u), v in cells.items()}


def _surfaces(campaign: Campaign, tmp_path) -> dict[str, dict[str, dict]]:
    """criterion -> surface -> {"value": alpha, "label": label} as each surface reports it."""
    User = get_user_model()
    user = User.objects.create_user("researcher-one-alpha", password="pw")
    Membership.objects.create(project=campaign.project, user=user, role=Membership.Role.RESEARCHER)
    found: dict[str, dict[str, dict]] = defaultdict(dict)

    command = run("agreement", "--campaign", campaign.name, "--bootstrap", "0")
    for c, fig in command["criteria"].items():
        found[c]["command"] = {"value": fig["headline"]["value"], "label": fig["headline"]["label"]}

    api = APIClient()
    api.force_authenticate(user)
    body = api.get(reverse("api-campaign-agreement", args=[campaign.pk]), {"bootstrap": 0}).json()
    for c, fig in body["criteria"].items():
        found[c]["agreement API"] = {"value": fig["headline"]["value"], "label": fig["headline"]["label"]}
    quality = api.get(reverse("api-campaign-quality", args=[campaign.pk])).json()["agreement"]
    for c, fig in quality.items():
        found[c]["quality API"] = {"value": fig["all"]["value"], "label": fig["all"]["label"]}
        assert fig["included"]["value"] == fig["all"]["value"]  # no quality control: nobody excluded

    client = Client()
    client.force_login(user)
    page = html.unescape(client.get(reverse("analysis-dashboard", args=[campaign.pk])).content.decode())
    rows = re.findall(
        r'<tr data-criterion="([^"]+)">\s*<td>[^<]*</td>\s*<td class="small">([^<]*)<br>.*?'
        r'data-alpha="([^"]+)"',
        page,
        flags=re.S,
    )
    assert rows, "the dashboard shows no agreement row"
    for c, label, value in rows:
        found[c]["dashboard"] = {"value": None if value == "None" else float(value), "label": label}
    out = tmp_path / f"export-{campaign.pk}"
    run("export_dataset", "--campaign", campaign.name, "--format", "jsonl", "--out", str(out))
    configuration = json.loads((out / "campaign.json").read_text(encoding="utf-8"))
    card = (out / "README.md").read_text(encoding="utf-8")
    for c, head in configuration["agreement"].items():
        found[c]["campaign.json"] = {"value": head["value"], "label": head["label"]}
        section = card.split(f"### Criterion `{c}`")[1].split("###")[0]
        m = re.search(r"\): (.+?) = [0-9.–-]+ \(unrounded ([-0-9.e]+)\)", section)
        found[c]["card"] = {"value": float(m.group(2)), "label": m.group(1)}
    return found


def _check(campaign: Campaign, tmp_path, expected: dict[str, float], label_words: str) -> None:
    surfaces = _surfaces(campaign, tmp_path)
    assert set(surfaces) == set(expected)
    for criterion, alpha in expected.items():
        seen = surfaces[criterion]
        assert set(seen) == {"command", "agreement API", "quality API", "dashboard", "campaign.json", "card"}
        labels = {s["label"] for s in seen.values()}
        assert len(labels) == 1, (criterion, labels)
        assert label_words in labels.pop()
        for surface, figure in seen.items():
            assert figure["value"] == pytest.approx(alpha, abs=1e-9), (criterion, surface)
    # The command's text output prints the same headline, label and value (rounded to 4 places).
    text = StringIO()
    call_command("agreement", "--campaign", campaign.name, "--bootstrap", "0", stdout=text)
    for criterion, alpha in expected.items():
        label = surfaces[criterion]["command"]["label"]
        assert f"{criterion}: {label} = {alpha:.4f}" in text.getvalue()


def test_asset_likert_ratings_agree_everywhere(asset_campaign, asset_ratings, tmp_path):
    expected = {}
    for c in ("meaning", "fluency", "simplicity"):
        cells = {
            (r["worker_id"], r["original_sentence_id"]): float(r["rating"]) for r in asset_ratings if r["aspect"] == c
        }
        expected[c] = krippendorff.alpha(reliability_data=_matrix(cells), level_of_measurement="interval")
    _check(asset_campaign, tmp_path, expected, "interval, raw values; unit: output")


@pytest.fixture
def rankme_rows(shared_data):
    with (shared_data / "rankme" / "stp1_rankME.csv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_rankme_magnitudes_agree_everywhere(rankme_rows, tmp_path):
    criteria = ("informativeness", "naturalness", "quality")
    outputs: dict[str, dict[str, str]] = defaultdict(dict)
    judgements, cells = [], {c: {} for c in criteria}
    for r in rankme_rows:
        for k in (1, 2, 3):
            outputs[r["mr_id"]].setdefault(r[f"team{k}"], r[f"ref{k}"])
            for c in criteria:
                key = (r["_worker_id"], (r["mr_id"], r[f"team{k}"]))
                if key in cells[c]:
                    continue  # a worker who rated the same output twice: the first rating counts
                cells[c][key] = float(r[f"{c}{k}"])
                judgements.append(
                    {
                        "item": r["mr_id"],
                        "system": r[f"team{k}"],
                        "annotator": r["_worker_id"],
                        "criterion": c,
                        "score": float(r[f"{c}{k}"]),
                    }
                )
    write_jsonl(tmp_path / "rankme.jsonl", ({"item": i, "outputs": o} for i, o in outputs.items()))
    write_jsonl(tmp_path / "rankme-j.jsonl", judgements)
    run("import_dataset", str(tmp_path / "rankme.jsonl"), "--dataset", "rankme")
    run(
        "create_campaign",
        "--dataset",
        "rankme",
        "--name",
        "rankme",
        "--protocol",
        "rankme",
        "--criteria",
        ",".join(criteria),
        "--redundancy",
        "3",
    )
    run("import_judgements", str(tmp_path / "rankme-j.jsonl"), "--campaign", "rankme")
    expected = {
        c: krippendorff.alpha(reliability_data=_matrix(_zscored(cells[c])), level_of_measurement="interval")
        for c in criteria
    }
    _check(Campaign.objects.get(name="rankme"), tmp_path, expected, "interval, per-annotator z-scores")


def _simulated_dataset(tmp_path, n_items=30, systems=("s1", "s2", "s3", "s4")):
    rng = random.Random(7)
    quality = {s: q for s, q in zip(systems, (0.2, 0.45, 0.6, 0.8))}
    items = {f"i{k}": {s: f"output {s} {k} " + "word " * rng.randint(2, 8) for s in systems} for k in range(n_items)}
    write_jsonl(tmp_path / "sim.jsonl", ({"item": i, "outputs": o} for i, o in items.items()))
    run("import_dataset", str(tmp_path / "sim.jsonl"), "--dataset", "sim")
    return rng, items, quality


def _campaign(tmp_path, name: str, protocol: str, criterion: str, judgements: list[dict]) -> Campaign:
    """A campaign on the simulated dataset with these judgements, through the public commands."""
    write_jsonl(tmp_path / f"{name}.jsonl", judgements)
    run(
        "create_campaign",
        "--dataset",
        "sim",
        "--name",
        name,
        "--protocol",
        protocol,
        "--criteria",
        criterion,
        "--redundancy",
        "3",
    )
    run("import_judgements", str(tmp_path / f"{name}.jsonl"), "--campaign", name)
    return Campaign.objects.get(name=name)


def test_pairwise_choices_agree_everywhere(tmp_path):
    rng, items, quality = _simulated_dataset(tmp_path)
    judgements, cells = [], {}
    for item in items:
        for a, b in (("s1", "s2"), ("s2", "s3"), ("s3", "s4"), ("s1", "s4")):
            for annotator in rng.sample([f"w{k}" for k in range(6)], rng.choice([1, 2, 3])):
                d = quality[a] - quality[b] + rng.gauss(0, 0.3)
                winner = "tie" if abs(d) < 0.1 else "a" if d > 0 else "b"
                judgements.append(
                    {"item": item, "annotator": annotator, "criterion": "overall", "a": a, "b": b, "winner": winner}
                )
                cells[(annotator, (item, a, b))] = {"a": 0, "b": 1, "tie": 2}[winner]
    campaign = _campaign(tmp_path, "pairs", "pairwise", "overall", judgements)
    expected = {"overall": krippendorff.alpha(reliability_data=_matrix(cells), level_of_measurement="nominal")}
    _check(campaign, tmp_path, expected, "nominal, raw values; unit: pair of outputs")


def test_best_worst_choices_agree_everywhere(tmp_path):
    rng, items, quality = _simulated_dataset(tmp_path)
    judgements, cells = [], {}
    for item in items:
        tuple_ = ["s1", "s2", "s3", "s4"]
        for annotator in rng.sample([f"w{k}" for k in range(6)], rng.choice([1, 2, 3])):
            noisy = sorted(tuple_, key=lambda s: quality[s] + rng.gauss(0, 0.25))
            best, worst = noisy[-1], noisy[0]
            judgements.append(
                {
                    "item": item,
                    "annotator": annotator,
                    "criterion": "overall",
                    "outputs": tuple_,
                    "best": best,
                    "worst": worst,
                }
            )
            for s in tuple_:
                cells[(annotator, (item, s))] = 1 if s == best else -1 if s == worst else 0
    campaign = _campaign(tmp_path, "bws", "bws", "overall", judgements)
    expected = {"overall": krippendorff.alpha(reliability_data=_matrix(cells), level_of_measurement="nominal")}
    _check(campaign, tmp_path, expected, "nominal, raw values; unit: output within a tuple")


def test_esa_scores_agree_everywhere(tmp_path):
    rng, items, quality = _simulated_dataset(tmp_path)
    judgements, cells = [], {}
    for item, outputs in items.items():
        for system, text in outputs.items():
            for annotator in rng.sample([f"w{k}" for k in range(5)], rng.choice([1, 2, 3])):
                score = max(0, min(100, round(100 * quality[system] + rng.gauss(0, 12))))
                spans = [{"start": 0, "end": 6, "severity": "minor"}] if score < 50 else []
                judgements.append(
                    {
                        "item": item,
                        "system": system,
                        "annotator": annotator,
                        "criterion": "quality",
                        "score": score,
                        "spans": spans,
                    }
                )
                cells[(annotator, (item, system))] = float(score)
    campaign = _campaign(tmp_path, "esa", "esa", "quality", judgements)
    expected = {"quality": krippendorff.alpha(reliability_data=_matrix(cells), level_of_measurement="interval")}
    _check(campaign, tmp_path, expected, "interval, raw values; unit: output")
    exported = read_jsonl(tmp_path / f"export-{campaign.pk}" / "judgements.jsonl")
    assert len(exported) == len(judgements)


def test_cesa_scores_agree_everywhere_and_the_dashboard_adds_the_derived_pairs(tmp_path):
    """Contrastive ESA: ESA's figure on every surface; the dashboard adds, on a row of its own, the
    nominal alpha of the preferences the scores of one screen imply (krippendorff on votes built
    here: the higher score wins, equal scores tie; units are (item, system x, system y))."""
    rng, items, quality = _simulated_dataset(tmp_path)
    judgements, cells, votes = [], {}, {}
    for item in items:
        for annotator in rng.sample([f"w{k}" for k in range(5)], rng.choice([1, 2, 3])):
            screen = rng.sample(["s1", "s2", "s3", "s4"], 3)
            scores = {s: max(0, min(100, 10 * round(10 * quality[s] + rng.gauss(0, 1.5)))) for s in screen}
            for system, score in scores.items():
                judgements.append(
                    {
                        "item": item,
                        "system": system,
                        "annotator": annotator,
                        "criterion": "quality",
                        "score": score,
                        "spans": [],
                        "shown_order": screen,
                    }
                )
                cells[(annotator, (item, system))] = float(score)
            for x, y in ((x, y) for x in sorted(screen) for y in sorted(screen) if x < y):
                votes[(annotator, (item, x, y))] = int(np.sign(scores[x] - scores[y]))
    campaign = _campaign(tmp_path, "cesa", "cesa", "quality", judgements)
    expected = {"quality": krippendorff.alpha(reliability_data=_matrix(cells), level_of_measurement="interval")}
    _check(campaign, tmp_path, expected, "interval, raw values; unit: output")
    user = get_user_model().objects.get(username="researcher-one-alpha")
    client = Client()
    client.force_login(user)
    page = html.unescape(client.get(reverse("analysis-dashboard", args=[campaign.pk])).content.decode())
    derived = re.search(
        r'<tr data-criterion="quality" data-derived="pairs">\s*<td>([^<]*)</td>\s*'
        r'<td class="small">([^<]*)<br>.*?data-alpha="([^"]+)"',
        page,
        flags=re.S,
    )
    assert derived.group(1) == "quality (pairs derived from the scores)"
    assert "nominal" in derived.group(2) and "derived from cESA scores" in derived.group(2)
    assert float(derived.group(3)) == pytest.approx(
        krippendorff.alpha(reliability_data=_matrix(votes), level_of_measurement="nominal"), abs=1e-9
    )


def test_mqm_scores_agree_everywhere(tmp_path):
    """MQM: the value is the MQM score of each rater's spans (score_mqm.py's default weights:
    major 5, minor 1, neutral 0, minor Fluency/Punctuation 0.1), negated."""
    rng, items, quality = _simulated_dataset(tmp_path)
    weights = {
        ("major", "Accuracy/Mistranslation"): 5.0,
        ("minor", "Fluency/Grammar"): 1.0,
        ("minor", "Fluency/Punctuation"): 0.1,
        ("neutral", "Style/Awkward"): 0.0,
    }
    judgements, cells = [], {}
    for item, outputs in items.items():
        for system, text in outputs.items():
            for annotator in rng.sample([f"w{k}" for k in range(5)], rng.choice([1, 2, 3])):
                spans = []
                for k, (severity, category) in enumerate(weights):
                    if rng.random() > quality[system]:
                        spans.append({"start": k, "end": k + 1, "severity": severity, "category": category})
                judgements.append(
                    {"item": item, "system": system, "annotator": annotator, "criterion": "mqm", "spans": spans}
                )
                cells[(annotator, (item, system))] = -sum(weights[(s["severity"], s["category"])] for s in spans)
    campaign = _campaign(tmp_path, "mqm", "mqm", "mqm", judgements)
    expected = {"mqm": krippendorff.alpha(reliability_data=_matrix(cells), level_of_measurement="interval")}
    _check(campaign, tmp_path, expected, "interval, raw values; unit: output")
