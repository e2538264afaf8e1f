"""YiSi-0/1/2 against the reference C++ test vectors and independent re-computations."""

import math
import re

import numpy as np
import pytest

from metrics.scorers import InputError, OptionError, get_metric
from metrics.scorers.yisi import IdfTable, lcs_similarity


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


# ---- YiSi-0 against the C++ (yisi-0.config: lcs, learned ref idf, n=3, alpha=0.8) ----
@pytest.fixture(scope="module")
def yisi_test(shared_data):
    folder = shared_data / "yisi-test"
    config = dict(line.split("=", 1) for line in _lines(folder / "yisi-0.config") if "=" in line)
    return {
        "config": config,
        "refs": _lines(folder / config["ref-file"]),
        "hyps": _lines(folder / config["hyp-file"]),
        "sentence": [float(x) for x in _lines(folder / config["sntscore-file"])],
        "document": float(_lines(folder / config["docscore-file"])[0]),
        "lexweight": (folder / "lexweight_test.out").read_text(encoding="utf-8"),
    }


def _metric_from_config(config):
    assert config["lexsim-type"] == "lcs" and config["reflexweight-type"] == "learn"
    return get_metric("yisi0", ngram=config["ngram-size"], alpha=config["alpha"])


def test_yisi0_matches_every_reference_sentence_score(yisi_test):
    metric = _metric_from_config(yisi_test["config"])
    segments = metric.score(yisi_test["hyps"], [[r] for r in yisi_test["refs"]])
    assert len(segments) == len(yisi_test["sentence"]) == 10
    for got, expected in zip(segments, yisi_test["sentence"]):
        assert got.score == pytest.approx(expected, abs=1e-3)
        # the C++ prints 6 significant digits; we agree to that precision
        assert got.score == pytest.approx(expected, rel=5e-6)


def test_yisi0_document_score_is_the_reference_doc_score(yisi_test):
    metric = _metric_from_config(yisi_test["config"])
    segments = metric.score(yisi_test["hyps"], [[r] for r in yisi_test["refs"]])
    assert metric.corpus_score(segments).score == pytest.approx(yisi_test["document"], abs=1e-6)


def test_yisi0_defaults_are_the_reference_configuration(yisi_test):
    config = yisi_test["config"]
    metric = get_metric("yisi0")
    assert metric.options["ngram"] == int(config["ngram-size"])
    assert metric.options["alpha"] == float(config["alpha"])


def test_idf_matches_reference_lexweight_test(yisi_test):
    # The five sentences of the C++ lexweight_test program, whose output is lexweight_test.out.
    corpus = [
        "Wondering where you left your umbrella ?",
        "Your laptop ?",
        "Your wallet ?",
        "Not to worry .",
        "Toronto Pearson offers a secure Lost and Found service for all passengers and employees .",
    ]
    table = IdfTable(s.split() for s in corpus)
    expected = re.findall(r"The idf for '(.+?)' is ([0-9.]+)", yisi_test["lexweight"])
    assert len(expected) == 2
    for word, value in expected:
        assert table(word) == pytest.approx(float(value), abs=1e-5)


def test_idf_formula_unseen_and_lowercase_fallback():
    table = IdfTable([["The", "cat"], ["a", "cat"], ["a", "dog"]])
    assert table("cat") == pytest.approx(math.log2(1 + 4 / 3))
    assert table("dog") == pytest.approx(math.log2(1 + 4 / 2))
    assert table("zebra") == pytest.approx(math.log2(1 + 4))
    # a word missing as written is looked up lowercased (table keys keep their case)
    assert table("A") == table("a")
    assert table("the") == table("zebra")


# ---- lexical similarity ----
@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("strategy", "strategy", 1.0),
        ("election", "elections", 2 * 8 / 17),
        ("counter", "confront", 2 * 2 / 15),  # "co", "nt": 2
        ("abc", "xyz", 0.0),
        (",", ",", 1.0),
        ("café", "cafe", 2 * 3 / 9),  # lengths in UTF-8 bytes: café is 5 bytes
        ("naïve", "naïveté", 2 * 6 / 15),
    ],
)
def test_lcs_similarity_in_bytes(a, b, expected):
    assert lcs_similarity(a, b) == pytest.approx(expected)
    assert lcs_similarity(b, a) == pytest.approx(expected)


