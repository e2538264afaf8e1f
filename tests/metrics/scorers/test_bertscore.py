"""BERTScore equals the bert-score package on the same local model (offline)."""

import os

# bert-score and transformers must find everything on disk; set before they are imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import socket

import pytest

from metrics.scorers import get_metric
from metrics.scorers.bertscore import BERTScoreMetric, greedy_match
from metrics.scorers.errors import InputError, ModelNotAvailable, OptionError
from metrics.scorers.loading import resolve_model_path
from tests.lazy_modules import lazy

# Imported by the first test that uses them, not at collection (tests/lazy_modules.py).
torch = lazy("torch")
bert_score = lazy("bert_score", skip_if_absent=True)

HYPS = [
    "The cat sat on the mat.",
    "A quick brown fox jumps over the dog.",
    "",
    "Ünïcode café, naïve résumé in 東京 — ça va?",
    "   padded with spaces   ",
    "He went home.",
]
REFS = [
    ["A cat was sitting on the mat.", "The cat is on a mat.", "On the mat sat a cat."],
    ["The fast brown fox leaped over the lazy dog."],
    ["Something to say.", "Another thing."],
    ["Unicode cafe, naive resume in Tokyo, all right?", "Ça va bien à 東京."],
    ["padded with spaces", ""],
    ["She stayed at home.", "He returned to his house."],
]


class _NoNetwork:
    """Any socket connection attempt fails the test: everything must load from disk."""

    def __enter__(self):
        self._mp = pytest.MonkeyPatch()

        def refuse(*args, **kwargs):
            raise AssertionError(f"network access attempted: {args}")

        self._mp.setattr(socket.socket, "connect", refuse)
        self._mp.setattr(socket, "create_connection", refuse)
        return self

    def __exit__(self, *exc):
        self._mp.undo()


@pytest.fixture(scope="session")
def minilm_path():
    return str(resolve_model_path(None))


@pytest.fixture(scope="session")
def reference_scorer(minilm_path):
    """bert-score's BERTScorer on the packaged MiniLM, one per (layer, idf), loaded once."""
    cache = {}

    def get(layer, idf, model=None):
        key = (model or minilm_path, layer, idf)
        if key not in cache:
            with _NoNetwork():
                cache[key] = bert_score.BERTScorer(
                    model_type=key[0],
                    num_layers=layer,
                    idf=idf,
                    idf_sents=["x"] if idf else None,
                    nthreads=0,
                    device="cpu",
                )
        return cache[key]

    return get


def reference_prf(scorer, hyps, refs, idf, batch_size=4):
    if idf:
        scorer._idf_dict = None  # compute_idf warns when overwriting; the table is per call
        scorer.compute_idf([r for group in refs for r in group])
    P, R, F = scorer.score(list(hyps), [list(g) for g in refs], batch_size=batch_size)
    return torch.stack([P, R, F], dim=1)


def ours_prf(segments):
    return torch.tensor([[s.extra["precision"], s.extra["recall"], s.extra["f1"]] for s in segments])


@pytest.mark.parametrize("layer,idf", [(6, False), (6, True), (2, False), (2, True), (0, False)])
def test_equals_bert_score_multi_reference(reference_scorer, layer, idf):
    expected = reference_prf(reference_scorer(layer, idf), HYPS, REFS, idf)
    metric = get_metric("bertscore", layer=str(layer), idf=str(idf).lower(), device="cpu", batch_size="3")
    segments = metric.score(HYPS, REFS)
    got = ours_prf(segments)
    assert got.shape == expected.shape
    assert torch.allclose(got, expected, atol=1e-4), (got - expected).abs().max()
    assert [s.score for s in segments] == [s.extra["f1"] for s in segments]


