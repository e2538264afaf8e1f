"""The shared Metric API: options, registry, corpus aggregation, signatures, input checks."""

import math
import re

import pytest

from metrics.scorers import (
    CorpusResult,
    InputError,
    Metric,
    OptionError,
    SegmentResult,
    UnknownMetric,
    available,
    get_metric,
    metric_class,
)


class _Toy(Metric):
    """Counts hypothesis characters; statistics [chars, 1] when `summable`."""

    name = "toy"
    defaults = {"flag": False, "k": 2, "x": 0.5, "path": None, "table": {}, "word": "abc", "summable": True}

    def score(self, hyps, refs=None, srcs=None, data=None):
        self.check_inputs(hyps, refs, srcs, data)
        stats = (lambda h: [len(h), 1]) if self.options["summable"] else (lambda h: None)
        return [SegmentResult(float(len(h)), {"chars": len(h)}, stats(h)) for h in hyps]

    def score_from_stats(self, totals):
        return CorpusResult(totals[0] / totals[1] * 10)


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("flag", "true", True),
        ("flag", "YES", True),
        ("flag", "on", True),
        ("flag", "1", True),
        ("flag", "false", False),
        ("flag", "no", False),
        ("flag", "0", False),
        ("flag", True, True),
        ("k", "7", 7),
        ("x", "0.25", 0.25),
        ("x", "3", 3.0),
        ("path", "/tmp/model", "/tmp/model"),
        ("path", "none", None),
        ("path", "", None),
        ("table", '{"a": "b"}', {"a": "b"}),
        ("word", "13a", "13a"),
        ("word", "true", "true"),
    ],
)
def test_option_strings_are_coerced_to_the_default_type(key, raw, expected):
    assert _Toy(**{key: raw}).options[key] == expected


@pytest.mark.parametrize(("key", "raw"), [("flag", "maybe"), ("k", "2.5"), ("x", "abc"), ("table", "{bad")])
def test_bad_option_values_raise_option_error(key, raw):
    with pytest.raises(OptionError, match=key):
        _Toy(**{key: raw})


def test_unknown_option_names_the_known_ones():
    with pytest.raises(OptionError, match=r"unknown option\(s\) colour .*known: flag"):
        _Toy(colour="red")


def test_corpus_from_summed_statistics_and_mean_fallback():
    segs = _Toy().score(["ab", "abcd"], [["x"], ["y"]])
    assert _Toy().corpus_score(segs).score == 30.0  # (2 + 4) / 2 * 10: used the stats
    plain = _Toy(summable=False)
    assert plain.corpus_score(plain.score(["ab", "abcd"], [["x"], ["y"]])).score == 3.0
    assert math.isnan(plain.corpus_score([]).score)


def test_signature_lists_options_in_stable_order_and_changes_with_them():
    sig = _Toy().signature()
    assert sig == "toy|v:1|flag:no|k:2|path:none|summable:yes|table:{}|word:abc|x:0.5"
    assert _Toy(k=3).signature() != sig
    assert _Toy(table={"b": 1, "a": 2}).signature() == _Toy(table='{"a": 2, "b": 1}').signature()


def test_check_inputs_reports_missing_or_misaligned_inputs():
    with pytest.raises(InputError, match="needs references"):
        _Toy().score(["a"])
    with pytest.raises(InputError, match="2 hypotheses but 1 reference lists"):
        _Toy().score(["a", "b"], [["x"]])


def test_registry_knows_the_contract_names_and_rejects_others():
    names = set(available())
    assert {"bleu", "chrf", "ter", "rouge", "wer", "cer", "sari", "distinct-n", "self-bleu", "ttr"} <= names
    with pytest.raises(UnknownMetric, match="unknown metric 'blue'"):
        get_metric("blue")
    assert metric_class("ter").higher_is_better is False
    assert metric_class("bleu").higher_is_better is True


def test_segment_result_as_dict_puts_score_first_with_extra():
    assert SegmentResult(1.5, {"label": "OK"}, [1.0]).as_dict() == {"score": 1.5, "label": "OK"}


class _Bounded(_Toy):
    name = "bounded"
    defaults = {"order": 4, "weight": 0.5, "depth": None}
    option_bounds = {"order": (1, 10), "weight": (0.0, 1.0), "depth": (0, 100)}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"order": "100000000"}, "order=100000000 is out of range: expected an integer from 1 to 10"),
        ({"order": 0}, "order=0 is out of range"),
        ({"order": 2.5}, "order=2.5"),
        ({"order": True}, "order=True"),
        ({"weight": "nan"}, "weight=nan"),
        ({"weight": "inf"}, "weight=inf"),
        ({"weight": 1.5}, "weight=1.5"),
        ({"depth": "deep"}, "depth='deep': expected an integer from 0 to 100"),
        ({"depth": 101}, "depth=101"),
    ],
)
def test_options_out_of_range_fail_at_construction(options, message):
    with pytest.raises(OptionError, match=re.escape(message)):
        _Bounded(**options)


def test_options_in_range_are_kept_typed():
    m = _Bounded(order="10", weight="1", depth="7")
    assert m.options == {"order": 10, "weight": 1.0, "depth": 7}
    assert _Bounded().options["depth"] is None


def test_every_numeric_option_of_every_metric_is_bounded():
    """A numeric option without bounds could take 1e8 and exhaust the machine (issue 12, item 11)."""
    for name in available():
        cls = metric_class(name)
        for key, default in cls.defaults.items():
            if isinstance(default, (int, float)) and not isinstance(default, bool):
                assert key in cls.option_bounds, f"{name}: option {key} has no bounds"
        for key in ("layer", "threshold", "smooth_value"):
            if key in cls.defaults:
                assert key in cls.option_bounds, f"{name}: option {key} has no bounds"


def test_corpus_state_defaults_to_none_and_rejects_non_objects():
    toy = _Toy()
    assert toy.corpus_state(["a"], [["b"]]) is None
    toy.load_corpus_state(None)
    with pytest.raises(InputError):
        toy.load_corpus_state(["not", "an", "object"])
