"""Each protocol's quality-control pieces (annotations.protocols, "# ---- quality control" blocks), on
unsaved ControlUnit / ControlJudgement instances: a damaged copy passes when it is judged worse than
the annotator's own judgement of the original (or both sit at the scale's floor), a repeat is paired
with the first answer to the same unit, and straight-lining looks at the score or the position chosen."""

import pytest

from annotations import protocols
from annotations.models.quality import ControlJudgement, ControlUnit
from annotations.protocols.rows import JudgementRow

# Alias 901 shows output 11 damaged; 902 shows output 12 as it is.
DEGRADED = ControlUnit(
    kind="degraded",
    aliases={"901": {"output": 11, "text": "x", "degraded": {"kind": "drop"}}, "902": {"output": 12, "text": "y"}},
)
REPEAT = ControlUnit(kind="repeat", aliases={"901": {"output": 11, "text": "x"}, "902": {"output": 12, "text": "y"}})


def _row(**answer):
    row = JudgementRow(
        id=0,
        annotator_id=1,
        item_id=0,
        criterion="q",
        status="complete",
        origin="engine",
        time_spent_ms=None,
        shown_order=[],
        created_at=None,
    )
    for key, value in answer.items():
        setattr(row, key, value)
    return row


def _answer(answer, output_id=None):
    return ControlJudgement(kind="degraded", criterion="q", annotator_id=1, answer=answer, output_id=output_id)


def _originals(protocol, rows):
    found = {}
    for row in rows:
        for output, value in protocol.qc_originals(row):
            found.setdefault(output, []).append(value)
    return lambda output: found.get(output, [])


@pytest.mark.parametrize("name", ["likert", "rankme"])
def test_rating_degraded_copy_passes_when_scored_lower(name):
    protocol = protocols.get(name)
    originals = _originals(protocol, [_row(output_id=11, score=60.0)])
    lower = _answer({"scores": {"901": 40.0, "902": 70.0}})
    assert protocol.degraded_pair(lower, DEGRADED, originals=originals, floor=0) == (40.0, 60.0, 0, True)
    same = _answer({"scores": {"901": 60.0}})
    assert protocol.degraded_pair(same, DEGRADED, originals=originals, floor=0)[3] is False
    at_floor = _originals(protocol, [_row(output_id=11, score=0.0)])
    assert protocol.degraded_pair(_answer({"scores": {"901": 0.0}}), DEGRADED, originals=at_floor, floor=0)[3]
    # Imported control: names the real output; no original judged: nothing to compare.
    assert protocol.degraded_pair(_answer({"score": 10.0}, output_id=11), None, originals=originals, floor=0)[3]
    assert protocol.degraded_pair(_answer({"score": 10.0}, output_id=12), None, originals=originals, floor=0) is None


@pytest.mark.parametrize("name", ["esa", "cesa"])  # cESA: the damaged copy among the screen's outputs
def test_esa_degraded_copy_with_the_same_score_passes_with_heavier_spans(name):
    protocol = protocols.get(name)
    originals = _originals(
        protocol, [_row(output_id=11, score=60.0, spans=[{"start": 0, "end": 1, "severity": "minor"}])]
    )
    heavier = _answer({"scores": {"901": 60.0}, "spans": {"901": [{"start": 0, "end": 3, "severity": "major"}]}})
    lighter = _answer({"scores": {"901": 60.0}, "spans": {"901": []}})
    assert protocol.degraded_pair(heavier, DEGRADED, originals=originals, floor=0) == (60.0, 60.0, 0, True)
    assert protocol.degraded_pair(lighter, DEGRADED, originals=originals, floor=0)[3] is False


def test_pairwise_degraded_copy_should_lose_to_its_original():
    protocol = protocols.get("pairwise")
    assert protocol.degraded_shown([11, 12], 11) == [(11, False), (11, True)]
    lost = _answer({"winner": 902})
    won = _answer({"winner": 901})
    tie = _answer({"winner": "tie"})
    assert protocol.degraded_pair(lost, DEGRADED, originals=None, floor=None) == (0.0, 1.0, 0.0, True)
    assert protocol.degraded_pair(won, DEGRADED, originals=None, floor=None)[3] is False
    assert protocol.degraded_pair(tie, DEGRADED, originals=None, floor=None)[3] is False
    assert protocol.degraded_pair(_answer({"winner": "original"}, 11), None, originals=None, floor=None)[3] is True
    assert protocol.degraded_pair(_answer({"winner": "?"}, 11), None, originals=None, floor=None) is None


