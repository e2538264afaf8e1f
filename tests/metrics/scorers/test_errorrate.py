"""wer / cer equal jiwer's values, per segment and for the corpus."""

import json

import jiwer
import pytest

from metrics.scorers import InputError, OptionError, SegmentResult, get_metric

CASES = [
    ("the cat sat on the mat", "the cat sat on mat"),
    ("hello world", "hello  big   world "),
    ("Le garçon a mangé", "le garcon a mange"),
    ("été chaud", "e\u0301te\u0301 chaud"),
    ("我喜欢吃苹果", "我爱吃苹果"),
    ("👍 ok", "👍 okay"),
    ("one two three", ""),
    ("", ""),
    ("", "inserted words"),
    ("Hello, World!", "hello world"),
]
REFS = [r for r, _ in CASES]
HYPS = [h for _, h in CASES]
JIWER = {
    "wer": (jiwer.process_words, "wer", jiwer.wer_default),
    "cer": (jiwer.process_characters, "cer", jiwer.cer_default),
}


@pytest.mark.parametrize("name", ["wer", "cer"])
def test_segment_and_corpus_rates_equal_jiwer(name):
    process, attr, _ = JIWER[name]
    metric = get_metric(name)
    segs = metric.score(HYPS, [[r] for r in REFS])
    for seg, ref, hyp in zip(segs, REFS, HYPS):
        out = process(ref, hyp)
        assert seg.score == getattr(out, attr)
        assert (seg.extra["substitutions"], seg.extra["deletions"], seg.extra["insertions"], seg.extra["hits"]) == (
            out.substitutions,
            out.deletions,
            out.insertions,
            out.hits,
        )
    assert metric.corpus_score(segs).score == getattr(process(REFS, HYPS), attr)


@pytest.mark.parametrize("name", ["wer", "cer"])
def test_empty_references_behave_as_in_jiwer(name):
    process, attr, _ = JIWER[name]
    metric = get_metric(name)
    for refs, hyps in [([""], [""]), ([""], ["a b"]), (["", ""], ["x", "y z"])]:
        segs = metric.score(hyps, [[r] for r in refs])
        assert metric.corpus_score(segs).score == getattr(process(refs, hyps), attr)
    assert metric.score(["a b"], [[""]])[0].score == getattr(process("", "a b"), attr) > 1


@pytest.mark.parametrize("name", ["wer", "cer"])
def test_lowercase_and_punctuation_options_equal_jiwer_transforms(name):
    process, attr, base = JIWER[name]
    metric = get_metric(name, lowercase="true", remove_punctuation="true")
    transform = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), *base.transforms])
    segs = metric.score(HYPS, [[r] for r in REFS])
    expected = process(REFS, HYPS, reference_transform=transform, hypothesis_transform=transform)
    assert metric.corpus_score(segs).score == getattr(expected, attr)
    assert metric.score(["hello world"], [["Hello, World!"]])[0].score == 0.0


@pytest.mark.parametrize("name", ["wer", "cer"])
def test_chunks_combine_exactly(name):
    metric = get_metric(name)
    whole = metric.corpus_score(metric.score(HYPS, [[r] for r in REFS])).score
    parts = [metric.score(HYPS[i : i + 3], [[r] for r in REFS[i : i + 3]]) for i in range(0, len(HYPS), 3)]
    stored = [SegmentResult(s.score, s.extra, json.loads(json.dumps(s.stats))) for p in parts for s in p]
    assert metric.corpus_score(stored).score == whole


def test_several_references_first_by_default_or_the_closest():
    refs = [["a b c d", "a b c"], ["x y"]]
    first = get_metric("wer").score(["a b c", "x y"], refs)
    assert first[0].score == jiwer.wer("a b c d", "a b c")
    best = get_metric("wer", references="min")
    segs = best.score(["a b c", "x y"], refs)
    assert segs[0].score == 0.0 and segs[0].extra["reference"] == 1
    assert best.corpus_score(segs).score == jiwer.wer(["a b c", "x y"], ["a b c", "x y"])


def test_direction_options_and_errors():
    assert get_metric("wer").higher_is_better is False
    assert get_metric("cer").signature() != get_metric("cer", lowercase=True).signature()
    assert "jiwer:4" in get_metric("wer").signature()
    with pytest.raises(OptionError, match="references"):
        get_metric("wer", references="max")
    with pytest.raises(InputError, match="segment 0 has no reference"):
        get_metric("wer").score(["a"], [[]])
    assert get_metric("cer").score([], []) == []
