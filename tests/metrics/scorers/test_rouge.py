"""rouge: rouge-score's values, with a tokenizer that keeps non-ASCII words."""

import json

import pytest

from metrics.scorers import InputError, OptionError, SegmentResult, get_metric
from metrics.scorers.rouge import UnicodeTokenizer
from tests.lazy_modules import lazy

# rouge-score loads nltk: imported by the first test that uses it, not at collection (tests/lazy_modules.py).
rouge_scorer = lazy("rouge_score.rouge_scorer")

TYPES = ["rouge1", "rouge2", "rougeL"]

CASES = [
    ("the cat sat on the mat", ["the cat is on the mat"]),
    ("Le garçon a mangé une crème brûlée.", ["Le garçon mange une crème brûlée."]),
    ("e\u0301te\u0301 très chaud", ["été chaud"]),  # combining accents vs precomposed
    ("我喜欢吃苹果 🍎", ["我爱吃苹果"]),
    ("今日はいい天気ですね", ["今日は天気がいい"]),
    ("Привет, как дела?", ["Привет! Как у тебя дела?"]),
    ("", ["something"]),
    ("something", [""]),
    ("the runners were running quickly", ["a runner runs quick", "the runner was running fast", "nothing"]),
]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Ça coûte 10 €, déjà!", ["ça", "coûte", "10", "déjà"]),
        ("e\u0301te\u0301", ["été"]),
        ("日本語のテスト", ["日", "本", "語", "の", "テ", "ス", "ト"]),
        ("我喜欢 apples 🍎!", ["我", "喜", "欢", "apples"]),
        ("Straße ΚΑΛΗΜΈΡΑ", ["straße", "καλημέρα"]),
        ("", []),
        ("  ... !!! ", []),
        ("don't stop-me", ["don", "t", "stop", "me"]),  # same split as rouge-score's own tokenizer
    ],
)
def test_unicode_tokenizer_keeps_letters_of_every_script(text, tokens):
    assert UnicodeTokenizer().tokenize(text) == tokens


def test_unicode_tokenizer_agrees_with_rouge_score_on_ascii():
    from rouge_score.tokenizers import DefaultTokenizer

    for text in ["The cat's 3 mats, (quickly) running!", "A-B c_d  e", "running quickly 42"]:
        for stem in (False, True):
            assert UnicodeTokenizer(stem).tokenize(text) == DefaultTokenizer(stem).tokenize(text)


@pytest.mark.parametrize("stemmer", [False, True])
@pytest.mark.parametrize(("hyp", "refs"), CASES)
def test_scores_equal_rouge_score_with_the_same_tokenizer(hyp, refs, stemmer):
    metric = get_metric("rouge", stemmer=str(stemmer).lower())
    seg = metric.score([hyp], [refs])[0]
    scorer = rouge_scorer.RougeScorer(TYPES, tokenizer=UnicodeTokenizer(stemmer))
    expected = scorer.score_multi(refs, hyp)  # max F over references, per type
    for t in TYPES:
        assert seg.extra[f"{t}_f"] == expected[t].fmeasure
        assert seg.extra[f"{t}_p"] == expected[t].precision
        assert seg.extra[f"{t}_r"] == expected[t].recall
    assert seg.score == expected["rougeL"].fmeasure


@pytest.mark.parametrize(("hyp", "refs"), CASES)
def test_default_tokenizer_option_is_rouge_score_unchanged(hyp, refs):
    seg = get_metric("rouge", tokenizer="default", variant="rouge2").score([hyp], [refs])[0]
    expected = rouge_scorer.RougeScorer(TYPES).score_multi(refs, hyp)
    assert seg.score == expected["rouge2"].fmeasure
    assert seg.extra["rouge1_f"] == expected["rouge1"].fmeasure


def test_non_ascii_text_is_scored_only_with_the_unicode_tokenizer():
    hyp, refs = "我喜欢吃苹果", ["我爱吃苹果"]
    assert get_metric("rouge", tokenizer="default").score([hyp], [refs])[0].score == 0.0
    assert get_metric("rouge").score([hyp], [refs])[0].score > 0.5


def test_multiple_references_take_the_best_one():
    metric = get_metric("rouge", variant="rouge1")
    alone = metric.score(["a b c d"], [["a b c d"]])[0].score
    with_worse = metric.score(["a b c d"], [["x y", "a b c d", "a"]])[0].score
    assert alone == with_worse == 1.0


def test_corpus_is_the_mean_and_chunks_combine():
    metric = get_metric("rouge")
    hyps, refs = [h for h, _ in CASES], [r for _, r in CASES]
    segs = metric.score(hyps, refs)
    corpus = metric.corpus_score(segs)
    assert corpus.score == pytest.approx(sum(s.score for s in segs) / len(segs), abs=1e-12)
    assert corpus.extra["rouge1_p"] == pytest.approx(sum(s.extra["rouge1_p"] for s in segs) / len(segs), abs=1e-12)
    parts = metric.score(hyps[:4], refs[:4]) + metric.score(hyps[4:], refs[4:])
    stored = [SegmentResult(s.score, s.extra, json.loads(json.dumps(s.stats))) for s in parts]
    assert metric.corpus_score(stored).score == corpus.score


def test_options_and_signature():
    assert get_metric("rouge").signature() != get_metric("rouge", stemmer="true").signature()
    assert "tokenizer:unicode" in get_metric("rouge").signature()
    assert "rouge-score:0.1.2" in get_metric("rouge").signature()
    for options, message in [
        ({"variant": "rouge3"}, "variant"),
        ({"tokenizer": "nltk"}, "tokenizer"),
        ({"tokenizer": "default", "lowercase": "false"}, "always lowercases"),
        ({"stem": "true"}, "unknown option"),
    ]:
        with pytest.raises(OptionError, match=message):
            get_metric("rouge", **options)
    with pytest.raises(InputError, match="no reference"):
        get_metric("rouge").score(["a"], [[]])


def test_half_width_katakana_is_tokenized_like_full_width():
    """Issue 8: half-width Katakana used to be one run-on token; it is now the same
    character tokens as full-width text (sound marks composed, as NFKC does)."""
    tok = UnicodeTokenizer()
    assert tok.tokenize("ｶﾀｶﾅ ｶﾞｲﾄﾞ") == tok.tokenize("カタカナ ガイド") == ["カ", "タ", "カ", "ナ", "ガ", "イ", "ド"]
    metric = get_metric("rouge", variant="rouge1")
    assert metric.score(["ｶﾞｲﾄﾞ"], [["ガイド"]])[0].score == 1.0


def test_thai_is_not_segmented_as_documented():
    # A run of Thai letters is one token: text must be word-segmented first (module docstring).
    assert UnicodeTokenizer().tokenize("ภาษาไทย ง่าย") == ["ภาษาไทย", "ง่าย"]
