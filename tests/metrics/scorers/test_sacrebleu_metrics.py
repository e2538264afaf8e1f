"""bleu / chrf / ter equal sacrebleu's sentence and corpus scores, chunked or not."""

import json

import pytest
from sacrebleu.metrics import BLEU, CHRF, TER

from metrics.scorers import InputError, OptionError, SegmentResult, get_metric

# (hypotheses, references per segment): empty strings, Unicode, several and varying reference counts.
CASES = {
    "english": (
        ["the cat sat on the mat", "a quick brown fox jumps", "It is raining ."],
        [["the cat is on the mat"], ["the quick brown fox jumped"], ["It rains ."]],
    ),
    "french-accents": (
        ["Le garçon a mangé une crème brûlée.", "Où est la clé ?", "e\u0301te\u0301 chaud"],
        [["Le garçon mange une crème brûlée."], ["Où se trouve la clé ?"], ["été chaud"]],
    ),
    "chinese-emoji": (
        ["我喜欢吃苹果 🍎", "今天天气很好", "👍 ok"],
        [["我爱吃苹果 🍎"], ["今天的天气很好"], ["👍 ok !"]],
    ),
    "empty-strings": (
        ["", "something", "", "word"],
        [["reference text"], [""], [""], ["word"]],
    ),
    "multi-refs": (
        ["the cat sat on the mat", "there is a dog"],
        [
            ["the cat is on the mat", "a cat sat on the mat", "on the mat sat the cat"],
            ["a dog is there", "there is one dog", "here is a dog"],
        ],
    ),
    "varying-ref-counts": (
        ["the cat sat on the mat", "hello world", "one two three four five"],
        [
            ["the cat is on the mat", "a cat sat on the mat"],
            ["hello there world"],
            ["one two three", "one two three four", "five four three two one"],
        ],
    ),
}

ENGINES = {
    "bleu": [
        ({}, {}),
        ({"tokenize": "intl", "lowercase": "true"}, {"tokenize": "intl", "lowercase": True}),
        ({"tokenize": "zh"}, {"tokenize": "zh"}),
        ({"tokenize": "char"}, {"tokenize": "char"}),
        ({"smooth_method": "floor", "smooth_value": "0.2"}, {"smooth_method": "floor", "smooth_value": 0.2}),
        ({"smooth_method": "add-k"}, {"smooth_method": "add-k"}),
        ({"max_ngram_order": "2", "effective_order": "true"}, {"max_ngram_order": 2, "effective_order": True}),
    ],
    "chrf": [
        ({}, {}),
        ({"word_order": "2"}, {"word_order": 2}),
        ({"char_order": "4", "beta": "1"}, {"char_order": 4, "beta": 1}),
        (
            {"lowercase": "yes", "whitespace": "yes", "eps_smoothing": "yes"},
            {"lowercase": True, "whitespace": True, "eps_smoothing": True},
        ),
    ],
    "ter": [
        ({}, {}),
        ({"case_sensitive": "true"}, {"case_sensitive": True}),
        ({"normalized": "true", "no_punct": "true"}, {"normalized": True, "no_punct": True}),
        ({"asian_support": "true"}, {"asian_support": True}),
    ],
}
SACREBLEU = {"bleu": BLEU, "chrf": CHRF, "ter": TER}


def streams(refs):
    width = max(len(r) for r in refs)
    return [[r[k] if k < len(r) else None for r in refs] for k in range(width)]


def engine_params():
    for name, variants in ENGINES.items():
        for ours, theirs in variants:
            yield pytest.param(name, ours, theirs, id=f"{name}-{json.dumps(ours, sort_keys=True)}")


@pytest.mark.parametrize(("name", "ours", "theirs"), engine_params())
@pytest.mark.parametrize("case", CASES)
def test_segment_and_corpus_scores_equal_sacrebleu(name, ours, theirs, case):
    hyps, refs = CASES[case]
    metric = get_metric(name, **ours)
    segs = metric.score(hyps, refs)

    sentence_kwargs = dict(theirs)
    if name == "bleu":
        sentence_kwargs["effective_order"] = True  # sacrebleu.sentence_bleu's default
    sentence = SACREBLEU[name](**sentence_kwargs)
    assert [s.score for s in segs] == [sentence.sentence_score(h, r).score for h, r in zip(hyps, refs)]

    corpus = SACREBLEU[name](**theirs)
    expected = corpus.corpus_score(hyps, streams(refs))
    assert metric.corpus_score(segs).score == expected.score
    # Every field of sacrebleu's signature, spelled as sacrebleu spells it (its
    # `version:` is our `sacrebleu:`), with nrefs from the corpus state.
    metric.load_corpus_state(metric.corpus_state(hyps, refs))
    theirs_fields = corpus.get_signature().format().replace("version:", "sacrebleu:").split("|")
    ours_fields = metric.signature().split("|")
    assert set(theirs_fields) <= set(ours_fields)
    assert ours_fields[:2] == [name, "v:1"] and ours_fields[-1] == theirs_fields[-1]


