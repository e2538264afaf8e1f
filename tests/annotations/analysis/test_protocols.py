"""agreement / correlate / rankings on small imported campaigns of every protocol."""

import json
from io import StringIO

import choix
import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.analysis.report import ranking_report
from annotations.models import Campaign
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db

SYSTEMS = ["s1", "s2", "s3", "s4"]


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def dataset(tmp_path):
    return toy_dataset(tmp_path)


def toy_dataset(tmp_path):
    """The dataset "toy" (project "toy"): 12 items, a system per entry of SYSTEMS, worse ones further from the
    reference; imported through `import_dataset`. Returns its rows."""
    rng = np.random.default_rng(0)
    words = "the cat sat on a mat with some red hats today".split()
    rows = []
    for i in range(12):
        ref = " ".join(rng.choice(words, 6))
        outs = {}
        for k, s in enumerate(SYSTEMS):
            toks = ref.split()
            for _ in range(k):  # worse systems change more words
                toks[rng.integers(0, len(toks))] = str(rng.choice(words))
            outs[s] = " ".join(toks)
        rows.append({"item": f"i{i}", "source": ref, "references": [ref], "outputs": outs})
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "toy", "--project", "toy")
    return rows


def _likert(tmp_path, protocol="likert", scale="1-5"):
    rng = np.random.default_rng(1)
    args = ["create_campaign", "--dataset", "toy", "--name", protocol, "--protocol", protocol, "--criteria", "adequacy"]
    if scale:
        args += ["--scale", scale]
    run(*args)
    judgements = []
    for i in range(12):
        for k, s in enumerate(SYSTEMS):
            for a in ("ann1", "ann2", "ann3"):
                if protocol == "rankme":
                    score = float(100 * (4 - k) * (1 + 0.1 * rng.random()) * (2 if a == "ann2" else 1))
                else:
                    score = float(np.clip(5 - k + rng.integers(-1, 2), 1, 5))
                judgements.append(
                    {"item": f"i{i}", "system": s, "annotator": a, "criterion": "adequacy", "score": score}
                )
    run("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", judgements)), "--campaign", protocol)
    return judgements


def test_likert_agreement_and_ranking(dataset, tmp_path):
    judgements = _likert(tmp_path)
    result = run("agreement", "--campaign", "likert", "--bootstrap", "20")
    fig = result["criteria"]["adequacy"]
    units = sorted({(j["item"], j["system"]) for j in judgements})
    data = np.array(
        [
            [
                next(j["score"] for j in judgements if (j["item"], j["system"]) == u and j["annotator"] == a)
                for u in units
            ]
            for a in ("ann1", "ann2", "ann3")
        ]
    )
    for level in ("nominal", "ordinal", "interval"):
        assert fig["krippendorff_alpha"][level] == pytest.approx(
            krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-6
        )
    assert fig["n_units"] == 48 and fig["n_annotators"] == 3 and fig["fleiss_units"] == 48
    assert set(fig["cohen_kappa"]) == {"ann1|ann2", "ann1|ann3", "ann2|ann3"}
    assert set(fig["per_system"]) == set(SYSTEMS)
    assert result["judgements_used"]["annotators"] == "all annotators"
    assert result["judgements_used"]["quality_control"] == "not in use: nobody is excluded"

    ranking = ranking_report(campaign=Campaign.objects.get(name="likert"))
    rows = ranking["criteria"]["adequacy"]
    assert [r["system"] for r in rows] == SYSTEMS
    assert [r["cluster"] for r in rows] == [1, 2, 3, 4]  # 1 point apart, 36 ratings each: all separated


def test_rankme_magnitudes_are_normalised_per_annotator(dataset, tmp_path):
    _likert(tmp_path, protocol="rankme", scale=None)
    fig = run("agreement", "--campaign", "rankme", "--bootstrap", "0")["criteria"]["adequacy"]
    assert fig["normalisation"] == "magnitudes z-scored per annotator"
    # ann2 gives double magnitudes: after z-scoring per annotator interval alpha is high.
    assert fig["krippendorff_alpha"]["interval"] > 0.9


