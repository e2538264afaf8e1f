import pytest

from annotations.models import Campaign
from annotations.quality.gold import InvalidExpectation, expectation_clean, expectation_for, gold_check


def _campaign(protocol: str) -> Campaign:
    """An unsaved campaign: expectations are checked against its criteria and scale only."""
    return Campaign(name="c", protocol=protocol, criteria=["fluency"], scale_min=1, scale_max=5)


def test_rating_range():
    spec = expectation_clean(_campaign("likert"), {"*": {"min": 1, "max": 2}}, output_ids=[5])
    assert gold_check("likert", expectation_for(spec, "fluency"), {"score": 2}) == []
    assert gold_check("likert", expectation_for(spec, "fluency"), {"score": 4}) == [
        "the score is outside the expected range (1 to 2)"
    ]
    assert gold_check("likert", {"min": 60}, {"score": 4}) == ["the score is outside the expected range (at least 60)"]


def test_pairwise_bws_and_esa():
    assert gold_check("pairwise", {"winner": 5}, {"winner": 5}) == []
    assert gold_check("pairwise", {"winner": 5}, {"winner": "tie"})
    assert gold_check("pairwise", {"winner": "tie"}, {"winner": 5}) == ["a tie was expected"]
    assert gold_check("bws", {"best": 1, "worst": 3}, {"best": 1, "worst": 2}) == [
        "another output was expected as the worst"
    ]
    spec = {"spans": [{"start": 4, "end": 9}], "max": 60}
    assert gold_check("esa", spec, {"score": 40, "spans": [{"start": 6, "end": 12, "severity": "minor"}]}) == []
    assert len(gold_check("esa", spec, {"score": 80, "spans": [{"start": 10, "end": 12}]})) == 2
    assert gold_check("esa", {"missing": True}, {"score": 1, "spans": [{"missing": True, "severity": "major"}]}) == []


@pytest.mark.parametrize(
    "protocol,expected,message",
    [
        ("likert", {"fluency": {"min": 4, "max": 2}}, "min is above max"),
        ("likert", {"style": {"min": 1}}, "unknown criterion"),
        ("likert", {"*": {"winner": 1}}, "unknown key"),
        ("pairwise", {"*": {"winner": 99}}, "winner must be one of"),
        ("bws", {"*": {"best": 1, "worst": 1}}, "best and worst must be different outputs"),
        ("bws", {"*": {"best": 7}}, "best and worst must be outputs of the tuple"),
        ("esa", {"*": {"spans": [{"start": 5, "end": 2}]}}, "span 1: need 0 <= start < end"),
        ("likert", {"*": {"max": 9}}, "max: score 9 is outside the scale 1 to 5"),
        ("likert", [], "must be an object"),
        ("likert", {"*": {"min": "high"}}, "must be a number"),
    ],
)
def test_bad_expectations_are_refused_with_a_reason(protocol, expected, message):
    with pytest.raises(InvalidExpectation, match=message):
        expectation_clean(_campaign(protocol), expected, output_ids=[1, 2])
