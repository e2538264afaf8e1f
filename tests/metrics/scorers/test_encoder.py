"""The shared encoder: layers, batching, caching, pooling, errors (packaged MiniLM, CPU)."""

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest

from metrics.scorers.encoder import TokenEmbedding, get_encoder
from metrics.scorers.errors import ModelNotAvailable, OptionError
from metrics.scorers.loading import resolve_model_path
from tests.lazy_modules import lazy

# Imported by the first test that uses it, not at collection (tests/lazy_modules.py).
torch = lazy("torch")

TEXTS = ["The cat sat on the mat.", "Ünïcode café, naïve 東京!", "", "The cat sat on the mat."]


@pytest.fixture(scope="session")
def hf_hidden_states(encoder):
    """Hidden states straight from transformers, one text at a time (no padding)."""

    def run(text):
        batch = encoder.tokenizer(text, return_tensors="pt")
        with torch.inference_mode():
            out = encoder.model(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True
            )
        return [h[0] for h in out.hidden_states]

    return run


def test_get_encoder_is_cached_per_model_and_device(encoder):
    assert get_encoder(device="cpu") is encoder
    assert get_encoder(str(resolve_model_path(None)), "cpu") is encoder
    assert encoder.name == str(resolve_model_path(None))
    assert encoder.device == "cpu"
    assert encoder.num_layers == 6
    assert next(encoder.model.parameters()).dtype == torch.float32
    assert not encoder.model.training


@pytest.mark.parametrize("layer", [0, 3, 6, None])
def test_token_embeddings_are_the_requested_hidden_state(encoder, hf_hidden_states, layer):
    # Batched with padding (mixed lengths) and stopped early below the top layer,
    # the vectors still equal transformers' hidden_states[layer] of the lone text.
    embs = encoder.token_embeddings(TEXTS, layer=layer, batch_size=3)
    for text, emb in zip(TEXTS, embs):
        expected = hf_hidden_states(text)[6 if layer is None else layer]
        assert emb.vectors.dtype == torch.float32
        assert emb.vectors.shape == expected.shape
        assert torch.allclose(emb.vectors, expected, atol=1e-5)


def test_token_embedding_fields_and_offsets(encoder):
    emb = encoder.token_embeddings(["Ünïcode café, naïve 東京!"], layer=2)[0]
    assert isinstance(emb, TokenEmbedding)
    assert emb.tokens[0] == "[CLS]" and emb.tokens[-1] == "[SEP]"
    assert emb.special_mask == [True] + [False] * (len(emb.tokens) - 2) + [True]
    assert emb.input_ids == encoder.tokenizer("Ünïcode café, naïve 東京!")["input_ids"]
    text = "Ünïcode café, naïve 東京!"
    words = [text[a:b] for (a, b), special in zip(emb.offsets, emb.special_mask) if not special]
    assert words == ["Ünïcode", "café", ",", "naïve", "東", "京", "!"]
    assert len(emb.offsets) == len(emb.tokens) == emb.vectors.shape[0]


def test_duplicates_and_repeated_calls_reuse_embeddings(encoder):
    encoder.clear_cache()
    first = encoder.token_embeddings(TEXTS, layer=4)
    assert first[0] is first[3]  # identical texts embedded once
    again = encoder.token_embeddings(list(reversed(TEXTS)), layer=4)
    assert again[-1] is first[0]  # served from the cache, order kept
    other_layer = encoder.token_embeddings(TEXTS[:1], layer=5)[0]
    assert not torch.equal(other_layer.vectors, first[0].vectors)


def test_batch_size_does_not_change_results(encoder):
    texts = ["a b c d e f g h i j k l", "short", "a medium sized sentence here", "x y"]
    encoder.clear_cache()
    one = [e.vectors for e in encoder.token_embeddings(texts, layer=6, batch_size=1)]
    encoder.clear_cache()
    many = [e.vectors for e in encoder.token_embeddings(texts, layer=6, batch_size=64)]
    for a, b in zip(one, many):
        assert torch.allclose(a, b, atol=1e-5)


def test_cache_is_bounded(encoder, monkeypatch):
    from metrics.scorers.encoder import _ByteLRU

    cache = _ByteLRU(max_bytes=100)
    for i in range(10):
        cache.put(i, object(), 30)
    assert cache.bytes <= 100 and len(cache) == 3
    assert cache.get(9) is not None and cache.get(0) is None


def test_sentence_embeddings_equal_sentence_transformers(encoder):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    texts = ["The cat sat on the mat.", "Ünïcode café, naïve 東京!", "", "word " * 300]
    st = sentence_transformers.SentenceTransformer(encoder.name, device="cpu")
    expected = torch.as_tensor(st.encode(texts, normalize_embeddings=True))
    ours = encoder.sentence_embeddings(texts, batch_size=2)
    assert ours.shape == (4, 384)
    assert torch.allclose(ours, expected, atol=1e-5)
    raw = encoder.sentence_embeddings(texts[:1], normalize=False)
    assert not torch.allclose(raw.norm(dim=1), torch.ones(1))


def test_invalid_layer_is_an_option_error(encoder):
    with pytest.raises(OptionError, match="hidden states 0 .* to 6"):
        encoder.token_embeddings(["x"], layer=7)


def test_unknown_model_names_the_model_and_downloads_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(ModelNotAvailable, match="acme/bert-nowhere") as info:
        get_encoder("acme/bert-nowhere", "cpu")
    assert "never downloaded" in str(info.value) and "WORKBENCH_MODELS" in str(info.value)
    assert not (tmp_path / "hf").exists()


def test_directory_without_weights_is_model_not_available(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ModelNotAvailable, match=str(tmp_path)):
        get_encoder(str(tmp_path), "cpu")


def test_device_selection_errors(monkeypatch):
    with pytest.raises(OptionError, match="unknown device 'tpu'"):
        get_encoder(device="tpu")
    monkeypatch.setenv("WORKBENCH_DEVICE", "quantum")
    with pytest.raises(OptionError, match="unknown device 'quantum'"):
        get_encoder()
    monkeypatch.setenv("WORKBENCH_DEVICE", "cpu")
    assert get_encoder().device == "cpu"
    if torch.cuda.is_available():
        with pytest.raises(OptionError, match="CUDA device"):
            get_encoder(device=f"cuda:{torch.cuda.device_count()}")
    else:
        with pytest.raises(OptionError, match="CUDA is not available"):
            get_encoder(device="cuda")
        with pytest.raises(OptionError, match="CUDA is not available"):
            get_encoder(device="cuda:0")