@pytest.mark.parametrize("name", ["bleu", "chrf", "ter"])
def test_chunks_combine_exactly_even_after_a_json_round_trip(name):
    hyps = sum((CASES[c][0] for c in CASES), [])
    refs = sum((CASES[c][1] for c in CASES), [])
    metric = get_metric(name)
    whole = metric.corpus_score(metric.score(hyps, refs)).score
    chunks = [metric.score(hyps[i : i + 4], refs[i : i + 4]) for i in range(0, len(hyps), 4)]
    stored = [SegmentResult(s.score, s.extra, json.loads(json.dumps(s.stats))) for c in chunks for s in c]
    assert metric.corpus_score(stored).score == whole
    assert whole == SACREBLEU[name]().corpus_score(hyps, streams(refs)).score


def test_bleu_corpus_extra_matches_sacrebleu_details():
    hyps, refs = CASES["english"]
    metric = get_metric("bleu")
    result = metric.corpus_score(metric.score(hyps, refs))
    expected = BLEU().corpus_score(hyps, streams(refs))
    assert result.extra["precisions"] == expected.precisions
    assert (result.extra["bp"], result.extra["sys_len"], result.extra["ref_len"]) == (
        expected.bp,
        expected.sys_len,
        expected.ref_len,
    )


def test_signature_is_one_format_with_sacrebleus_fields():
    import sacrebleu

    metric = get_metric("bleu")
    assert "nrefs" not in metric.signature()  # no corpus state: unknown, and never guessed from earlier calls
    metric.score(["a b"], [["a b", "a c"]])
    assert "nrefs" not in metric.signature()
    metric.load_corpus_state(metric.corpus_state(["a b"], [["a b"]]))
    assert (
        metric.signature() == f"bleu|v:1|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|sacrebleu:{sacrebleu.__version__}"
    )
    metric.load_corpus_state(metric.corpus_state(["a b", "c"], [["a b", "a c"], ["c"]]))
    assert "|nrefs:var|" in metric.signature()
    assert "|order:2|" in get_metric("bleu", max_ngram_order=2).signature()
    assert "tok:intl" in get_metric("bleu", tokenize="intl").signature()
    assert "|nw:2|" in get_metric("chrf", word_order=2).signature()
    assert "case:mixed" in get_metric("ter", case_sensitive=True).signature()


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("bleu", {"tokenize": "flores101"}, "needs spm=PATH"),  # never sacrebleu's download
        ("bleu", {"tokenize": "spm"}, "not available offline"),
        ("bleu", {"tokenize": "bogus"}, "not available offline"),
        ("bleu", {"smooth_method": "magic"}, "smooth_method"),
        ("bleu", {"smooth_value": "lots"}, "smooth_value"),
        ("chrf", {"char_order": "-1"}, "char_order"),
        ("chrf", {"beta": "two"}, "beta"),
        ("ter", {"tokenize": "13a"}, "unknown option"),
        # issue 12 item 11: a huge n-gram order used to run for minutes and take 20 GB
        ("bleu", {"max_ngram_order": "100000000"}, "max_ngram_order=100000000 is out of range"),
        ("bleu", {"smooth_value": "inf"}, "smooth_value"),
        ("chrf", {"char_order": "1000"}, "char_order"),
        ("chrf", {"beta": "1e9"}, "beta"),
    ],
)
def test_bad_options_are_refused(name, options, message):
    with pytest.raises(OptionError, match=message):
        get_metric(name, **options)


@pytest.mark.parametrize("name", ["bleu", "chrf", "ter"])
def test_bad_inputs_are_input_errors(name):
    metric = get_metric(name)
    with pytest.raises(InputError, match="segment 1 has no reference"):
        metric.score(["a", "b"], [["a"], []])
    with pytest.raises(InputError, match="needs references"):
        metric.score(["a"])
    with pytest.raises(InputError, match="not a string"):
        metric.score(["a", None], [["a"], ["b"]])
    assert metric.score([], []) == []