def test_lcs_similarity_matches_brute_force():
    rng = np.random.default_rng(0)
    alphabet = list("abcé")
    for _ in range(200):
        a = "".join(rng.choice(alphabet, rng.integers(1, 8)))
        b = "".join(rng.choice(alphabet, rng.integers(1, 8)))
        ab, bb = a.encode(), b.encode()
        longest = max((j - i for i in range(len(ab)) for j in range(i + 1, len(ab) + 1) if ab[i:j] in bb), default=0)
        assert lcs_similarity(a, b) == pytest.approx(2 * longest / (len(ab) + len(bb)))


# ---- properties ----
def test_identical_sentences_score_one():
    metric = get_metric("yisi0")
    segments = metric.score(["the cat sat on the mat", "hi"], [["the cat sat on the mat"], ["hi"]])
    assert [s.score for s in segments] == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("hyp, ref", [("", "the cat"), ("the cat", ""), ("", ""), ("   ", "a b")])
def test_empty_side_scores_zero(hyp, ref):
    assert get_metric("yisi0").score([hyp], [[ref]])[0].score == 0.0


def test_alpha_one_is_recall_zero_is_precision():
    hyps, refs = ["the cat sat on a mat today"], [["a cat sat on the mat"]]
    base = get_metric("yisi0").score(hyps, refs)[0]
    p, r = base.extra["precision"], base.extra["recall"]
    assert 0 < p < 1 and 0 < r < 1 and p != pytest.approx(r)
    assert get_metric("yisi0", alpha=1.0).score(hyps, refs)[0].score == pytest.approx(r)
    assert get_metric("yisi0", alpha=0.0).score(hyps, refs)[0].score == pytest.approx(p)
    for alpha in (0.3, 0.8):
        got = get_metric("yisi0", alpha=alpha).score(hyps, refs)[0].score
        assert got == pytest.approx(p * r / (alpha * p + (1 - alpha) * r))


def test_precision_and_recall_follow_the_paper_formula_by_hand():
    # ngram=1, uniform weights: recall = mean over ref words of best lexical match.
    metric = get_metric("yisi0", ngram=1, idf=False)
    seg = metric.score(["cats sat"], [["cat sat down"]])[0]
    cat_cats = 2 * 3 / 7
    assert seg.extra["recall"] == pytest.approx((cat_cats + 1.0 + 0.0) / 3)  # "down" matches nothing
    assert seg.extra["precision"] == pytest.approx((cat_cats + 1.0) / 2)


def test_short_sentences_use_the_shorter_length_as_n():
    # hyp has 2 words < n=3: both sides use bigrams (C++ min(len1, len2))
    three = get_metric("yisi0", ngram=3, idf=False).score(["a b"], [["a b c"]])[0]
    two = get_metric("yisi0", ngram=2, idf=False).score(["a b"], [["a b c"]])[0]
    assert three.extra == pytest.approx(two.extra)
    assert three.extra["precision"] == pytest.approx(1.0)
    assert three.extra["recall"] == pytest.approx(0.5)  # "a b" matches fully, "b c" vs "a b" not at all


def test_multiple_references_take_max_precision_and_max_recall():
    metric = get_metric("yisi0")
    hyp = ["the cat sat on the mat"]
    ref_a, ref_b = "the cat sat", "a dog sat on the mat today"
    both = metric.score(hyp, [[ref_a, ref_b]])[0]
    # idf is learned from all references of the call, so score each alone with the same table
    alone = [metric.score(hyp + hyp, [[ref_a], [ref_b]])[i] for i in range(2)]
    assert both.extra["precision"] == pytest.approx(max(a.extra["precision"] for a in alone))
    assert both.extra["recall"] == pytest.approx(max(a.extra["recall"] for a in alone))


def test_corpus_is_mean_of_segments():
    metric = get_metric("yisi0")
    hyps = ["a b c d", "the cat", "x y z"]
    refs = [["a b c e"], ["the dog"], ["x y"]]
    segs = metric.score(hyps, refs)
    assert metric.corpus_score(segs).score == pytest.approx(sum(s.score for s in segs) / 3)
    assert math.isnan(metric.corpus_score([]).score)


