"""The one agreement implementation, fed row by row as the export streams it, equals the
`krippendorff` package's alpha (dense coincidences, and the sparse form used for continuous values)."""

import random

import krippendorff
import numpy as np
import pytest

from annotations import protocols
from annotations.analysis import agreement as ag
from annotations.protocols.rows import JudgementRow


def _row(annotator, unit, value, protocol):
    j = JudgementRow(
        id=0,
        annotator_id=annotator,
        item_id=0,
        criterion="q",
        status="complete",
        origin="import",
        time_spent_ms=None,
        shown_order=[],
        created_at=None,
    )
    if protocol == "pairwise":
        j.a_id, j.b_id, j.winner = unit, unit + 10_000, value
    else:
        j.output_id, j.score = unit, value
    return j


@pytest.mark.parametrize(
    "protocol,values,seed",
    [
        ("likert", list(range(1, 6)), 1),
        ("likert", list(range(0, 101)), 2),
        ("likert", [0.5, 2.25, 7.0], 3),
        ("pairwise", ["a", "b", "tie"], 4),
    ],
)
@pytest.mark.parametrize("dense_max", [2000, 1], ids=["dense", "sparse"])
def test_alpha_equals_the_krippendorff_package(protocol, values, seed, dense_max, monkeypatch):
    monkeypatch.setattr(ag, "DENSE_MAX", dense_max)
    rng = random.Random(seed)
    n_annotators, n_units = 7, 60
    matrix = np.full((n_annotators, n_units), np.nan)
    rows = []
    codes = {v: i for i, v in enumerate(values)}
    for unit in range(n_units):
        # Some units judged once (ignored by both), most by 2-7 annotators; values correlated with the unit.
        judges = rng.sample(range(n_annotators), rng.choice([1, 2, 3, 5, 7]))
        base = rng.randrange(len(values))
        for a in judges:
            value = values[min(len(values) - 1, max(0, base + rng.choice([-1, 0, 0, 1])))]
            matrix[a, unit] = codes[value] if protocol == "pairwise" else value
            rows.append(_row(a, unit, value, protocol))
    rng.shuffle(rows)
    builder = ag.TableBuilder(protocols.get(protocol))
    for start in range(0, len(rows), 17):  # fed in chunks, as the export does item by item
        builder.add(rows[start : start + 17])
    figures = ag.criterion_agreement(protocols.get(protocol), None, table=builder.table(), annotators="all")
    levels = ("nominal",) if protocol == "pairwise" else ("interval", "ordinal")
    for level in levels:
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        assert figures["krippendorff_alpha"][level] == pytest.approx(expected, abs=1e-10), level
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    assert figures["n_units"] == int(pairable.sum())
    assert figures["headline"]["level"] == ("nominal" if protocol == "pairwise" else "interval")


def test_one_value_everywhere_has_no_alpha():
    rows = [_row(a, u, 3.0, "likert") for a in range(3) for u in range(4)]
    figures = ag.criterion_agreement(protocols.get("likert"), rows, annotators="all")
    assert figures["krippendorff_alpha"]["interval"] is None and figures["headline"]["value"] is None
