from annotations.quality.reliability import Figures
from annotations.quality.rules import Rules, verdict


def test_default_rules_follow_appraise():
    rules = Rules()
    good = Figures(annotator="g", degraded_judged=10, degraded_passed=10, mann_whitney_p=0.001, straight_lining=False)
    bad = Figures(annotator="b", degraded_judged=10, degraded_passed=5, mann_whitney_p=0.4, straight_lining=False)
    assert verdict(good, rules).included
    v = verdict(bad, rules)
    assert not v.included and "Mann-Whitney p = 0.4" in v.reasons[0]


def test_too_few_controls_never_exclude_but_say_so():
    v = verdict(Figures(annotator="n", degraded_judged=2, mann_whitney_p=0.9), Rules())
    assert v.included
    assert v.pending == ("degraded controls: 2 judged, 5 needed",)
    assert verdict(Figures(annotator="n"), Rules()).pending == ()  # no controls at all: nothing to wait for


def test_straight_lining_is_flagged_but_excludes_only_when_asked():
    figures = Figures(annotator="s", straight_lining=True)
    assert verdict(figures, Rules()).included
    assert not verdict(figures, Rules(exclude_straight_lining=True)).included


def test_each_threshold():
    figures = Figures(
        annotator="x",
        degraded_judged=1,
        degraded_passed=0,
        self_consistency=0.5,
        median_seconds=2.0,
        agreement_with_others=0.1,
        straight_lining=True,
    )
    rules = Rules(
        max_p=None,
        min_controls_passed=0.8,
        min_self_consistency=0.7,
        min_median_seconds=5,
        min_agreement=0.2,
        exclude_straight_lining=True,
    )
    v = verdict(figures, rules)
    assert not v.included
    assert len(v.reasons) == 5
    assert verdict(figures, Rules(max_p=None, exclude_straight_lining=False)).included


def test_rules_round_trip_and_ignore_unknown_keys():
    rules = Rules(max_p=0.05, min_median_seconds=3.0)
    assert Rules.from_dict({**rules.as_dict(), "legacy": 1}) == rules
    assert Rules.from_dict(None) == Rules()
    assert any("0.05" in line for line in rules.describe())
