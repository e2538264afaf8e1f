"""Simplicity-aware BERTScore (seed 003, eq. 4-5) and RelBERTScore (eq. 6),
checked against bert-score given the same token weights as an idf table."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from collections import defaultdict

import pytest

from metrics.scorers import get_metric
from metrics.scorers.encoder import get_encoder
from metrics.scorers.errors import InputError, OptionError
from metrics.scorers.loading import resolve_model_path
from tests.lazy_modules import lazy

# Imported by the first test that uses them, not at collection (tests/lazy_modules.py).
torch = lazy("torch")
bert_score = lazy("bert_score", skip_if_absent=True)
wordfreq = pytest.importorskip("wordfreq")

# Every word here is a single MiniLM word piece, so a per-word weight is a per-token-id weight.
HYPS = ["the cat sat on the mat", "he went to the big house", "she has a red car"]
REFS = [["a cat was on the mat", "the cat is on a mat"], ["he walked to the large house"], ["her car is red"]]


@pytest.fixture(scope="session")
def model_path():
    return str(resolve_model_path(None))


@pytest.fixture(scope="session")
def tokenizer():
    return get_encoder(device="cpu").tokenizer


def bert_score_with_weights(model_path, tokenizer, hyps, refs, weight_of_id):
    """bert-score with our token weights passed as its (predefined) idf table."""
    table = defaultdict(float)
    for text in hyps + [r for g in refs for r in g]:
        for tid in tokenizer(text, add_special_tokens=False)["input_ids"]:
            table[tid] = weight_of_id(tid)
    table[tokenizer.cls_token_id] = table[tokenizer.sep_token_id] = 0.0
    P, R, F = bert_score.score(
        hyps, refs, model_type=model_path, num_layers=6, idf=table, batch_size=1, device="cpu", nthreads=0
    )
    return torch.stack([P, R, F], dim=1)


def ours(metric, hyps, refs):
    return torch.tensor([[s.extra["precision"], s.extra["recall"], s.extra["f1"]] for s in metric.score(hyps, refs)])


def test_single_piece_words(tokenizer):
    for text in HYPS + [r for g in REFS for r in g]:
        assert len(tokenizer(text, add_special_tokens=False)["input_ids"]) == len(text.split())


def test_wordfreq_weights(model_path, tokenizer):
    def weight(tid):  # share of 20-word sentences that contain the word (eq. 4 from wordfreq)
        return 1 - (1 - wordfreq.word_frequency(tokenizer.convert_ids_to_tokens(tid), "en")) ** 20

    expected = bert_score_with_weights(model_path, tokenizer, HYPS, REFS, weight)
    got = ours(get_metric("simplicity-bertscore", device="cpu"), HYPS, REFS)
    assert torch.allclose(got, expected, atol=1e-4)
    plain = ours(get_metric("bertscore", device="cpu"), HYPS, REFS)
    assert not torch.allclose(got, plain, atol=1e-3)  # the weights do change the score


def test_corpus_file_gives_sentence_frequency_of_model_tokens(tmp_path, model_path, tokenizer):
    corpus = ["the cat is on the mat .", "a red car .", "he is in the house .", "the big dog sat ."]
    path = tmp_path / "simple.txt"
    path.write_text("\n".join(corpus) + "\n\n")
    sets = [set(tokenizer(line, add_special_tokens=False)["input_ids"]) for line in corpus]

    def weight(tid):  # eq. 4: tf(w) = (1/M) sum_i [w in x_i]
        return sum(tid in s for s in sets) / len(sets)

    expected = bert_score_with_weights(model_path, tokenizer, HYPS, REFS, weight)
    metric = get_metric("simplicity-bertscore", frequency_file=str(path), device="cpu")
    assert torch.allclose(ours(metric, HYPS, REFS), expected, atol=1e-4)
    assert f"frequency_file:{path.name}@" in metric.signature()


def test_table_file(tmp_path, model_path, tokenizer):
    table = {"cat": 3.0, "mat": 1.0, "house": 2.0, "car": 1.0, "red": 0.5, "the": 4.0, "he": 1.0}
    path = tmp_path / "weights.tsv"
    path.write_text("".join(f"{w.upper() if w == 'cat' else w}\t{v}\n" for w, v in table.items()))

    def weight(tid):
        return table.get(tokenizer.convert_ids_to_tokens(tid), 0.0)

    expected = bert_score_with_weights(model_path, tokenizer, HYPS, REFS, weight)
    metric = get_metric("simplicity-bertscore", frequency_file=str(path), device="cpu")
    assert torch.allclose(ours(metric, HYPS, REFS), expected, atol=1e-4)


def test_subword_tokens_take_their_words_weight():
    metric = get_metric("simplicity-bertscore", device="cpu")
    encoder = metric.encoder()
    text = "pharmacologists eat"
    emb = encoder.token_embeddings([text])[0]
    weights = metric.token_weights(encoder, {text: emb}, [text])[text].tolist()
    pieces = [w for w, special in zip(weights, emb.special_mask) if not special]
    assert len(pieces) > 2  # "pharmacologists" is several word pieces
    rare = 1 - (1 - wordfreq.word_frequency("pharmacologists", "en")) ** 20
    assert pieces[:-1] == pytest.approx([rare] * (len(pieces) - 1))
    assert pieces[-1] == pytest.approx(1 - (1 - wordfreq.word_frequency("eat", "en")) ** 20)
    assert weights[0] == weights[-1] == 0.0


def test_relbertscore_matches_formula_on_bert_score(model_path):
    hyps = ["the cat is on the mat", "The feline was seated upon the rug.", "a dog"]
    srcs = ["The feline was seated upon the rug.", "The feline was seated upon the rug.", "The feline rested."]
    refs = [["the cat is on the mat"], ["The cat sat on the mat."], ["The cat sat."]]
    _, _, f = bert_score.score(
        hyps + srcs, refs + refs, model_type=model_path, num_layers=6, batch_size=1, device="cpu"
    )
    f_out, f_in = f[:3], f[3:]
    segments = get_metric("relbertscore", device="cpu").score(hyps, refs, srcs)
    for seg, fo, fi in zip(segments, f_out.tolist(), f_in.tolist()):
        assert seg.score == pytest.approx(1 - (1 - fo) / (1 - fi), abs=1e-4)
        assert seg.extra["bertscore_output"] == pytest.approx(fo, abs=1e-4)
    assert segments[0].score == pytest.approx(1.0, abs=1e-5)  # output equals the reference
    assert segments[1].score == pytest.approx(0.0, abs=1e-5)  # output equals the input


def test_relbertscore_degenerate_and_simplicity_variant():
    metric = get_metric("relbertscore", device="cpu")
    segs = metric.score(["the cat", "a dog"], [["the cat"], ["the cat"]], ["the cat", "the cat"])
    assert segs[0].score == 1.0 and segs[0].extra["degenerate"] is True
    assert segs[1].score == 0.0 and segs[1].extra["degenerate"] is True
    simple = get_metric("relbertscore", simplicity="true", device="cpu")
    s = simple.score(["the cat sat"], [["a cat sat down"]], ["the feline was seated"])[0]
    bs = get_metric("simplicity-bertscore", device="cpu")
    f_out = bs.score(["the cat sat"], [["a cat sat down"]])[0].score
    f_in = bs.score(["the feline was seated"], [["a cat sat down"]])[0].score
    assert s.score == pytest.approx(1 - (1 - f_out) / (1 - f_in), abs=1e-6)
    assert simple.signature().startswith("relbertscore|v:1|bs:simplicity-bertscore|")


def test_errors(tmp_path):
    with pytest.raises(InputError, match="needs source"):
        get_metric("relbertscore", device="cpu").score(["a"], [["b"]])
    with pytest.raises(OptionError, match="exclude each other"):
        get_metric("relbertscore", simplicity="true", idf="true")
    # Only a string until the worker scores (metrics.scorers.files); then one refusal for any cause.
    missing = get_metric("simplicity-bertscore", frequency_file=str(tmp_path / "missing.txt"), device="cpu")
    with pytest.raises(OptionError, match="frequency_file: not allowed or not found"):
        missing.score(["a"], [["b"]])
    with pytest.raises(OptionError, match="unknown option"):
        get_metric("simplicity-bertscore", idf="true")
