"""Expected gamma agreement values from the reference code (pygamma-agreement 0.5.9) on generated continua,
with the settings factgenie uses (ufal/factgenie, factgenie/iaa/gamma.py, commit 5258f59b352e:
`CombinedCategoricalDissimilarity(alpha=1, beta=1, delta_empty=1)`, `compute_gamma(dissim, soft=True)`
after `np.random.seed(42)`, default sampler), and a few hard-gamma and three-annotator continua.
Runs outside `make test`, in its own virtual environment, because pygamma-agreement brings cvxpy,
cvxopt (an exact pin), numba and pyannote:

    python3.11 -m venv var/gamma-ref
    var/gamma-ref/bin/pip install pygamma-agreement==0.5.9 numpy==2.4.6 scipy==1.17.1
    var/gamma-ref/bin/python bench/reference/gamma_expected.py

(cvxpy then solves with GLPK_MI through cvxopt: CBC is not installed.) It writes
tests/annotations/analysis/gamma_expected.json: per continuum its units, the options, and pygamma's
gamma, observed disorder, expected disorder and the 30 chance disorders; per generated campaign
(outputs with reference and hypothesis spans) factgenie's per-output gammas, their mean and s_empty,
computed the way factgenie's `_process_example_gamma` does. Fixed seeds: a rerun writes the same file.
It also prints pygamma's time per continuum (bench/README.md).
"""

from __future__ import annotations

import json
import logging
import random
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pygamma_agreement as pa
from pyannote.core import Segment

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "annotations" / "analysis" / "gamma_expected.json"
CATEGORIES = ["critical", "major", "minor"]


def spans(rnd: random.Random, length: int, k: int) -> list[list]:
    out = []
    for _ in range(k):
        start = rnd.randrange(0, length - 1)
        end = min(length, start + rnd.randint(1, 12))
        out.append([start, end, rnd.choice(CATEGORIES)])
    return out


def continua(rnd: random.Random) -> list[dict]:
    cases = []
    for i in range(24):
        length = rnd.randint(20, 150)
        human = spans(rnd, length, rnd.randint(1, 6))
        if i % 3 == 0:  # a metric that finds some human spans exactly, shifts others, adds its own
            metric = [[s, e, c] if rnd.random() < 0.5 else [max(0, s - 1), e + 2, c] for s, e, c in human[:3]]
            metric += spans(rnd, length, rnd.randint(0, 2))
        else:
            metric = spans(rnd, length, rnd.randint(1, 5))
        if i == 4:
            human.append(list(human[0]))  # two annotators of the reference group marked the same span
        cases.append({"units": {"human": human, "metric": metric}, "soft": i % 6 != 5})
    cases.append({"units": {"human": [[3, 9, "major"]], "metric": [[3, 9, "major"]]}, "soft": True})  # gamma 1
    cases.append({"units": {"human": [[0, 4, "minor"]], "metric": [[30, 40, "major"]]}, "soft": True})
    for _ in range(3):
        length = rnd.randint(30, 90)
        units = {a: spans(rnd, length, rnd.randint(1, 3)) for a in ("ann1", "ann2", "ann3")}
        cases.append({"units": units, "soft": rnd.random() < 0.5})
    return cases


def compute(units: dict, soft: bool) -> dict:
    continuum = pa.Continuum()
    for annotator, rows in units.items():
        for start, end, category in rows:
            continuum.add(annotator, Segment(start, end), category)
    dissim = pa.CombinedCategoricalDissimilarity(alpha=1, beta=1, delta_empty=1)
    np.random.seed(42)
    t = time.perf_counter()
    res = continuum.compute_gamma(dissim, soft=soft)
    elapsed = time.perf_counter() - t
    return {
        "gamma": float(res.gamma),
        "observed": float(res.observed_disorder),
        "expected": float(res.expected_disorder),
        "chance": [float(a.disorder) for a in res.chance_alignments],
        "seconds": elapsed,
    }


def factgenie_campaign(rnd: random.Random) -> dict:
    """Outputs with the annotators' spans (the reference group) and a metric's; factgenie's procedure:
    zero-length spans dropped, gamma where both sides have spans, else s_empty = 1 / (1 + spans)."""
    outputs, gammas, s_empty = [], [], []
    for k in range(10):
        length = rnd.randint(12, 18)  # within the test dataset's outputs (18 to 28 characters)
        ref = [] if k == 7 else spans(rnd, length, rnd.randint(1, 4))
        hyp = [] if k in (3, 7) else spans(rnd, length, rnd.randint(1, 4))
        if k == 5:
            hyp.append([10, 10, "minor"])  # zero-length: dropped
        outputs.append(
            {
                "reference": [{"start": s, "end": e, "severity": c} for s, e, c in ref],
                "hypothesis": [{"start": s, "end": e, "severity": c} for s, e, c in hyp],
            }
        )
        ref = [r for r in ref if r[0] != r[1]]
        hyp = [h for h in hyp if h[0] != h[1]]
        if ref and hyp:
            gammas.append(compute({"human": ref, "metric": hyp}, soft=True)["gamma"])
        else:
            s_empty.append(1 / (1 + len(ref) + len(hyp)))
    return {
        "outputs": outputs,
        "gammas": gammas,
        "gamma": float(np.mean(gammas)),
        "s_empty": float(np.mean(s_empty)),
        "s_empty_outputs": len(s_empty),
    }


def main() -> None:
    logging.getLogger().setLevel(logging.ERROR)  # pygamma warns once per solve that CBC is missing
    rnd = random.Random(20260423)
    cases = continua(rnd)
    for case in cases:
        case.update(compute(case["units"], case["soft"]))
    campaign = factgenie_campaign(rnd)
    seconds = [c.pop("seconds") for c in cases]
    OUT.write_text(
        json.dumps(
            {
                "provenance": {
                    "pygamma-agreement": metadata.version("pygamma-agreement"),
                    "numpy": metadata.version("numpy"),
                    "cvxpy": metadata.version("cvxpy"),
                    "solver": "GLPK_MI (cvxopt)",
                    "settings": "CombinedCategoricalDissimilarity(alpha=1, beta=1, delta_empty=1); np.random.seed(42); "
                    "compute_gamma(dissim, soft=...) with the default StatisticalContinuumSampler, 30 samples",
                    "factgenie": "ufal/factgenie factgenie/iaa/gamma.py commit 5258f59b352e",
                },
                "continua": cases,
                "factgenie_campaign": campaign,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"{len(cases)} continua; pygamma median {np.median(seconds):.3f} s per continuum (max {max(seconds):.3f})")


if __name__ == "__main__":
    main()