@pytest.mark.parametrize(
    "options", [{"ngram": 0}, {"ngram": "x"}, {"alpha": 1.5}, {"alpha": -0.1}, {"idf": "maybe"}, {"beta": 0.1}]
)
def test_yisi0_rejects_bad_options(options):
    with pytest.raises(OptionError):
        get_metric("yisi0", **options)


def test_cli_strings_are_coerced():
    metric = get_metric("yisi0", ngram="2", alpha="0.5", idf="false")
    assert metric.options == {"ngram": 2, "alpha": 0.5, "idf": False}
    assert metric.signature() == "yisi0|v:1|alpha:0.5|idf:no|ngram:2"


def test_yisi0_input_errors():
    metric = get_metric("yisi0")
    with pytest.raises(InputError):
        metric.score(["a"], None)
    with pytest.raises(InputError):
        metric.score(["a", "b"], [["a"]])
    with pytest.raises(InputError):
        metric.score(["a"], [[]])
    with pytest.raises(InputError):
        metric.score(["a"], ["a"])  # a string where a list of references is expected
    with pytest.raises(InputError):
        metric.score([None], [["a"]])


# ---- YiSi-1 / YiSi-2 with the packaged MiniLM (the `encoder` fixture of conftest.py) ----
def _units(encoder, text):
    emb = encoder.token_embeddings([text])[0]
    keep = [i for i, special in enumerate(emb.special_mask) if not special]
    vectors = emb.vectors.cpu().numpy().astype(np.float64)[keep]
    return [emb.input_ids[i] for i in keep], vectors


def _idf(docs):
    n = len(docs)
    df = {}
    for doc in docs:
        for u in set(doc):
            df[u] = df.get(u, 0) + 1
    return lambda u: math.log2(1 + (n + 1) / (df.get(u, 0) + 1))


def _yisi_by_hand(ids1, v1, w1, ids_h, vh, wh, n, alpha):
    """Plain loops, straight from the paper's s_p / s_r definitions."""
    v1 = v1 / np.linalg.norm(v1, axis=1, keepdims=True)
    vh = vh / np.linalg.norm(vh, axis=1, keepdims=True)
    sim = np.maximum(v1 @ vh.T, 0.0)
    n = min(n, len(ids1), len(ids_h))
    starts1, starts_h = range(len(ids1) - n + 1), range(len(ids_h) - n + 1)
    num = den = 0.0
    for a in starts1:
        num += max(sum(w1(ids1[a + k]) * sim[a + k, b + k] for k in range(n)) for b in starts_h)
        den += sum(w1(ids1[a + k]) for k in range(n))
    recall = num / den
    num = den = 0.0
    for b in starts_h:
        num += max(sum(wh(ids_h[b + k]) * sim[a + k, b + k] for k in range(n)) for a in starts1)
        den += sum(wh(ids_h[b + k]) for k in range(n))
    precision = num / den
    return precision * recall / (alpha * precision + (1 - alpha) * recall), precision, recall


def test_yisi1_identical_text_scores_one(encoder):
    metric = get_metric("yisi1", device="cpu")
    texts = ["A Republican strategy to counter the re-election of Obama.", "Hello world"]
    segs = metric.score(texts, [[t] for t in texts])
    assert [s.score for s in segs] == pytest.approx([1.0, 1.0], abs=1e-5)


def test_yisi1_matches_hand_computation_from_encoder_vectors(encoder):
    hyps = ["The cat sat on the mat.", "Obama won the election"]
    refs = [["A cat was sitting on the mat."], ["The election was won by Obama", "Obama was re-elected"]]
    metric = get_metric("yisi1", device="cpu", ngram=2, alpha=0.7)
    segs = metric.score(hyps, refs)
    ref_units = [_units(encoder, r) for seg_refs in refs for r in seg_refs]
    weight = _idf([ids for ids, _ in ref_units])
    owners = [0, 1, 1]
    for seg, hyp in enumerate(hyps):
        ids_h, vh = _units(encoder, hyp)
        per_ref = [
            _yisi_by_hand(ids1, v1, weight, ids_h, vh, weight, 2, 0.7)
            for (ids1, v1), owner in zip(ref_units, owners)
            if owner == seg
        ]
        p = max(x[1] for x in per_ref)
        r = max(x[2] for x in per_ref)
        assert segs[seg].extra["precision"] == pytest.approx(p, abs=1e-5)
        assert segs[seg].extra["recall"] == pytest.approx(r, abs=1e-5)
        assert segs[seg].score == pytest.approx(p * r / (0.7 * p + 0.3 * r), abs=1e-5)
    assert 0.0 < segs[0].score < 1.0


