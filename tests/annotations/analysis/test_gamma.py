"""factgenie's span gamma (issue 42): the gamma agreement equals pygamma-agreement 0.5.9 run with
factgenie's settings on generated continua (gamma_expected.json, written by
bench/reference/gamma_expected.py in its own virtual environment), and `correlate --method span-gamma`,
its API and the meta-evaluation page give factgenie's procedure over a campaign."""

import json
from pathlib import Path

import numpy as np
import pytest

from annotations.analysis import gamma as ga
from tests.annotations.analysis.test_protocols import SYSTEMS, dataset, run  # noqa: F401
from tests.annotations.test_real_data import write_jsonl

EXPECTED = json.loads((Path(__file__).parent / "gamma_expected.json").read_text())
CONTINUA = EXPECTED["continua"]


def _units(case):
    return {a: [tuple(u) for u in units] for a, units in case["units"].items()}


def test_the_fixture_comes_from_pygamma_with_factgenies_settings():
    p = EXPECTED["provenance"]
    assert p["pygamma-agreement"] == "0.5.9"
    assert "alpha=1, beta=1, delta_empty=1" in p["settings"] and "seed(42)" in p["settings"]
    assert {c["soft"] for c in CONTINUA} == {True, False}
    assert any(len(c["units"]) == 3 for c in CONTINUA)


@pytest.mark.parametrize("k", range(len(CONTINUA)))
def test_gamma_equals_pygamma(k):
    case = CONTINUA[k]
    got = ga.gamma(_units(case), soft=case["soft"])
    # The best alignment: the same disorder, to the float (pygamma's float32 arithmetic reproduced).
    assert got.observed == pytest.approx(case["observed"], abs=1e-9)
    # The chance disorders: the same 30 sampled continua (pygamma's StatisticalContinuumSampler,
    # numpy's legacy generator seeded with 42) and their best alignments.
    assert got.chance == pytest.approx(case["chance"], abs=1e-9)
    assert got.expected == pytest.approx(case["expected"], abs=1e-9)
    assert got.gamma == pytest.approx(case["gamma"], abs=1e-9)


def test_identical_annotations_have_gamma_1_and_disjoint_ones_below_0():
    same = next(c for c in CONTINUA if c["units"]["human"] == c["units"].get("metric"))
    assert ga.gamma(_units(same)).gamma == same["gamma"] == 1
    far = next(c for c in CONTINUA if c["units"].get("metric") == [[30, 40, "major"]])
    assert ga.gamma(_units(far)).gamma == pytest.approx(far["gamma"], abs=1e-9) and far["gamma"] < 0


def test_the_matching_and_the_linear_program_agree():
    """Two annotators: the best alignment by a bipartite matching equals the 0/1 program pygamma
    solves (here through HiGHS), on the fixture to the float and on random continua to the float32
    rounding of a sum whose equal-cost optima may be summed in another order (one ulp)."""
    for case in CONTINUA:
        cont = ga.continuum(_units(case))
        assert ga.best_disorder(cont, soft=case["soft"], program=True) == pytest.approx(case["observed"], abs=1e-9)
    rng = np.random.default_rng(1)
    for t in range(100):
        units = {
            a: [
                (float(s), float(s + rng.integers(1, 10) + (rng.random() if t % 2 else 0)), str(rng.choice(["A", "B"])))
                for s in rng.integers(0, 40, rng.integers(a == "human", 7))
            ]
            for a in ("human", "metric")
        }
        cont = ga.continuum(units)
        for soft in (True, False):
            fast, program = (ga.best_disorder(cont, soft=soft, program=p) for p in (False, True))
            assert fast == pytest.approx(program, abs=2.5e-7)