def test_best_worst_degraded_copy_compared_with_the_originals_mean_score():
    protocol = protocols.get("bws")
    # Output 11 was best once and neither once in the annotator's tuples: mean 0.5.
    originals = _originals(
        protocol,
        [_row(outputs=[11, 12, 13], best_id=11, worst_id=13), _row(outputs=[11, 12, 14], best_id=12, worst_id=14)],
    )
    assert protocol.degraded_pair(_answer({"best": 902, "worst": 901}), DEGRADED, originals=originals, floor=-1) == (
        -1,
        0.5,
        -1,
        True,
    )
    assert (
        protocol.degraded_pair(_answer({"best": 901, "worst": 902}), DEGRADED, originals=originals, floor=-1)[3]
        is False
    )
    assert protocol.degraded_shown([11, 12, 13], 12) == [(11, False), (12, True), (13, False)]


def test_repeats_pair_with_the_first_answer_to_the_same_unit():
    likert, pairwise, bws = protocols.get("likert"), protocols.get("pairwise"), protocols.get("bws")
    first = {((11,), "q"): 60.0, ((12,), "q"): 20.0}
    repeat = ControlJudgement(kind="repeat", criterion="q", answer={"scores": {"901": 55.0, "902": 25.0}})
    assert sorted(likert.repeat_pairs(repeat, REPEAT, first)) == [(20.0, 25.0), (60.0, 55.0)]
    # Pairwise: first answered "a" (11, the lower id) on the canonical pair; the repeat prefers 12 (alias 902).
    repeat = ControlJudgement(kind="repeat", criterion="q", answer={"winner": 902})
    assert pairwise.repeat_pairs(repeat, REPEAT, {((11, 12), "q"): "a"}) == [("a", "b")]
    repeat = ControlJudgement(kind="repeat", criterion="q", answer={"best": 902, "worst": 901})
    assert bws.repeat_pairs(repeat, REPEAT, {((11, 12), "q"): (12, 11)}) == [((12, 11), (12, 11))]
    assert bws.repeat_pairs(repeat, REPEAT, {}) == []


def test_straight_lining_habits():
    assert protocols.get("likert").qc_habit(_row(output_id=1, score=3.0)) == 3.0
    pairwise = protocols.get("pairwise")
    assert pairwise.qc_habit(_row(a_id=1, b_id=2, winner="b", shown_order=[2, 1])) == 0
    assert pairwise.qc_habit(_row(a_id=1, b_id=2, winner="tie", shown_order=[2, 1])) == "tie"
    assert pairwise.qc_habit(_row(a_id=1, b_id=2, winner="a", shown_order=[])) == "?"
    assert protocols.get("bws").qc_habit(_row(outputs=[1, 2, 3], best_id=3, worst_id=1, shown_order=[3, 2, 1])) == (
        0,
        2,
    )


def test_control_answers_in_alias_ids_and_in_gold_terms():
    from annotations.models import BestWorstJudgement, PairwiseJudgement, SpanJudgement

    answer = {}
    esa = protocols.get("esa")
    esa.control_answer(
        answer,
        SpanJudgement(output_id=901, score=30.0, criterion="q"),
        [{"start": 0, "end": 2, "severity": "major", "missing": False}],
    )
    assert answer == {
        "scores": {"901": 30.0},
        "spans": {"901": [{"start": 0, "end": 2, "severity": "major", "missing": False}]},
    }
    assert esa.gold_answers(answer, REPEAT.real_output) == [
        {"score": 30.0, "spans": [{"start": 0, "end": 2, "severity": "major", "missing": False}]}
    ]
    answer = {}
    pairwise = protocols.get("pairwise")
    pairwise.control_answer(answer, PairwiseJudgement(output_a_id=901, output_b_id=902, winner="b"), None)
    assert answer == {"winner": 902, "pair": [901, 902]}
    assert pairwise.gold_answers(answer, REPEAT.real_output) == [{"winner": 12}]
    answer = {}
    bws = protocols.get("bws")
    bws.control_answer(answer, BestWorstJudgement(outputs=[901, 902], best_id=902, worst_id=901), None)
    assert bws.gold_answers(answer, REPEAT.real_output) == [{"best": 12, "worst": 11}]
