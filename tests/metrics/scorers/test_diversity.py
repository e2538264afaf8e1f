"""distinct-n, self-BLEU and type-token ratio: set-level values."""

import pytest
import sacrebleu

from metrics.scorers import InputError, OptionError, SegmentResult, get_metric

OUTPUTS = [
    "the cat sat on the mat",
    "the cat sat",
    "a dog ran on the mat today",
    "the cat sat",
    "Le chat 😀 est là",
    "",
    "the the the",
    "我喜欢 苹果",
]


def test_flags():
    for name in ["distinct-n", "self-bleu", "ttr"]:
        metric = get_metric(name)
        assert metric.level == "system" and metric.needs_refs is False
    assert get_metric("self-bleu").higher_is_better is False
    assert get_metric("distinct-n").higher_is_better is True


@pytest.mark.parametrize(
    ("n", "outputs", "segment_values", "corpus"),
    [
        # 1-grams: "a a b" -> 2 distinct / 3; "b c" -> 2/2; union {a, b, c} / 5 tokens
        (1, ["a a b", "b c"], [2 / 3, 1.0], 3 / 5),
        # 2-grams: "a b a b" -> {ab, ba} 2 / 3; "a b" -> 1/1; union 2 / 4
        (2, ["a b a b", "a b"], [2 / 3, 1.0], 2 / 4),
        # no bigram in one-word or empty outputs: 0 there
        (2, ["word", "", "x y"], [0.0, 0.0, 1.0], 1.0),
        (2, ["é t é", "e\u0301 t"], [1.0, 1.0], 1.0),  # NFD "é" is not NFC "é": distinct, as sacrebleu sees it
    ],
)
def test_distinct_n_by_hand(n, outputs, segment_values, corpus):
    metric = get_metric("distinct-n", n=str(n))
    segs = metric.score(outputs)
    assert [s.score for s in segs] == pytest.approx(segment_values)
    assert metric.corpus_score(segs).score == pytest.approx(corpus)


def test_type_token_ratio_by_hand_and_options():
    segs = get_metric("ttr").score(["The cat the", "cat dog"])
    assert [s.score for s in segs] == [1.0, 1.0]
    assert get_metric("ttr").corpus_score(segs).score == 4 / 5  # The, cat, the, dog over 5 tokens
    lower = get_metric("ttr", lowercase="true")
    assert lower.corpus_score(lower.score(["The cat the", "cat dog"])).score == 3 / 5
    zh = get_metric("ttr", tokenize="zh")
    assert zh.corpus_score(zh.score(["我喜欢我"])).score == 3 / 4


def test_self_bleu_equals_sacrebleu_sentence_bleu_against_the_others():
    for options in [{}, {"max_ngram_order": "2"}, {"lowercase": "true", "tokenize": "intl"}]:
        metric = get_metric("self-bleu", **options)
        segs = metric.score(OUTPUTS)
        kwargs = {
            "lowercase": options.get("lowercase") == "true",
            "tokenize": options.get("tokenize", "13a"),
            "max_ngram_order": int(options.get("max_ngram_order", 4)),
            "effective_order": True,
        }
        bleu = sacrebleu.BLEU(**kwargs)
        expected = [bleu.sentence_score(h, OUTPUTS[:i] + OUTPUTS[i + 1 :]).score for i, h in enumerate(OUTPUTS)]
        assert [s.score for s in segs] == expected
        assert metric.corpus_score(segs).score == pytest.approx(sum(expected) / len(expected), abs=1e-12)


def test_self_bleu_needs_two_outputs_and_identical_outputs_score_100():
    with pytest.raises(InputError, match="at least two"):
        get_metric("self-bleu").score(["only one"])
    segs = get_metric("self-bleu").score(["same text here now", "same text here now"])
    assert [s.score for s in segs] == pytest.approx([100.0, 100.0])


def test_set_level_corpus_refuses_stored_scores_and_segment_dicts_stay_small():
    metric = get_metric("distinct-n")
    segs = metric.score(["a b c"])
    assert segs[0].as_dict() == {"score": 1.0, "distinct": 2, "total": 2}
    with pytest.raises(InputError, match="set-level"):
        metric.corpus_score([SegmentResult(1.0, {"distinct": 2, "total": 2})])


def test_option_errors():
    with pytest.raises(OptionError, match="n=0 is out of range"):
        get_metric("distinct-n", n="0")
    with pytest.raises(OptionError, match="max_ngram_order=1000"):
        get_metric("self-bleu", max_ngram_order=1000)
    with pytest.raises(OptionError, match="tokenize"):
        get_metric("ttr", tokenize="spm")
    assert get_metric("distinct-n", n=3).signature() != get_metric("distinct-n").signature()