def test_factgenie_procedure_over_outputs():
    """One continuum per output (zero-length spans dropped), gamma where both sides marked a span,
    s_empty = 1 / (1 + spans) elsewhere, each averaged, as factgenie/iaa/gamma.py."""
    campaign = EXPECTED["factgenie_campaign"]
    per_output = [ga.output_gamma(o["reference"], o["hypothesis"]) for o in campaign["outputs"]]
    assert [o["gamma"] for o in per_output if o["gamma"] is not None] == pytest.approx(campaign["gammas"], abs=1e-9)
    got = ga.factgenie_gamma(per_output)
    assert got["gamma"] == pytest.approx(campaign["gamma"], abs=1e-9)
    assert got["s_empty"] == pytest.approx(campaign["s_empty"], abs=1e-12)
    assert (got["outputs"], got["s_empty_outputs"]) == (len(campaign["gammas"]), campaign["s_empty_outputs"])
    assert ga.output_gamma([{"missing": True, "severity": "major"}], [{"start": 0, "end": 2}]) == {
        "gamma": None,
        "s_empty": 0.5,
    }


def _campaign_with_the_fixture_outputs(tmp_path):
    """The fixture's outputs as a campaign: the reference spans one annotator's, the hypothesis
    spans a span-mode judge's, on outputs spread over the four systems."""
    from annotations.models import Dataset
    from tests.annotations.analysis.judge_runs import judge_run, outputs_by_key

    run(
        "create_campaign",
        *("--dataset", "toy", "--name", "esa", "--protocol", "esa", "--criteria", "quality"),
        *("--severities", "minor,major,critical"),
    )
    outputs = EXPECTED["factgenie_campaign"]["outputs"]
    keys = [(f"i{k // len(SYSTEMS)}", SYSTEMS[k % len(SYSTEMS)]) for k in range(len(outputs))]
    judgements = [
        {"item": i, "system": s, "annotator": "a", "criterion": "quality", "score": 50, "spans": o["reference"]}
        for (i, s), o in zip(keys, outputs)
    ]
    run("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "esa")
    toy = Dataset.objects.get(name="toy")
    outs = outputs_by_key(toy)
    judge = judge_run(
        toy,
        {outs[key].pk: 0.0 for key in keys},
        extras={outs[key].pk: {"spans": o["hypothesis"], "raw": ""} for key, o in zip(keys, outputs)},
        options={"mode": "spans", "protocol": "esa"},
    )
    return keys, judge


@pytest.mark.django_db
def test_correlate_span_gamma_per_system_and_overall(dataset, tmp_path, client):  # noqa: F811
    from annotations.models import Campaign
    from tests.annotations.factories import UserFactory

    keys, judge = _campaign_with_the_fixture_outputs(tmp_path)
    campaign = EXPECTED["factgenie_campaign"]
    out = run(
        "correlate", "--campaign", "esa", "--metric", "llm-judge", "--criterion", "quality", "--method", "span-gamma"
    )
    assert out["span-gamma"] == pytest.approx(campaign["gamma"], abs=1e-9)
    assert out["overall"]["s_empty"] == pytest.approx(campaign["s_empty"], abs=1e-12)
    assert out["n"] == len(campaign["gammas"]) and out["label"] == ga.GAMMA_LABEL
    # Per system: the mean of pygamma's gammas of that system's outputs.
    gammas = iter(campaign["gammas"])
    by_system: dict[str, list[float]] = {}
    for (_, system), o in zip(keys, campaign["outputs"]):
        if ga._units(o["reference"]) and ga._units(o["hypothesis"]):
            by_system.setdefault(system, []).append(next(gammas))
    for system, values in by_system.items():
        assert out["per_system"][system]["gamma"] == pytest.approx(sum(values) / len(values), abs=1e-9)
        assert out["per_system"][system]["outputs"] == len(values)
    # The API answers the very figures.
    client.force_login(UserFactory(username="res", is_superuser=True))
    esa = Campaign.objects.get(name="esa")
    r = client.get(
        f"/api/campaigns/{esa.pk}/correlation/",
        {"metric": f"#{judge.pk}", "criterion": "quality", "method": "span-gamma"},
    )
    assert r.status_code == 200, r.content
    assert r.json()["overall"] == out["overall"] and r.json()["per_system"] == out["per_system"]