def test_equals_bert_score_single_reference_default_layer(reference_scorer):
    hyps = ["the the the", "Zebras graze.", "Completely unrelated words here"]
    refs = [["the cat"], ["Zebras are grazing in the savanna."], ["Quantum chromodynamics"]]
    # batch_size=1: bert-score pads the pairs of a batch and multiplies the padded
    # similarities by 0, so inside a batch a token whose best cosine is negative
    # gets 0 instead (here "quantum" vs the unrelated candidate). We keep the
    # definition (the best real cosine), which is bert-score's unpadded result.
    expected = reference_prf(reference_scorer(6, False), hyps, refs, False, batch_size=1)
    got = ours_prf(BERTScoreMetric(device="cpu").score(hyps, refs))  # layer unset = top (6)
    assert torch.allclose(got, expected, atol=1e-4)
    padded = reference_prf(reference_scorer(6, False), hyps, refs, False, batch_size=3)
    assert padded[2, 1] > got[2, 1] + 1e-3  # the padding artefact we do not reproduce


def test_empty_candidate_or_reference_scores_zero_like_bert_score(reference_scorer):
    hyps, refs = ["", "Some words.", "   "], [["Some words."], [""], ["x"]]
    expected = reference_prf(reference_scorer(6, False), hyps, refs, False)
    got = ours_prf(BERTScoreMetric(device="cpu").score(hyps, refs))
    assert torch.equal(got, torch.zeros(3, 3))
    assert torch.equal(expected, torch.zeros(3, 3))


def test_baseline_rescaling_equals_bert_score(tmp_path, minilm_path):
    baseline = tmp_path / "minilm.tsv"  # bert-score's files are comma-separated despite the name
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.{k}1,0.{k}2,0.{k}3\n" for k in range(7)))
    with _NoNetwork():
        scorer = bert_score.BERTScorer(
            model_type=minilm_path,
            num_layers=4,
            lang="en",
            device="cpu",
            rescale_with_baseline=True,
            baseline_path=str(baseline),
        )
    expected = torch.stack(scorer.score(HYPS, REFS, batch_size=4), dim=1)
    metric = BERTScoreMetric(layer=4, baseline=str(baseline), device="cpu")
    got = ours_prf(metric.score(HYPS, REFS))
    assert torch.allclose(got, expected, atol=1e-4)
    assert "baseline:minilm.tsv@" in metric.signature()


