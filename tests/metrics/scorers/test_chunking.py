"""The chunked-scoring contract every registered metric keeps (what metric runs on
several workers rely on): with the corpus state computed once over the whole
corpus and loaded into fresh instances, any split into chunks gives the segment
scores, corpus score and signature of one call over the whole corpus.

Exactly, for every metric without a model. For model metrics, a text's vectors
depend on the batch it shares with other texts (matrix kernels round
differently for different shapes, as in bert-score with another batch_size),
so a chunk scored by a worker that never saw the rest of the corpus agrees to
float32 rounding of the forward pass (1e-5 here); with the same vectors (one
process, embedding cache) the matching itself is chunk-independent, exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metrics.scorers import available, get_metric, metric_class
from metrics.scorers.files import trusted_paths

HYPS = [
    "The cat sat on the mat .",
    "A quick brown fox jumps over the Lazy dog .",
    "Blue Spice is a pub in the riverside area .",
    "",
    "He went HOME yesterday .",
    "Obama won the election .",
]
REFS = [
    ["A cat was sitting on the mat .", "The cat is on a mat ."],
    ["The fast brown fox leaped over the lazy dog ."],
    ["Blue Spice is a riverside pub .", "There is a pub called Blue Spice .", "Blue Spice , riverside ."],
    ["Something to say ."],
    ["He returned home yesterday ."],
    ["The election was won by Obama .", "Obama was elected ."],
]
SRCS = [
    "The cat was sitting on the mat today .",
    "A quick brown fox jumped over the lazy dog in the yard .",
    "Blue Spice is a pub that is located in the riverside area .",
    "Nothing .",
    "Yesterday he went back to his home .",
    "Obama won the presidential election in 2012 .",
]
DATA = [
    [("The cat", "location", "mat")],
    [("fox", "jumpsOver", "dog"), ("fox", "colour", "brown")],
    [("Blue Spice", "eatType", "pub"), ("Blue Spice", "area", "riverside")],
    [],
    [("He", "went", "home")],
    [("Obama", "won", "election")],
]
SPLITS = [[1, 5], [2, 1, 3], [1] * 6]

# (metric, options): every registered metric at least once, plus the options that
# need corpus state (idf) or change the signature's sources.
CASES = [
    ("bleu", {}),
    ("chrf", {"word_order": 2}),
    ("ter", {}),
    ("rouge", {}),
    ("wer", {}),
    ("cer", {}),
    ("sari", {}),
    ("sari", {"variant": "t2t"}),
    ("sari", {"variant": "easse-corpus"}),
    ("bertscore", {"device": "cpu"}),
    ("bertscore", {"device": "cpu", "idf": True}),
    ("semdist", {"device": "cpu"}),
    ("simplicity-bertscore", {"device": "cpu"}),
    ("relbertscore", {"device": "cpu", "idf": True}),
    ("yisi0", {}),
    ("yisi1", {"device": "cpu"}),
    ("yisi2", {"device": "cpu"}),
    ("nli", {"device": "cpu", "model": "TINY_NLI"}),
    ("nli", {"device": "cpu", "model": "TINY_NLI", "compat": "nlgi_eval"}),
    ("minwed", {"metric": "wer", "threshold": 0.2}),
    ("mincer", {"metric": "cer", "threshold": 0.05}),
    ("minwed", {"threshold": 0.05, "metric_options": {"device": "cpu"}}),
    # One prompt per forward pass: the same numbers whatever the chunk (padding would change the last bits).
    ("llm-judge", {"device": "cpu", "model": "TINY_JUDGE", "batch_size": 1}),
    ("llm-judge", {"device": "cpu", "model": "TINY_JUDGE", "batch_size": 1, "mode": "spans", "max_new_tokens": 24}),
    # The learned MT metrics on their tiny reference-checked checkpoints; one text per forward pass,
    # as for the judge (padding changes the last bits).
    ("comet", {"device": "cpu", "model": "COMET_TINY", "encoder": "TINY_XLMR", "batch_size": 1}),
    ("cometkiwi", {"device": "cpu", "model": "KIWI_TINY", "encoder": "TINY_XLMR", "batch_size": 1}),
    ("xcomet", {"device": "cpu", "model": "XCOMET_TINY", "encoder": "TINY_XLMR", "batch_size": 1}),
    ("metricx", {"device": "cpu", "model": "METRICX_TINY", "tokenizer": "METRICX_TINY", "batch_size": 1}),
]
# comet's estimator reads all of a call's rows in one matrix product, whose rounding depends on
# the number of rows: chunks agree to float32 rounding, not bit for bit.
ROUNDED_BY_CALL = {"comet"}
FIXTURES = Path(__file__).parent
CHECKPOINTS = {
    "COMET_TINY": str(FIXTURES / "comet_fixtures" / "comet-tiny"),
    "KIWI_TINY": str(FIXTURES / "comet_fixtures" / "kiwi-tiny"),
    "XCOMET_TINY": str(FIXTURES / "comet_fixtures" / "xcomet-tiny"),
    "TINY_XLMR": str(FIXTURES / "comet_fixtures" / "tiny-xlmr"),
    "METRICX_TINY": str(FIXTURES / "metricx_fixtures" / "mt5-tiny"),
}
SYSTEM_LEVEL = ["distinct-n", "ttr", "self-bleu"]


def test_every_registered_metric_is_covered():
    assert {name for name, _ in CASES} | set(SYSTEM_LEVEL) == set(available())
    assert all(metric_class(name).level == "system" for name in SYSTEM_LEVEL)


def _forget_embeddings():
    from metrics.scorers import encoder

    for cached in encoder._ENCODERS.values():
        cached.clear_cache()


def _inputs(metric, rows):
    return (
        [HYPS[i] for i in rows],
        [REFS[i] for i in rows] if metric.needs_refs else None,
        [SRCS[i] for i in rows] if metric.needs_source else None,
        [DATA[i] for i in rows] if metric.needs_data else None,
    )


@pytest.mark.parametrize(("name", "options"), CASES, ids=[f"{n}-{'-'.join(map(str, o.values()))}" for n, o in CASES])
def test_chunks_with_the_corpus_state_give_the_whole_corpus_result(name, options, tiny_models, judge_models):
    stand_ins = {"TINY_NLI": str(tiny_models[0]), "TINY_JUDGE": judge_models["llama"], **CHECKPOINTS}
    options = {k: (stand_ins.get(v, v) if isinstance(v, str) else v) for k, v in options.items()}
    if any(v in CHECKPOINTS.values() for v in options.values()):
        # The fixtures lie outside WORKBENCH_MODEL_DIRS: score as the operator's command line does.
        with trusted_paths():
            _check_chunks(name, options)
    else:
        _check_chunks(name, options)


def _check_chunks(name, options):
    everything = list(range(len(HYPS)))
    whole_metric = get_metric(name, **options)
    whole = whole_metric.score(*_inputs(whole_metric, everything))
    whole_corpus = whole_metric.corpus_score(whole)
    # The state crosses machines as JSON.
    state = json.loads(json.dumps(whole_metric.corpus_state(*_inputs(whole_metric, everything))))
    whole_metric.load_corpus_state(state)
    signature = whole_metric.signature()
    for split, forget in [(s, False) for s in SPLITS] + [(SPLITS[1], True)]:
        if forget and not whole_metric.uses_model:
            continue
        segments, start = [], 0
        for size in split:
            worker = get_metric(name, **options)  # a fresh instance per chunk, as on another worker
            worker.load_corpus_state(state)
            if forget:
                _forget_embeddings()  # a worker that has not embedded these texts before
            segments += worker.score(*_inputs(worker, range(start, start + size)))
            start += size
            assert worker.signature() == signature
        corpus = worker.corpus_score(segments)
        if forget or name in ROUNDED_BY_CALL:
            assert [s.score for s in segments] == pytest.approx([s.score for s in whole], abs=1e-5)
            assert corpus.score == pytest.approx(whole_corpus.score, abs=1e-5)
            if not forget:  # the truncation flags, exactly
                assert [s.extra for s in segments] == [s.extra for s in whole], split
            continue
        assert [s.score for s in segments] == [s.score for s in whole], split
        assert [s.stats for s in segments] == [s.stats for s in whole], split
        assert [s.extra for s in segments] == [s.extra for s in whole], split
        assert corpus.score == whole_corpus.score or (
            corpus.score != corpus.score and whole_corpus.score != whole_corpus.score
        )
        assert corpus.extra == whole_corpus.extra


def test_signature_never_depends_on_earlier_calls():
    fresh = get_metric("bleu")
    used = get_metric("bleu")
    used.score(["a b"], [["a b", "c d"]])  # two references: sacrebleu objects would remember nrefs:2
    assert used.signature() == fresh.signature()
    assert "nrefs" not in fresh.signature()
    fresh.load_corpus_state(fresh.corpus_state(["a", "b"], [["a"], ["b", "c"]]))
    assert "|nrefs:var|" in fresh.signature()


@pytest.mark.parametrize("name", SYSTEM_LEVEL)
def test_system_level_metrics_need_no_state(name):
    metric = get_metric(name)
    assert metric.corpus_state(HYPS) is None
    metric.load_corpus_state(None)
    assert metric.signature() == get_metric(name).signature()


def test_uses_model_routes_model_metrics():
    with_model = {n for n in available() if metric_class(n).uses_model}
    assert with_model == {
        "bertscore",
        "semdist",
        "simplicity-bertscore",
        "relbertscore",
        "yisi1",
        "yisi2",
        "nli",
        "minwed",
        "mincer",
        "llm-judge",
        "comet",
        "cometkiwi",
        "xcomet",
        "metricx",
    }
    # minED runs a model only when its embedded metric does.
    assert get_metric("minwed", metric="wer").uses_model is False
    assert get_metric("mincer").uses_model is True


@pytest.mark.parametrize("name", ["bertscore", "semdist", "yisi1", "simplicity-bertscore", "relbertscore", "nli"])
def test_model_signatures_name_the_compute_dtype(name, monkeypatch):
    """CUDA runs bf16 by default (bert-score runs fp32): the dtype is part of the signature."""
    monkeypatch.delenv("WORKBENCH_DTYPE", raising=False)
    fp32 = get_metric(name, device="cpu").signature()
    assert "|dtype:fp32|" in fp32
    monkeypatch.setenv("WORKBENCH_DTYPE", "bfloat16")
    bf16 = get_metric(name, device="cpu").signature()
    assert "|dtype:bf16|" in bf16 and bf16 != fp32
    assert "batch_size" not in fp32 and "device" not in fp32  # speed only, never in the signature
