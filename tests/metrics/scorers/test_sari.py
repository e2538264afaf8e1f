"""SARI against published values of the reference implementations (the authors'
SARI.py, EASSE's corpus_sari, Hugging Face evaluate's sari) and hand computations."""

import json
import random

import pytest

from metrics.scorers import InputError, OptionError, SegmentResult, get_metric
from metrics.scorers.sari import sari_ngram
from tests.metrics.scorers.sari_reference import easse_corpus_sari, sarisent

SOURCE = "About 95 species are currently accepted ."
REFERENCES = [
    "About 95 species are currently known .",
    "About 95 species are now accepted .",
    "95 species are now accepted .",
]


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
            pytest.approx(100 * t2t, abs=1e-9)
        )


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


# Expected corpus values: EASSE's `corpus_sari` with its defaults (feralvam/easse 0.2.4,
# commit 6a4352e, easse/sari.py), run from its source outside this repository
# (EASSE is not on PyPI): lowercase, 13a tokenizer, corpus-level n-gram
# statistics, F1 for add, keep and delete.
OUTS = ["About 95 you now get in .", "About 95 species are now agreed .", "About 95 species are currently agreed ."]
EASSE_THREE = 49.64237788250738  # corpus_sari([SOURCE] * 3, OUTS, [[r] * 3 for r in REFERENCES])
EASSE_THREE_PARTS = {"add": 14.048368298368297, "keep": 67.11469534050178, "delete": 67.76407000865206}
EASSE_SINGLE = [31.350246975246975, 63.23743386243385, 46.72930933800499]  # corpus_sari of each alone


@pytest.mark.parametrize("variant", ["xu2016", "t2t"])
def test_corpus_score_is_easse_corpus_sari(variant):
    metric = get_metric("sari", variant=variant)
    segs = metric.score(OUTS, [REFERENCES] * 3, srcs=[SOURCE] * 3)
    corpus = metric.corpus_score(segs)
    assert corpus.score == pytest.approx(EASSE_THREE, abs=1e-9)
    for part, value in EASSE_THREE_PARTS.items():
        assert corpus.extra[part] == pytest.approx(value, abs=1e-9)
    # The mean of the segment scores (the old corpus value) is still reported.
    assert corpus.extra["segment_mean"] == pytest.approx(sum(s.score for s in segs) / 3, abs=1e-9)
    for seg, expected in zip(segs, EASSE_SINGLE):
        assert metric.corpus_score([seg]).score == pytest.approx(expected, abs=1e-9)


def test_chunked_scoring_gives_the_whole_corpus_score():
    metric = get_metric("sari")
    whole = metric.corpus_score(metric.score(OUTS, [REFERENCES] * 3, srcs=[SOURCE] * 3))
    # Scored as two chunks by two instances (two workers), statistics through JSON.
    first = get_metric("sari").score(OUTS[:1], [REFERENCES], srcs=[SOURCE])
    rest = get_metric("sari").score(OUTS[1:], [REFERENCES] * 2, srcs=[SOURCE] * 2)
    stored = [SegmentResult(s.score, s.extra, json.loads(json.dumps(s.stats))) for s in first + rest]
    assert metric.corpus_score(stored).score == whole.score
    assert whole.score == pytest.approx(EASSE_THREE, abs=1e-9)


