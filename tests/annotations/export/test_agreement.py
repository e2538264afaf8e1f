"""The export's streaming Krippendorff's alpha equals the `krippendorff` package's."""
import random

import krippendorff
import numpy as np
import pytest

from annotations.export.agreement import AgreementCollector
from annotations.export.judgements import Judgement


def _judgement(annotator, output, criterion, value, kind):
    j = Judgement(id=0, annotator_id=annotator, item_id=0, criterion=criterion, status="complete", origin="import",
                  time_spent_ms=None, shown_order=[], created_at=None)
    if kind == "pairwise":
        j.a_id, j.b_id, j.winner = output, output + 10_000, value
    else:
        j.output_id, j.score = output, value
    return j


@pytest.mark.parametrize("kind,values,seed", [
    ("rating", list(range(1, 6)), 1), ("rating", list(range(0, 101)), 2), ("rating", [0.5, 2.25, 7.0], 3),
    ("pairwise", ["a", "b", "tie"], 4),
])
@pytest.mark.parametrize("dense_max", [2000, 1], ids=["dense", "sparse"])
def test_alpha_equals_the_krippendorff_package(kind, values, seed, dense_max, monkeypatch):
    from annotations.export import agreement

    monkeypatch.setattr(agreement, "DENSE_MAX", dense_max)
    rng = random.Random(seed)
    n_annotators, n_units = 7, 60
    matrix = np.full((n_annotators, n_units), np.nan)
    judgements = []
    codes = {v: i for i, v in enumerate(values)}
    for unit in range(n_units):
        # Some units judged once (ignored by both), most by 2-7 annotators; values correlated with the unit.
        judges = rng.sample(range(n_annotators), rng.choice([1, 2, 3, 5, 7]))
        base = rng.randrange(len(values))
        for a in judges:
            value = values[min(len(values) - 1, max(0, base + rng.choice([-1, 0, 0, 1])))]
            matrix[a, unit] = codes[value] if kind == "pairwise" else value
            judgements.append(_judgement(a, unit, "q", value, kind))
    collector = AgreementCollector(kind)
    rng.shuffle(judgements)
    collector.add(judgements)
    figures = collector.figures()["q"]
    levels = ("nominal",) if kind == "pairwise" else ("interval", "ordinal", )
    for level in levels:
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        assert figures["krippendorff_alpha"][level] == pytest.approx(expected, abs=1e-10), level
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    assert figures["n_units"] == int(pairable.sum())
    assert figures["n_judgements"] == int((~np.isnan(matrix[:, pairable])).sum())


def test_one_value_everywhere_has_no_alpha():
    collector = AgreementCollector("rating")
    collector.add([_judgement(a, u, "q", 3.0, "rating") for a in range(3) for u in range(4)])
    assert collector.figures()["q"]["krippendorff_alpha"] == {"interval": None, "ordinal": None}