def test_baseline_file_errors(tmp_path):
    with pytest.raises(OptionError, match="not allowed or not found"):
        BERTScoreMetric(baseline=str(tmp_path / "none.csv"), device="cpu").score(["a"], [["a"]])
    bad = tmp_path / "bad.csv"
    bad.write_text("layer;p;r;f\n")
    with pytest.raises(OptionError, match="header LAYER,P,R,F"):
        BERTScoreMetric(baseline=str(bad), device="cpu").score(["a"], [["a"]])
    short = tmp_path / "short.csv"
    short.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n")
    with pytest.raises(OptionError, match="no row for layer 6"):
        BERTScoreMetric(baseline=str(short), device="cpu").score(["a"], [["a"]])


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory):
    """A random-weight RoBERTa with a small byte-level BPE tokenizer, saved like a checkpoint."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    out = tmp_path_factory.mktemp("tiny-roberta")
    corpus = [h for h in HYPS] + [r for g in REFS for r in g] + ["hello world, the cat and the dog"] * 3
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        corpus, vocab_size=400, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    bpe.save_model(str(out))
    tokenizer = RobertaTokenizerFast(
        vocab_file=str(out / "vocab.json"), merges_file=str(out / "merges.txt"), model_max_length=128
    )
    tokenizer.save_pretrained(out)
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=130,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    RobertaModel(config).save_pretrained(out)
    return str(out)


@pytest.mark.parametrize("layer", [3, 1])
def test_roberta_prefix_space_equals_bert_score(reference_scorer, tiny_roberta, layer):
    hyps, refs = HYPS[:2] + HYPS[3:], REFS[:2] + REFS[3:]
    expected = reference_prf(reference_scorer(layer, False, tiny_roberta), hyps, refs, False)
    metric = BERTScoreMetric(model=tiny_roberta, layer=layer, device="cpu")
    assert torch.allclose(ours_prf(metric.score(hyps, refs)), expected, atol=1e-4)
    emb = metric.encoder().token_embeddings(["hello world"], layer=layer)[0]
    assert emb.tokens[1].startswith("Ġ")  # "hello" encoded as " hello", as bert-score does
    assert emb.input_ids == bert_score.utils.sent_encode(
        reference_scorer(layer, False, tiny_roberta)._tokenizer, "hello world"
    )


def test_matching_does_not_depend_on_chunking():
    torch.manual_seed(1)
    vectors = [torch.nn.functional.normalize(torch.randn(n, 8), dim=-1) for n in (3, 9, 5, 12, 4)]
    weights = [torch.rand(v.shape[0]) for v in vectors]
    pairs = [(a, b) for a in range(5) for b in range(5)]
    whole = greedy_match(pairs, vectors, weights)
    pieces = greedy_match(pairs, vectors, weights, max_elements=1)  # one pair per chunk
    assert torch.allclose(whole, pieces, atol=1e-6)
    # Against the definition, pair by pair.
    for (h, r), (p, rc, f) in zip(pairs, whole.tolist()):
        sim = vectors[h] @ vectors[r].T
        p_ref = (sim.max(1).values * weights[h]).sum() / weights[h].sum()
        r_ref = (sim.max(0).values * weights[r]).sum() / weights[r].sum()
        assert p == pytest.approx(p_ref.item(), abs=1e-6) and rc == pytest.approx(r_ref.item(), abs=1e-6)
        assert f == pytest.approx(2 * p * rc / (p + rc), abs=1e-6)


def test_corpus_score_and_signature():
    metric = BERTScoreMetric(idf=True, device="cpu")
    segments = metric.score(HYPS[:2], REFS[:2])
    corpus = metric.corpus_score(segments)
    assert corpus.score == pytest.approx(sum(s.score for s in segments) / 2)
    assert corpus.extra["precision"] == pytest.approx(sum(s.extra["precision"] for s in segments) / 2)
    sig = metric.signature()
    assert sig.startswith("bertscore|v:1|model:all-MiniLM-L6-v2|layer:6|idf:yes|baseline:none|")
    assert "transformers:" in sig and "torch:" in sig and "batch_size" not in sig


def test_option_and_input_errors():
    with pytest.raises(OptionError, match="layer"):
        BERTScoreMetric(layer="top")
    with pytest.raises(OptionError, match="hidden states 0 .* to 6"):
        BERTScoreMetric(layer=9, device="cpu").score(["a"], [["a"]])
    with pytest.raises(OptionError, match="unknown option"):
        BERTScoreMetric(lang="en")
    with pytest.raises(InputError, match="no reference"):
        BERTScoreMetric(device="cpu").score(["a", "b"], [["a"], []])
    with pytest.raises(InputError, match="needs references"):
        BERTScoreMetric(device="cpu").score(["a"], None)


def test_unknown_model_is_reported_by_name_without_download():
    metric = BERTScoreMetric(model="acme/roberta-huge-nowhere", device="cpu")
    with _NoNetwork(), pytest.raises(ModelNotAvailable, match="acme/roberta-huge-nowhere"):
        metric.score(["a"], [["b"]])


def test_idf_from_fixed_references_makes_chunks_combine(reference_scorer):
    # A run split into chunks must weigh tokens as one call would: fix the idf table.
    all_refs = [r for group in REFS for r in group]
    scorer = reference_scorer(6, True)
    scorer._idf_dict = None
    scorer.compute_idf(all_refs)  # bert-score's idf_sents
    expected = torch.stack(scorer.score(HYPS, REFS, batch_size=4), dim=1)
    metric = BERTScoreMetric(idf=True, device="cpu")
    metric.idf_from(all_refs)
    chunks = metric.score(HYPS[:2], REFS[:2]) + metric.score(HYPS[2:], REFS[2:])
    assert torch.allclose(ours_prf(chunks), expected, atol=1e-4)
    unfixed = BERTScoreMetric(idf=True, device="cpu").score(HYPS[:2], REFS[:2])
    assert not torch.allclose(ours_prf(unfixed), expected[:2], atol=1e-3)