def test_yisi2_matches_hand_computation_with_source_and_output_idf(encoder):
    srcs = ["Le chat est assis sur le tapis.", "Obama a gagné l'élection"]
    hyps = ["The cat sits on the carpet.", "Obama won the election"]
    metric = get_metric("yisi2", device="cpu")
    segs = metric.score(hyps, srcs=srcs)
    src_units = [_units(encoder, s) for s in srcs]
    hyp_units = [_units(encoder, h) for h in hyps]
    w_src = _idf([ids for ids, _ in src_units])
    w_hyp = _idf([ids for ids, _ in hyp_units])
    for seg in range(2):
        expected, p, r = _yisi_by_hand(*src_units[seg][:2], w_src, *hyp_units[seg][:2], w_hyp, 3, 0.8)
        assert segs[seg].score == pytest.approx(expected, abs=1e-5)
        assert segs[seg].extra["precision"] == pytest.approx(p, abs=1e-5)
    same = metric.score(hyps, srcs=hyps)
    assert [s.score for s in same] == pytest.approx([1.0, 1.0], abs=1e-5)


def test_yisi2_needs_source_not_references():
    metric = get_metric("yisi2", device="cpu")
    assert metric.needs_source and not metric.needs_refs
    with pytest.raises(InputError):
        metric.score(["a"], [["a"]])


def test_embedding_variants_empty_text_scores_zero(encoder):
    metric = get_metric("yisi1", device="cpu")
    segs = metric.score(["", "a cat"], [["a cat"], [""]])
    assert [s.score for s in segs] == [0.0, 0.0]


@pytest.mark.parametrize("name", ["yisi1", "yisi2"])
@pytest.mark.parametrize(
    "options", [{"layer": "x"}, {"layer": -1}, {"batch_size": 0}, {"ngram": 0}, {"alpha": 2}, {"nope": 1}]
)
def test_embedding_variants_reject_bad_options(name, options):
    with pytest.raises(OptionError):
        get_metric(name, **options)


def test_layer_beyond_the_model_is_an_option_error(encoder):
    metric = get_metric("yisi1", device="cpu", layer=encoder.num_layers + 1)
    with pytest.raises(OptionError):
        metric.score(["a"], [["a"]])


def test_layer_option_changes_the_vectors(encoder):
    hyps, refs = ["The cat sat on the mat."], [["A cat was sitting on the mat."]]
    top = get_metric("yisi1", device="cpu").score(hyps, refs)[0].score
    low = get_metric("yisi1", device="cpu", layer="2").score(hyps, refs)[0].score
    assert top != pytest.approx(low, abs=1e-4)
    assert "layer:2" in get_metric("yisi1", layer="2").signature()


def test_embedding_signature_names_the_layer_actually_used():
    """`layer` left unset means the top layer; the signature must say which one,
    so a figure can be reproduced with an explicit layer=N."""
    import json

    from metrics.scorers.loading import resolve_model_path

    top = json.loads((resolve_model_path(None) / "config.json").read_text())["num_hidden_layers"]
    implicit = get_metric("yisi1").signature()
    assert f"|layer:{top}|" in implicit
    assert implicit == get_metric("yisi1", layer=top).signature()
    assert f"|layer:{top - 1}|" in get_metric("yisi1", layer=top - 1).signature()


