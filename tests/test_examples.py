"""The worked examples (examples/<protocol>/) end to end through the public commands, with the
expected figures computed here from reference tools: krippendorff for alpha, scipy for
correlations, sacrebleu for BLEU and chrF, and a transcription of mt-metrics-eval's score_mqm.py
weighting for MQM scores. Also: each example's campaign.json validates against the published
schema, and exporting the campaign writes a campaign.json that re-creates the same settings."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from io import StringIO
from pathlib import Path

import jsonschema
import krippendorff
import numpy as np
import pytest
import sacrebleu
from django.core.management import call_command
from scipy import stats

from annotations import protocols
from annotations.models import Campaign
from annotations.services.campaign_files import campaign_file_schema
from tests.annotations.services.test_campaign_files import settings_of

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NAMES = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and (p / "campaign.json").exists())
BUILT_IN = {"likert", "rankme", "pairwise", "bws", "esa", "cesa", "mqm"}
# mt-metrics-eval's score_mqm.py default weights (its --weights default), as the MQM example uses them.
SCORE_MQM_WEIGHTS = "Major:5 Minor:1 Neutral:0 Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1"


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_every_built_in_protocol_has_an_example():
    assert BUILT_IN <= set(NAMES) and set(NAMES) <= set(protocols.names())
    for name in NAMES:
        assert (EXAMPLES / name / "README.md").exists(), name


# ---- expected figures, from the files and reference tools -------------------------------------


def score_mqm_weight(weights: dict[str, float], severity: str, category: str) -> float:
    """score_mqm.py: the weight of the most specific "severity/category/..." key, dropping the
    category's last part until a key matches; 0 when none does (keys case-insensitive)."""
    parts = [severity.lower()] + [p.lower() for p in category.split("/")] if category else [severity.lower()]
    while parts:
        key = "/".join(parts)
        if key in weights:
            return weights[key]
        parts = parts[:-1]
    return 0.0


def judgement_values(name: str, folder: Path) -> tuple[list[tuple], str]:
    """(annotator, unit, value, (item, system) the value scores or None) per judgement, and the
    level of Krippendorff's alpha the protocol reports."""
    if name == "mqm":
        weights = {k.lower(): float(v) for k, v in (e.rsplit(":", 1) for e in SCORE_MQM_WEIGHTS.split())}
        penalty: dict[tuple, float] = defaultdict(float)
        with open(folder / "judgements.tsv", encoding="utf-8") as f:
            for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                weight = (
                    0.0
                    if row["category"].lower() == "no-error"
                    else score_mqm_weight(weights, row["severity"], row["category"])
                )
                penalty[(row["rater"], row["seg_id"], row["system"])] += weight
        return [(r, (i, s), -p, (i, s)) for (r, i, s), p in penalty.items()], "interval"
    lines = [json.loads(line) for line in (folder / "judgements.jsonl").read_text(encoding="utf-8").splitlines()]
    if name == "pairwise":
        # The protocol's value: "a" (the first of the pair in the data's order: item, system), "b" or
        # "tie"; a line showing the pair the other way round votes for the same system.
        out = []
        for j in lines:
            pair = tuple(sorted((j["a"], j["b"])))
            winner = {"a": j["a"], "b": j["b"]}.get(j["winner"], "tie")
            value = "tie" if winner == "tie" else "a" if winner == pair[0] else "b"
            out.append((j["annotator"], (j["item"], pair), value, None))
        return out, "nominal"
    if name == "bws":
        out = []
        for j in lines:
            for s in j["outputs"]:
                value = 1 if s == j["best"] else -1 if s == j["worst"] else 0
                out.append((j["annotator"], (j["item"], tuple(sorted(j["outputs"])), s), value, (j["item"], s)))
        return out, "nominal"
    if name == "rankme":
        # RankME magnitudes are compared as each annotator's z-scores (population sd), Novikova et al. 2018.
        by_annotator = defaultdict(list)
        for j in lines:
            by_annotator[j["annotator"]].append(j["score"])
        z = {a: (np.mean(v), np.std(v)) for a, v in by_annotator.items()}
        return [
            (
                j["annotator"],
                (j["item"], j["system"]),
                (j["score"] - z[j["annotator"]][0]) / z[j["annotator"]][1],
                (j["item"], j["system"]),
            )
            for j in lines
        ], "interval"
    return [(j["annotator"], (j["item"], j["system"]), j["score"], (j["item"], j["system"])) for j in lines], "interval"


