"""SARI against published values of the two reference implementations and hand computations."""
import pytest

from metrics.scorers import InputError, OptionError, get_metric
from metrics.scorers.sari import sari_ngram

SOURCE = "About 95 species are currently accepted ."
REFERENCES = ["About 95 species are currently known .", "About 95 species are now accepted .",
              "95 species are now accepted ."]


@pytest.mark.parametrize(
    ("output", "xu2016", "t2t"),
    [
        # xu2016: the values the authors' SARI.py gives (EASSE's tests quote them);
        # t2t: HuggingFace evaluate's documented example value.
        ("About 95 you now get in .", 0.2682782411698074, 0.26953601953601954),
        ("About 95 species are now agreed .", 0.5889995423074248, None),
        ("About 95 species are currently agreed .", 0.5071608864657479, None),
    ],
)
def test_published_values(output, xu2016, t2t):
    seg = get_metric("sari").score([output], [REFERENCES], srcs=[SOURCE])[0]
    assert seg.score == pytest.approx(100 * xu2016, abs=1e-9)
    assert seg.score == pytest.approx((seg.extra["keep"] + seg.extra["delete"] + seg.extra["add"]) / 3, abs=1e-9)
    if t2t is not None:
        assert get_metric("sari", variant="t2t").score([output], [REFERENCES], srcs=[SOURCE])[0].score == (
            pytest.approx(100 * t2t, abs=1e-9))


def test_unigram_components_by_hand():
    # source "a b c", output "a b", references "a b" and "a c" (so counts x2 for source/output):
    # keep: S&C = {a:2, b:2}, good = {a:2, b:1}, S&R = {a:2, b:1, c:1}
    #   precision = (2/2 + 1/2) / 2 = 0.75
    #   recall xu2016 = (2/2 + 1/1) / 3 = 2/3;  t2t = (2 + 1) / (2 + 1 + 1) = 0.75
    # delete: S-C = {c:2}, minus R -> {c:1}: precision 1/2
    # add: nothing added and nothing to add: 0 (xu2016) / 1 (t2t, 0/0 = 1)
    src, out, refs = ["a", "b", "c"], ["a", "b"], [["a", "b"], ["a", "c"]]
    grams = [(t,) for t in src], [(t,) for t in out], [[(t,) for t in r] for r in refs]
    keep, delete, add = sari_ngram(*grams, variant="xu2016")
    assert keep == pytest.approx(2 * 0.75 * (2 / 3) / (0.75 + 2 / 3))
    assert (delete, add) == (0.5, 0.0)
    assert sari_ngram(*grams, variant="t2t") == (pytest.approx(0.75), 0.5, 1.0)


def test_sentence_by_hand_with_empty_orders():
    # source "a b", output "a", reference "a": 1-grams keep 1, delete 1, add 0 (xu2016);
    # 2-grams keep 0, delete 1 ("a b" deleted, not in the reference), add 0; 3-, 4-grams all 0.
    # xu2016 = (mean keep 1/4 + mean delete 2/4 + mean add 0) / 3 = 0.25; t2t counts 0/0 as 1 -> 1.
    assert get_metric("sari").score(["a"], [["a"]], srcs=["a b"])[0].score == 25.0
    assert get_metric("sari", variant="t2t").score(["a"], [["a"]], srcs=["a b"])[0].score == 100.0


def test_copying_the_source_adds_and_deletes_nothing():
    seg = get_metric("sari").score([SOURCE], [REFERENCES], srcs=[SOURCE])[0]
    assert seg.extra["add"] == 0.0 and seg.extra["delete"] == 0.0


def test_tokenization_and_case_options():
    sari = get_metric("sari")
    assert sari.tokens("Hello, World!") == ["hello", ",", "world", "!"]
    assert get_metric("sari", tokenize="none", lowercase="false").tokens("Hello, World!") == ["Hello,", "World!"]
    a = get_metric("sari").score(["The cat."], [["the cat ."]], srcs=["THE CAT ."])[0].score
    b = get_metric("sari").score(["the cat ."], [["the cat ."]], srcs=["the cat ."])[0].score
    assert a == b


def test_corpus_is_the_mean_of_segments():
    metric = get_metric("sari")
    outs = ["About 95 you now get in .", "About 95 species are now agreed .", "About 95 species are currently agreed ."]
    segs = metric.score(outs, [REFERENCES] * 3, srcs=[SOURCE] * 3)
    assert metric.corpus_score(segs).score == pytest.approx(100 * (0.2682782411698074 + 0.5889995423074248
                                                                   + 0.5071608864657479) / 3, abs=1e-9)
    assert metric.corpus_score(segs[:1] + segs[1:]).score == metric.corpus_score(segs).score


def test_signature_variant_and_errors():
    assert "variant:xu2016" in get_metric("sari").signature()
    assert "variant:t2t" in get_metric("sari", variant="t2t").signature()
    with pytest.raises(OptionError, match="variant"):
        get_metric("sari", variant="easse")
    with pytest.raises(InputError, match="needs source"):
        get_metric("sari").score(["a"], [["a"]])
    with pytest.raises(InputError, match="no reference"):
        get_metric("sari").score(["a"], [[]], srcs=["a"])