def test_pairwise_win_rates_bradley_terry_and_metric_agreement(dataset, tmp_path):
    run("create_campaign", "--dataset", "toy", "--name", "pw", "--protocol", "pairwise", "--criteria", "overall")
    judgements = []
    for i in range(12):
        for x in range(4):
            for y in range(x + 1, 4):
                for a in ("v1", "v2", "v3"):
                    winner = "a" if (i + x + y + len(a)) % 5 else "b"  # mostly the better (lower index) system
                    judgements.append(
                        {
                            "item": f"i{i}",
                            "annotator": a,
                            "criterion": "overall",
                            "a": SYSTEMS[x],
                            "b": SYSTEMS[y],
                            "winner": winner,
                        }
                    )
    run("import_judgements", str(write_jsonl(tmp_path / "p.jsonl", judgements)), "--campaign", "pw")
    fig = run("agreement", "--campaign", "pw", "--bootstrap", "10")["criteria"]["overall"]
    assert fig["n_units"] == 12 * 6

    ranking = ranking_report(campaign=Campaign.objects.get(name="pw"), bootstrap=10)["criteria"]["overall"]
    wins = [
        (
            SYSTEMS.index(j["a"] if j["winner"] == "a" else j["b"]),
            SYSTEMS.index(j["b"] if j["winner"] == "a" else j["a"]),
        )
        for j in judgements
    ]
    expected = choix.ilsr_pairwise(4, wins, alpha=0.01)
    expected -= expected.mean()
    for r in ranking:
        assert r["bradley_terry"] == pytest.approx(expected[SYSTEMS.index(r["system"])], abs=1e-6)
    assert ranking[0]["system"] == "s1"

    score_dataset("toy", "wer")
    res = run("correlate", "--campaign", "pw", "--metric", "wer", "--criterion", "overall", "--min-votes", "3")
    assert res["n"] == 72 and 0 <= res["agreement"] <= 1


def test_best_worst_scores(dataset, tmp_path):
    run("create_campaign", "--dataset", "toy", "--name", "bw", "--protocol", "bws", "--criteria", "overall")
    judgements = [
        {
            "item": f"i{i}",
            "annotator": "x",
            "criterion": "overall",
            "outputs": SYSTEMS,
            "best": "s1",
            "worst": "s4" if i % 3 else "s3",
        }
        for i in range(12)
    ]
    run("import_judgements", str(write_jsonl(tmp_path / "b.jsonl", judgements)), "--campaign", "bw")
    rows = ranking_report(campaign=Campaign.objects.get(name="bw"), bootstrap=5)["criteria"]["overall"]
    scores = {r["system"]: r["score"] for r in rows}
    # (#best - #worst) / #appearances: s1 12/12, s2 0, s3 -4/12, s4 -8/12.
    assert scores == pytest.approx({"s1": 1.0, "s2": 0.0, "s3": -4 / 12, "s4": -8 / 12})


def test_esa_span_agreement(dataset, tmp_path):
    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "esa",
        "--protocol",
        "esa",
        "--criteria",
        "quality",
        "--severities",
        "minor,major",
    )
    judgements = []
    for i in range(3):
        judgements.append(
            {
                "item": f"i{i}",
                "system": "s1",
                "annotator": "a",
                "criterion": "quality",
                "score": 70,
                "spans": [{"start": 0, "end": 4, "severity": "minor"}],
            }
        )
        judgements.append(
            {
                "item": f"i{i}",
                "system": "s1",
                "annotator": "b",
                "criterion": "quality",
                "score": 60,
                "spans": [{"start": 2, "end": 6, "severity": "major"}, {"missing": True, "severity": "minor"}],
            }
        )
    run("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "esa")
    fig = run("agreement", "--campaign", "esa", "--bootstrap", "0")["criteria"]["quality"]
    # Characters 0-3 vs 2-5: overlap 2, F1 = 2*2 / (4 + 4).
    assert fig["spans"]["mean_f1"] == pytest.approx(0.5)
    assert fig["spans"]["outputs"] == 3


def test_correlate_errors_are_one_line(dataset, tmp_path):
    _likert(tmp_path)
    with pytest.raises(CommandError, match="no done run of metric 'bleu'"):
        run("correlate", "--campaign", "likert", "--metric", "bleu", "--criterion", "adequacy")
    score_dataset("toy", "bleu")
    with pytest.raises(CommandError, match="criterion 'nope'"):
        run("correlate", "--campaign", "likert", "--metric", "bleu", "--criterion", "nope")
    with pytest.raises(CommandError, match="no campaign"):
        run("correlate", "--campaign", "x", "--metric", "bleu", "--criterion", "adequacy")


def test_correlate_levels_grouping_compare_and_direction(dataset, tmp_path):
    _likert(tmp_path)
    score_dataset("toy", "bleu")
    score_dataset("toy", "wer")
    seg = run("correlate", "--campaign", "likert", "--metric", "wer", "--criterion", "adequacy")
    assert seg["n"] == 48 and seg["higher_is_better"] is False
    assert seg["pearson"] > 0  # WER is lower-is-better: its sign is flipped so agreement is positive
    grouped = run(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--group-by",
        "item",
        "--method",
        "kendall",
    )
    assert grouped["groups"] <= 12 and "kendall" in grouped
    acc = run(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--method",
        "acc23",
        "--normalize",
        "z",
    )
    assert 0 <= acc["acc23"] <= 1 and "epsilon" in acc
    system = run(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--level",
        "system",
        "--method",
        "spearman",
    )
    assert system["n"] == 4
    compared = run(
        "correlate", "--campaign", "likert", "--metric", "bleu", "--criterion", "adequacy", "--compare", "wer"
    )
    assert 0 <= compared["p_value"] <= 1 and compared["compare"] == "wer"
