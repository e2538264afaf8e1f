"""SemDist = 1 - cosine of sentence-transformers embeddings (packaged MiniLM)."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest

from metrics.scorers import get_metric, metric_class
from metrics.scorers.errors import InputError, ModelNotAvailable
from metrics.scorers.loading import resolve_model_path
from tests.lazy_modules import lazy

# Imported by the first test that uses it, not at collection (tests/lazy_modules.py).
sentence_transformers = lazy("sentence_transformers", skip_if_absent=True)


@pytest.fixture(scope="session")
def st_model():
    return sentence_transformers.SentenceTransformer(str(resolve_model_path(None)), device="cpu")


def st_distance(model, a, b):
    va, vb = model.encode([a, b], normalize_embeddings=True)
    return 1.0 - float(va @ vb)


def test_equals_one_minus_cosine_of_sentence_transformers(st_model):
    hyps = ["The cat sat on the mat.", "Ünïcode café in 東京", "", "I like green apples"]
    refs = [
        ["A cat was on the mat.", "Dogs bark loudly."],
        ["Unicode coffee shop in Tokyo"],
        ["Nothing"],
        ["I like green apples"],
    ]
    metric = get_metric("semdist", device="cpu", batch_size="2")
    segments = metric.score(hyps, refs)
    for seg, hyp, group in zip(segments, hyps, refs):
        expected = min(st_distance(st_model, hyp, ref) for ref in group)  # several refs: the closest
        assert seg.score == pytest.approx(expected, abs=1e-5)
    assert segments[3].score == pytest.approx(0.0, abs=1e-6)
    assert segments[0].score < st_distance(st_model, hyps[0], refs[0][1])
    assert metric.corpus_score(segments).score == pytest.approx(sum(s.score for s in segments) / 4)


def test_lower_is_better_and_signature():
    assert metric_class("semdist").higher_is_better is False
    sig = get_metric("semdist", device="cpu").signature()
    assert sig.startswith("semdist|v:1|model:all-MiniLM-L6-v2|") and "transformers:" in sig


def test_errors():
    with pytest.raises(InputError, match="needs references"):
        get_metric("semdist", device="cpu").score(["a"])
    with pytest.raises(InputError, match="non-empty list of references"):
        get_metric("semdist", device="cpu").score(["a"], [[]])
    with pytest.raises(ModelNotAvailable, match="acme/nowhere-mpnet"):
        get_metric("semdist", model="acme/nowhere-mpnet", device="cpu").score(["a"], [["b"]])