def test_asset_corpus_score_is_easses(shared_data):
    """ASSET test set (359 lines, read as EASSE's read_lines does), reference 0 as the
    system against references 1-9: EASSE's corpus_sari gives 44.5894 (the mean of segment
    scores, our old corpus value, 41.39); Hugging Face evaluate's sari (the t2t variant's
    segments) gives 43.4701."""
    folder = shared_data / "asset"
    lines = [
        [line.strip() for line in (folder / name).open(encoding="utf-8").readlines()]
        for name in ["asset.test.orig"] + [f"asset.test.simp.{i}" for i in range(10)]
    ]
    orig, system, refs = lines[0], lines[1], [list(r) for r in zip(*lines[2:])]
    assert len(orig) == 359
    # segment_mean: xu2016 = the authors' SARI.py averaged (our old corpus value), t2t = evaluate's sari
    for variant, mean in (("xu2016", 41.385382448778294), ("t2t", 43.470056068012994)):
        metric = get_metric("sari", variant=variant)
        corpus = metric.corpus_score(metric.score(system, refs, srcs=orig))
        assert corpus.score == pytest.approx(44.58937782033863, abs=1e-9)  # EASSE 0.2.4 corpus_sari
        assert (corpus.extra["add"], corpus.extra["keep"], corpus.extra["delete"]) == pytest.approx(
            (9.809280310347692, 58.77626800316573, 65.1825851475025), abs=1e-9
        )
        assert corpus.extra["segment_mean"] == pytest.approx(mean, abs=1e-9)


def test_cli_gives_easses_asset_figure(shared_data, tmp_path):
    from io import StringIO

    from django.core.management import call_command

    folder = shared_data / "asset"
    args = ["--metric", "sari", "--src", str(folder / "asset.test.orig"), "--hyp", str(folder / "asset.test.simp.0")]
    for i in range(1, 10):
        args += ["--ref", str(folder / f"asset.test.simp.{i}")]
    out = StringIO()
    call_command("score", *args, "--json", stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue())
    assert result["score"] == pytest.approx(44.58937782033863, abs=1e-9)
    assert "|variant:xu2016|corpus:easse|" in result["signature"]


@pytest.mark.parametrize(
    ("source", "output", "references", "expected"),
    [
        # Hugging Face evaluate's `sari` (metrics/sari/sari.py) on these inputs.
        (SOURCE, "About 95 you now get in .", REFERENCES, 26.953601953601954),
        (SOURCE, "", REFERENCES, 16.078042328042326),
        # The case: evaluate gives 68.75 for an empty output (its split on single
        # spaces makes "" one token); splitting on any whitespace would give 77.08.
        ("a b c", "", ["a", "a b"], 68.75),
        ("a b c", "", ["a b"], 65.27777777777779),
        ("a b c d e f", "", ["a b c"], 57.08333333333333),
        ("a b c", "", ["x"], 91.66666666666666),
    ],
)
def test_t2t_segments_equal_hugging_face_evaluate_including_empty_outputs(source, output, references, expected):
    seg = get_metric("sari", variant="t2t").score([output], [references], srcs=[source])[0]
    assert seg.score == pytest.approx(expected, abs=1e-9)


def test_signature_variant_and_errors():
    assert get_metric("sari").signature().startswith("sari|v:2|variant:xu2016|corpus:easse|lowercase:yes|tokenize:13a|")
    assert "variant:t2t" in get_metric("sari", variant="t2t").signature()
    assert "|variant:easse-corpus|corpus:easse|" in get_metric("sari", variant="easse-corpus").signature()
    with pytest.raises(OptionError, match="variant"):
        get_metric("sari", variant="easse")
    with pytest.raises(InputError, match="needs source"):
        get_metric("sari").score(["a"], [["a"]])
    with pytest.raises(InputError, match="no reference"):
        get_metric("sari").score(["a"], [[]], srcs=["a"])


# ---- every input: random texts against the transcribed references ---------------------

WORDS = ["a", "b", "c", "the", "The", "cat", "Cat", ",", ".", "sat", "mat", "it's", "x-y", "ÉTÉ"]
# Mostly single spaces, often doubled or tripled ones, sometimes a tab.
SEPARATORS = [" "] * 6 + ["  "] * 2 + ["   ", "\t"]


def random_text(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return rng.choice(["", " ", "  "])
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 9))]
    text = words[0]
    for word in words[1:]:
        text += rng.choice(SEPARATORS) + word
    if rng.random() < 0.1:
        text = " " + text
    if rng.random() < 0.1:
        text += " "
    return text