def expected_alpha(values: list[tuple], level: str) -> float:
    annotators = sorted({v[0] for v in values})
    units = sorted({v[1] for v in values})
    codes = {}
    matrix = np.full((len(annotators), len(units)), np.nan)
    for annotator, unit, value, _ in values:
        if level == "nominal":
            value = codes.setdefault(value, len(codes))
        matrix[annotators.index(annotator), units.index(unit)] = value
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)


def expected_human(name: str, folder: Path, values: list[tuple]) -> dict[tuple, float]:
    """Segment-level human score of each (item, system)."""
    if name == "bws":
        # Best-worst counting (Orme 2009): (#best - #worst) / #appearances.
        net, seen = defaultdict(int), defaultdict(int)
        for _, _, value, output in values:
            net[output] += value
            seen[output] += 1
        return {o: net[o] / seen[o] for o in seen}
    scores = defaultdict(list)
    for _, _, value, output in values:
        scores[output].append(value)
    return {o: float(np.mean(v)) for o, v in scores.items()}


def sentence_scores(folder: Path, metric: str) -> dict[tuple, float]:
    score = {"bleu": sacrebleu.sentence_bleu, "chrf": sacrebleu.sentence_chrf}[metric]
    out = {}
    for line in (folder / "dataset.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        for system, text in item["outputs"].items():
            out[(item["item"], system)] = score(text, item["references"]).score
    return out


def expected_pair_agreement(values: list[tuple], metric: dict[tuple, float]) -> tuple[int, float]:
    """Share of judged pairs where the metric prefers the output most votes preferred (a tie on
    either side: disagreement), as ARCHITECTURE.md fixes it."""
    votes: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    for _, (item, pair), winner, _ in values:
        votes[(item, pair)][winner] += 1
    agree = 0
    for (item, (s1, s2)), v in votes.items():
        human = (v["a"] > v["b"]) - (v["a"] < v["b"])
        m1, m2 = metric[(item, s1)], metric[(item, s2)]
        machine = (m1 > m2) - (m1 < m2)
        agree += human != 0 and human == machine
    return len(votes), agree / len(votes)


# ---- the test ---------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", NAMES)
def test_example_end_to_end(name, tmp_path):
    folder = EXAMPLES / name
    config = json.loads((folder / "campaign.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(campaign_file_schema()).validate(config)
    dataset_lines = (folder / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    assert 6 <= len(dataset_lines) <= 12

    imported = run("import_dataset", str(folder / "dataset.jsonl"), "--dataset", config["dataset"])
    assert imported["items"] == len(dataset_lines)
    made = run("create_campaign", "--from", str(folder / "campaign.json"))
    assert made["protocol"] == name == config["protocol"] and made["campaign"] == config["name"]
    campaign = Campaign.objects.get(name=config["name"])
    protocol = protocols.of(campaign)
    assert {k: protocol.option(campaign, k) for k in config["options"]} == config["options"]

    judgements = folder / ("judgements.tsv" if name == "mqm" else "judgements.jsonl")
    extra = ("--format", "mqm-tsv") if name == "mqm" else ()
    values, level = judgement_values(name, folder)
    loaded = run("import_judgements", str(judgements), "--campaign", campaign.name, *extra)
    assert loaded["judgements"] > 0

    criterion = config["criteria"][0]
    agreement = run("agreement", "--campaign", campaign.name)["criteria"][criterion]
    assert agreement["krippendorff_alpha"][level] == pytest.approx(expected_alpha(values, level), abs=1e-9)

    human = None if protocol.correlate_as_pair_agreement else expected_human(name, folder, values)
    for metric in ("bleu", "chrf"):
        run("run_metric", "--dataset", campaign.dataset.name, "--metric", metric, "--sync")
        scores = sentence_scores(folder, metric)
        found = run("correlate", "--campaign", campaign.name, "--metric", metric, "--criterion", criterion)
        if protocol.correlate_as_pair_agreement:
            n, share = expected_pair_agreement(values, scores)
            assert (found["n"], found["agreement"]) == (n, pytest.approx(share, abs=1e-12))
        else:
            keys = sorted(human)
            r = stats.pearsonr([human[k] for k in keys], [scores[k] for k in keys]).statistic
            assert found["n"] == len(keys) and found["pearson"] == pytest.approx(r, abs=1e-9), metric

    # Exported and re-created: the same settings (and the same unit plan).
    out = tmp_path / "export"
    run("export_dataset", "--campaign", campaign.name, "--format", "jsonl", "--out", str(out))
    exported = json.loads((out / "campaign.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(campaign_file_schema()).validate(exported)
    run("create_campaign", "--from", str(out / "campaign.json"), "--name", f"{campaign.name}-again")
    again = Campaign.objects.get(name=f"{campaign.name}-again")
    assert settings_of(again) == settings_of(campaign)
