"""A judge run against the campaign's humans: bias probes and the alternative annotator test.

Expected values: the probes from numpy/scipy on the constructed data, computed here
independently of the code under test; the alt-test from the authors' reference
implementation (nitaytech/AltTest, `alt_test_example.ipynb`, function `alt_test`), run in a
scratch directory on the data `generate` below produces (same function, same seeds):
    for seed, eps, scoring in CASES: judge, humans = generate(seed)
        alt_test(judge, humans, scoring, epsilon=eps)   # -> (winning_rate, advantage_probability)
"""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy import stats

from annotations.analysis import alt_test as at
from annotations.models import Dataset
from tests.annotations.analysis.judge_runs import judge_run, outputs_by_key, pairwise_extras
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db

# (seed, epsilon, scoring) -> (winning rate, advantage probability) of the reference implementation.
REFERENCE = {
    (1, 0.2, "neg_rmse"): (0.8, 0.7688811188811189),
    (1, 0.1, "accuracy"): (0.0, 0.7423776223776224),
    (2, 0.2, "accuracy"): (1.0, 0.8324231361630284),
    (3, 0.15, "neg_rmse"): (0.2, 0.7761614531891529),
    (7, 0.0, "neg_rmse"): (0.2, 0.8160316964919037),
}


def generate(seed, n_items=60, n_annotators=5):
    """Annotators rate 1-5 (gold + noise, rounded, clipped); each skips ~15% of the items; the
    judge is gold + its own noise. Returns (judge {item: v}, humans {annotator: {item: v}})."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(1, 6, n_items)
    humans = {}
    for a in range(n_annotators):
        noise = 0.6 + 0.3 * a
        vals = np.clip(np.rint(gold + rng.normal(0, noise, n_items)), 1, 5).astype(int)
        keep = rng.random(n_items) > 0.15
        humans[f"ann{a}"] = {f"it{i:03d}": int(vals[i]) for i in range(n_items) if keep[i]}
    judge = {f"it{i:03d}": int(np.clip(np.rint(gold[i] + rng.normal(0, 0.8)), 1, 5)) for i in range(n_items)}
    return judge, humans


# Pairwise labels: (seed, epsilon) -> the reference's (winning rate, advantage probability), scoring
# accuracy, on `generate_pairs(seed)` (same procedure as above).
REFERENCE_PAIRS = {
    (4, 0.2): (1.0, 0.9024099883855982),
    (5, 0.1): (0.75, 0.9554487179487179),
    (6, 0.15): (1.0, 0.9268809902991695),
}
LABELS = ["a", "b", "tie"]


def generate_pairs(seed, n_items=45, n_annotators=4):
    """Winner labels: gold drawn with p (0.45, 0.45, 0.1); each annotator keeps the gold label with
    probability 0.55 + 0.1 * k, else draws any label; each skips ~10% of the items; the judge keeps
    the gold with probability 0.8. Returns (judge {item: label}, humans {annotator: {item: label}})."""
    rng = np.random.default_rng(seed)
    gold = rng.choice(3, n_items, p=[0.45, 0.45, 0.1])
    humans = {}
    for k in range(n_annotators):
        keep = rng.random(n_items) < 0.55 + 0.1 * k
        other = rng.integers(0, 3, n_items)
        present = rng.random(n_items) > 0.1
        humans[f"ann{k}"] = {
            f"q{i:02d}": LABELS[int(gold[i] if keep[i] else other[i])] for i in range(n_items) if present[i]
        }
    keep = rng.random(n_items) < 0.8
    other = rng.integers(0, 3, n_items)
    judge = {f"q{i:02d}": LABELS[int(gold[i] if keep[i] else other[i])] for i in range(n_items)}
    return judge, humans


def cmd(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_alt_test_equals_reference(case):
    seed, epsilon, scoring = case
    judge, humans = generate(seed)
    result = at.alt_test(judge, humans, scoring=scoring, epsilon=epsilon)
    assert result["winning_rate"] == pytest.approx(REFERENCE[case][0], abs=1e-12)
    assert result["advantage_probability"] == pytest.approx(REFERENCE[case][1], abs=1e-12)
    assert result["passed"] == (REFERENCE[case][0] >= 0.5)


def test_benjamini_yekutieli_against_hand_computation():
    # m = 4, H_4 = 25/12; thresholds k/4 * 0.05 / H_4 = 0.006, 0.012, 0.018, 0.024.
    assert at.benjamini_yekutieli([0.02, 0.001, 0.5, 0.011], 0.05) == [1, 3]
    assert at.benjamini_yekutieli([0.02, float("nan"), 0.5], 0.05) == []
    assert at.benjamini_yekutieli([], 0.05) == []


def _alt_campaign(tmp_path, seed):
    judge, humans = generate(seed)
    items = sorted(judge)
    cmd(
        "import_dataset",
        str(
            write_jsonl(
                tmp_path / "d.jsonl",
                [{"item": i, "source": f"source {i}", "outputs": {"judged": f"output {i}"}} for i in items],
            )
        ),
        "--dataset",
        "alt",
        "--project",
        "alt",
    )
    cmd(
        "create_campaign",
        "--dataset",
        "alt",
        "--name",
        "alt",
        "--protocol",
        "likert",
        "--criteria",
        "quality",
        "--scale",
        "1-5",
    )
    rows = [
        {"item": i, "system": "judged", "annotator": a, "criterion": "quality", "score": v}
        for a, answers in humans.items()
        for i, v in answers.items()
    ]
    cmd("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", rows)), "--campaign", "alt")
    dataset = Dataset.objects.get(name="alt")
    return dataset, judge, outputs_by_key(dataset)


def test_correlate_alt_test_equals_reference(tmp_path):
    dataset, judge, outputs = _alt_campaign(tmp_path, 1)
    # The judge scored on 0-100: mapped linearly back to the campaign's 1-5 before comparing.
    run = judge_run(dataset, {outputs[(i, "judged")].pk: (v - 1) * 25.0 for i, v in judge.items()})
    for seed, epsilon, scoring in [(1, 0.2, "neg_rmse"), (1, 0.1, "accuracy")]:
        result = cmd(
            "correlate",
            "--campaign",
            "alt",
            "--metric",
            "llm-judge",
            "--criterion",
            "quality",
            "--method",
            "alt-test",
            "--epsilon",
            str(epsilon),
            "--alt-scoring",
            scoring,
        )
        winning, advantage = REFERENCE[(seed, epsilon, scoring)]
        assert result["alt-test"] == pytest.approx(winning) and result["winning_rate"] == pytest.approx(winning)
        assert result["advantage_probability"] == pytest.approx(advantage, abs=1e-12)
        assert result["run"] == run.pk and result["annotators_tested"] == 5 and result["n"] == 60
        assert result["judge_scale"] == "0-100 mapped linearly to 1-5"
        assert set(result["annotators"]) == {f"ann{a}" for a in range(5)}
    with pytest.raises(CommandError, match="epsilon"):
        cmd(
            "correlate",
            "--campaign",
            "alt",
            "--metric",
            "llm-judge",
            "--criterion",
            "quality",
            "--method",
            "alt-test",
            "--epsilon",
            "1.5",
        )


# ---- probes ----------------------------------------------------------------------------------

ITEMS = 16  # 32 outputs per annotator: enough for the alt-test's 30 instances


@pytest.fixture
def probe_world(tmp_path):
    rng = np.random.default_rng(5)
    rows = []
    for i in range(ITEMS):
        rows.append(
            {
                "item": f"p{i}",
                "source": f"src {i}",
                "outputs": {"s1": " ".join(["good"] * (3 + i)), "s2": " ".join(["fine"] * (12 - i % 7))},
                "meta": {"systems": {"s2": {"model": "org/Tiny-Judge-7B", "note": "sampled"}}},
            }
        )
    cmd("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "probe", "--project", "probe")
    cmd(
        "create_campaign",
        "--dataset",
        "probe",
        "--name",
        "probe",
        "--protocol",
        "likert",
        "--criteria",
        "quality",
        "--scale",
        "1-5",
    )
    judgements = [
        {"item": r["item"], "system": s, "annotator": a, "criterion": "quality", "score": int(rng.integers(1, 6))}
        for r in rows
        for s in ("s1", "s2")
        for a in ("x", "y", "z")
    ]
    cmd("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", judgements)), "--campaign", "probe")
    dataset = Dataset.objects.get(name="probe")
    outputs = outputs_by_key(dataset)
    keys = sorted(outputs)
    # Spans mode (the only mode that samples): score = -(minor + 5 major), as llm_judge.py computes it.
    score = {k: -float(rng.integers(0, 4) + 5 * rng.integers(0, 2)) for k in keys}
    seed2 = {k: score[k] - float(rng.integers(0, 3)) for k in keys}
    # Pairwise mode: P(first shown is better) for both orders of each item's two outputs.
    first = {}
    for r in rows:
        a, b = outputs[(r["item"], "s1")].pk, outputs[(r["item"], "s2")].pk
        first[(a, b)], first[(b, a)] = float(rng.uniform(0, 1)), float(rng.uniform(0, 1))
    order = [[outputs[(r["item"], "s1")].pk, outputs[(r["item"], "s2")].pk] for r in rows]
    pair_scores, pair_extras = pairwise_extras(first, order)
    sampling = {"model": "/models/tiny-judge-7b", "mode": "spans", "temperature": 0.7}
    runs = {
        "score": judge_run(dataset, {outputs[k].pk: score[k] for k in keys}, options={**sampling, "seed": 1}),
        "seed2": judge_run(dataset, {outputs[k].pk: seed2[k] for k in keys}, options={**sampling, "seed": 2}),
        "pairwise": judge_run(
            dataset, pair_scores, extras=pair_extras, options={"mode": "pairwise", "model": "/models/other"}
        ),
    }
    return {
        "rows": rows,
        "judgements": judgements,
        "keys": keys,
        "outputs": outputs,
        "score": score,
        "seed2": seed2,
        "first": first,
        "runs": runs,
    }


def test_probes_in_correlate_json(probe_world):
    w = probe_world
    keys = w["keys"]
    result = cmd("correlate", "--campaign", "probe", "--metric", f"#{w['runs']['score'].pk}", "--criterion", "quality")
    probes = result["probes"]
    lengths = [len(w["outputs"][k].text.split()) for k in keys]
    human = [np.mean([j["score"] for j in w["judgements"] if (j["item"], j["system"]) == k]) for k in keys]
    length = probes["length"]
    assert length["outputs"] == 2 * ITEMS
    assert length["judge"]["pearson"] == pytest.approx(stats.pearsonr(lengths, [w["score"][k] for k in keys])[0])
    assert length["judge"]["spearman"] == pytest.approx(stats.spearmanr(lengths, [w["score"][k] for k in keys])[0])
    assert length["humans"]["pearson"] == pytest.approx(stats.pearsonr(lengths, human)[0])
    # Self-preference: s2's metadata names the judge's model (directory basename tiny-judge-7b).
    sp = probes["self_preference"]
    assert sp["judge_model"] == ["tiny-judge-7b"]
    assert [(x["system"], x["matched"]) for x in sp["warnings"]] == [("s2", "org/Tiny-Judge-7B")]
    judge_means = {s: np.mean([w["score"][k] for k in keys if k[1] == s]) for s in ("s1", "s2")}
    assert sp["warnings"][0]["judge_rank"] == (1 if judge_means["s2"] > judge_means["s1"] else 2)
    # Two runs differing only in seed, with sampling on: their correlation.
    seeds = probes["seeds"]
    assert seeds["other_run"] == w["runs"]["seed2"].pk and seeds["sampling"] is True
    assert seeds["pearson"] == pytest.approx(
        np.corrcoef([w["score"][k] for k in keys], [w["seed2"][k] for k in keys])[0, 1]
    )
    assert probes["position"] is None  # a score-mode run stores no swapped preference

    pairwise = cmd(
        "correlate", "--campaign", "probe", "--metric", f"#{w['runs']['pairwise'].pk}", "--criterion", "quality"
    )["probes"]
    # Each item's one pair, counted once; it is inconsistent when the output that wins with s1
    # shown first is not the one that wins with s2 shown first.
    s1_first = np.array(
        [w["first"][(w["outputs"][(r["item"], "s1")].pk, w["outputs"][(r["item"], "s2")].pk)] for r in w["rows"]]
    )
    s2_first = np.array(
        [w["first"][(w["outputs"][(r["item"], "s2")].pk, w["outputs"][(r["item"], "s1")].pk)] for r in w["rows"]]
    )
    assert pairwise["position"]["pairs"] == ITEMS
    assert pairwise["position"]["flip_rate"] == pytest.approx(np.mean((s1_first > 0.5) != (s2_first < 0.5)))
    assert pairwise["position"]["first_position_wins"] == pytest.approx(
        (np.sum(s1_first > 0.5) + np.sum(s2_first > 0.5)) / (2 * ITEMS)
    )
    assert pairwise["self_preference"]["warnings"] == [] and pairwise["seeds"] is None


def test_no_probes_for_other_metrics(probe_world):
    dataset = Dataset.objects.get(name="probe")
    judge_run(dataset, {o.pk: 1.0 for o in probe_world["outputs"].values()}, metric="bleu-like")
    result = cmd("correlate", "--campaign", "probe", "--metric", "bleu-like", "--criterion", "quality")
    assert "probes" not in result


def test_alt_test_through_the_api(client, tmp_path):
    from annotations.models import Campaign, Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    dataset, judge, outputs = _alt_campaign(tmp_path, 2)
    judge_run(dataset, {outputs[(i, "judged")].pk: float(v) for i, v in judge.items()}, options={"scale": "1-5"})
    user = UserFactory()
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    url = f"/api/campaigns/{Campaign.objects.get(name='alt').pk}/correlation/"
    body = client.get(
        url,
        {
            "metric": "llm-judge",
            "criterion": "quality",
            "method": "alt-test",
            "alt_scoring": "accuracy",
            "epsilon": 0.2,
        },
    ).json()
    assert body["winning_rate"] == pytest.approx(REFERENCE[(2, 0.2, "accuracy")][0])
    assert body["advantage_probability"] == pytest.approx(REFERENCE[(2, 0.2, "accuracy")][1], abs=1e-12)
    assert body["judge_scale"] is None
    assert (
        client.get(url, {"metric": "llm-judge", "criterion": "quality", "method": "alt-test", "epsilon": 2}).status_code
        == 400
    )


@pytest.mark.parametrize("case", sorted(REFERENCE_PAIRS))
def test_alt_test_on_a_pairwise_campaign_equals_reference(tmp_path, case):
    seed, epsilon = case
    judge, humans = generate_pairs(seed)
    items = sorted(judge)
    cmd(
        "import_dataset",
        str(
            write_jsonl(
                tmp_path / "d.jsonl",
                [
                    {"item": i, "source": f"s {i}", "outputs": {"s1": f"one {i}", "s2": f"two {i}", "s3": f"three {i}"}}
                    for i in items
                ],
            )
        ),
        "--dataset",
        "pairs",
        "--project",
        "pairs",
    )
    cmd("create_campaign", "--dataset", "pairs", "--name", "pairs", "--protocol", "pairwise", "--criteria", "pref")
    rows = [
        {"item": i, "annotator": a, "criterion": "pref", "a": "s1", "b": "s2", "winner": w}
        for a, answers in humans.items()
        for i, w in answers.items()
    ]
    cmd("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", rows)), "--campaign", "pairs")
    dataset = Dataset.objects.get(name="pairs")
    outputs = outputs_by_key(dataset)
    assert all(outputs[(i, "s1")].pk < outputs[(i, "s2")].pk for i in items)  # stored as imported (a = s1)
    # A pairwise-mode judge in the format it stores. Its verdict on s1 vs s2 is the generated label
    # (0.6 / 0.4 in both orders, or 0.5 for a tie); s3, which no human judged, loses fully to the
    # label's winner and beats its loser, so the outputs' mean win probabilities (the run's scores)
    # rank the pair the other way: the alt-test must read the judge's verdict on the pair itself.
    first = {}
    for i, label in judge.items():
        s1, s2, s3 = (outputs[(i, s)].pk for s in ("s1", "s2", "s3"))
        win, lose = (s1, s2) if label == "a" else (s2, s1)
        p = 0.5 if label == "tie" else 0.6
        first[(win, lose)], first[(lose, win)] = p, 1 - p
        if label == "tie":
            for x in (s1, s2):
                first[(x, s3)] = first[(s3, x)] = 0.5
        else:
            first[(lose, s3)], first[(s3, lose)] = 1.0, 0.0
            first[(s3, win)], first[(win, s3)] = 1.0, 0.0
    scores, extras = pairwise_extras(first, [[outputs[(i, s)].pk for s in ("s1", "s2", "s3")] for i in items])
    for i, label in judge.items():
        if label != "tie":
            win, lose = ("s1", "s2") if label == "a" else ("s2", "s1")
            assert scores[outputs[(i, win)].pk] < scores[outputs[(i, lose)].pk]
    judge_run(dataset, scores, extras=extras, options={"mode": "pairwise"})
    result = cmd(
        "correlate",
        "--campaign",
        "pairs",
        "--metric",
        "llm-judge",
        "--criterion",
        "pref",
        "--method",
        "alt-test",
        "--epsilon",
        str(epsilon),
    )
    assert result["scoring"] == "accuracy"
    assert result["winning_rate"] == pytest.approx(REFERENCE_PAIRS[case][0])
    assert result["advantage_probability"] == pytest.approx(REFERENCE_PAIRS[case][1], abs=1e-12)


def test_alt_test_says_when_it_cannot_test(probe_world):
    # 3 annotators x 32 outputs: testable; with --min-instances above that, nobody is: no verdict.
    w = probe_world
    result = cmd(
        "correlate",
        "--campaign",
        "probe",
        "--metric",
        f"#{w['runs']['score'].pk}",
        "--criterion",
        "quality",
        "--method",
        "alt-test",
        "--min-instances",
        "40",
    )
    assert result["passed"] is None and result["winning_rate"] is None and result["annotators_tested"] == 0
    assert all(a["skipped"] for a in result["annotators"].values())
    with pytest.raises(CommandError, match="pairwise-mode judge"):
        cmd(
            "correlate",
            "--campaign",
            "probe",
            "--metric",
            f"#{w['runs']['pairwise'].pk}",
            "--criterion",
            "quality",
            "--method",
            "alt-test",
        )
    with pytest.raises(CommandError, match="no done run"):
        cmd("correlate", "--campaign", "probe", "--metric", "nope", "--criterion", "quality", "--method", "alt-test")