def random_cases(seed: int = 2016, n: int = 400) -> list[tuple[str, str, list[str]]]:
    """(source, output, 1-4 references), small vocabulary so that n-grams overlap."""
    rng = random.Random(seed)
    return [
        (random_text(rng), random_text(rng), [random_text(rng) for _ in range(rng.randint(1, 4))]) for _ in range(n)
    ]


CASES = random_cases()


def test_random_cases_cover_empty_and_doubly_spaced_texts():
    texts = [t for src, out, refs in CASES for t in (src, out, *refs)]
    assert sum(t == "" for t in texts) > 20
    assert sum("  " in t.strip() for t in texts) > 100
    assert sum(out == "" for _, out, _ in CASES) > 10


@pytest.mark.parametrize(
    ("source", "output", "references", "expected"),
    [
        # The cases; expected = SARI.py's SARIsent run on them (x100).
        ("", "a", ["a"], 16.666666666666664),
        ("a b", "", [""], 25.0),
        ("a b  c", "a c", ["a  c"], 33.05555555555556),
    ],
)
def test_xu2016_equals_sari_py_on_empty_texts_and_double_spaces(source, output, references, expected):
    seg = get_metric("sari", tokenize="none").score([output], [references], srcs=[source])[0]
    assert seg.score == pytest.approx(expected, abs=1e-12)
    assert seg.score == pytest.approx(100 * sarisent(source, output, references), abs=1e-12)


def test_xu2016_equals_sari_py_on_random_texts():
    # tokenize=none: SARIsent on the raw texts; 13a (the default): SARIsent on the texts
    # lowercased and tokenized by sacrebleu's own 13a tokenizer.
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tok = Tokenizer13a()
    raw, default = get_metric("sari", tokenize="none"), get_metric("sari")
    differences = []
    for src, out, refs in CASES:
        ours = raw.score([out], [refs], srcs=[src])[0].score
        if abs(ours - 100 * sarisent(src, out, refs)) > 1e-12:
            differences.append(("none", src, out, refs))
        ours = default.score([out], [refs], srcs=[src])[0].score
        expected = 100 * sarisent(tok(src.lower()), tok(out.lower()), [tok(r.lower()) for r in refs])
        if abs(ours - expected) > 1e-12:
            differences.append(("13a", src, out, refs))
    assert differences == []


@pytest.mark.parametrize("tokenize", ["13a", "none"])
def test_easse_corpus_segments_equal_easse_corpus_sari_of_one_sentence(tokenize):
    metric = get_metric("sari", variant="easse-corpus", tokenize=tokenize)
    differences = []
    for src, out, refs in CASES:
        expected = easse_corpus_sari([src], [out], [[r] for r in refs], tokenizer=tokenize)
        seg = metric.score([out], [refs], srcs=[src])[0]
        if abs(seg.score - expected) > 1e-12:
            differences.append((src, out, refs, seg.score, expected))
        assert seg.score == pytest.approx((seg.extra["add"] + seg.extra["keep"] + seg.extra["delete"]) / 3)
    assert differences == []
    # Over the whole corpus (EASSE wants the same number of references everywhere) the
    # corpus score is EASSE's as with every variant.
    same = [case for case in CASES if len(case[2]) == 2]
    segs = metric.score([o for _, o, _ in same], [r for _, _, r in same], srcs=[s for s, _, _ in same])
    expected = easse_corpus_sari(
        [s for s, _, _ in same],
        [o for _, o, _ in same],
        [[r[k] for _, _, r in same] for k in range(2)],
        tokenizer=tokenize,
    )
    assert metric.corpus_score(segs).score == pytest.approx(expected, abs=1e-12)


def test_easse_corpus_segments_on_the_published_example():
    # EASSE's corpus_sari of each of the three outputs alone (values quoted above).
    segs = get_metric("sari", variant="easse-corpus").score(OUTS, [REFERENCES] * 3, srcs=[SOURCE] * 3)
    assert [s.score for s in segs] == pytest.approx(EASSE_SINGLE, abs=1e-9)