# ---- idf on a cased model: the C++ retries a unit in lower case ----
@pytest.fixture(scope="module")
def tiny_cased_bert(tmp_path_factory):
    """A random-weight cased BERT with a WordPiece vocabulary holding "The" and "the"."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    out = tmp_path_factory.mktemp("tiny-cased-bert")
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "The",
        "the",
        "Cat",
        "cat",
        "sat",
        "on",
        "mat",
        "A",
        "a",
        "dog",
        "Mat",
        "##s",
        ".",
    ]
    (out / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(str(out / "vocab.txt"), do_lower_case=False).save_pretrained(out)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(out)
    return str(out)


def _cxx_idf(docs):
    """The C++ lexweight: idf over unit strings; a unit missing from the table is
    looked up again lowercased (ASCII), then weighs as unseen."""
    n = len(docs)
    df = {}
    for doc in docs:
        for u in set(doc):
            df[u] = df.get(u, 0) + 1

    def weight(u):
        count = df.get(u, df.get(u.lower()))
        return math.log2(1 + (n + 1) / ((count or 0) + 1))

    return weight


def test_yisi1_idf_retries_units_in_lower_case_like_the_cxx(tiny_cased_bert):
    from metrics.scorers.encoder import get_encoder

    encoder = get_encoder(tiny_cased_bert, "cpu")
    hyps = ["The Cat sat on a Mat .", "A dog sat ."]
    refs = [["the cat sat on the mat .", "a cat sat ."], ["the dog sat on the mats ."]]
    metric = get_metric("yisi1", model=tiny_cased_bert, device="cpu")
    segs = metric.score(hyps, refs)

    def units(text):
        emb = encoder.token_embeddings([text])[0]
        keep = [i for i, special in enumerate(emb.special_mask) if not special]
        return [emb.tokens[i] for i in keep], emb.vectors.cpu().numpy().astype(np.float64)[keep]

    ref_units = [units(r) for seg_refs in refs for r in seg_refs]
    assert "The" in units(hyps[0])[0] and "The" not in {u for us, _ in ref_units for u in us}
    weight = _cxx_idf([u for u, _ in ref_units])
    owners = [0, 0, 1]
    for seg, hyp in enumerate(hyps):
        ids_h, vh = units(hyp)
        per_ref = [
            _yisi_by_hand(u1, v1, weight, ids_h, vh, weight, 3, 0.8)
            for (u1, v1), owner in zip(ref_units, owners)
            if owner == seg
        ]
        p, r = max(x[1] for x in per_ref), max(x[2] for x in per_ref)
        assert segs[seg].score == pytest.approx(p * r / (0.8 * p + 0.2 * r), abs=1e-6)
    # Without the retry ("The", "Cat", "Mat" unseen) the first score would differ.
    no_retry = lambda u: math.log2(1 + 4 / 1) if u in ("The", "Cat", "Mat") else weight(u)  # noqa: E731
    ids_h, vh = units(hyps[0])
    per_ref = [_yisi_by_hand(u1, v1, no_retry, ids_h, vh, no_retry, 3, 0.8) for u1, v1 in ref_units[:2]]
    p, r = max(x[1] for x in per_ref), max(x[2] for x in per_ref)
    assert abs(segs[0].score - p * r / (0.8 * p + 0.2 * r)) > 1e-4


def test_yisi_chunks_with_corpus_state_equal_one_call(yisi_test):
    """Real chunked scoring (issue 12): the C++ test corpus in chunks, idf from the whole
    reference file loaded as corpus state, gives the C++ sentence and document scores."""
    metric = _metric_from_config(yisi_test["config"])
    hyps, refs = yisi_test["hyps"], [[r] for r in yisi_test["refs"]]
    state = metric.corpus_state(hyps, refs)
    segments = []
    for start in range(0, len(hyps), 3):
        worker = _metric_from_config(yisi_test["config"])
        worker.load_corpus_state(state)
        segments += worker.score(hyps[start : start + 3], refs[start : start + 3])
    assert [s.score for s in segments] == pytest.approx(yisi_test["sentence"], rel=5e-6)
    assert metric.corpus_score(segments).score == pytest.approx(yisi_test["document"], abs=1e-6)
    # Without the state each chunk learns idf from its own references: other scores.
    alone = _metric_from_config(yisi_test["config"]).score(hyps[:3], refs[:3])
    assert [s.score for s in alone] != pytest.approx(yisi_test["sentence"][:3], rel=5e-6)
