"""llm-judge with tiny causal LMs built locally (random weights, tokenizer trained
on the fly): G-Eval scores recomputed by hand from the model's logits, pairwise
preferences in both orders, constrained spans that always parse, signatures,
truncation, and clear errors for bad options."""

from __future__ import annotations

import functools
import json
import logging
import math
import random

import pytest

from metrics.scorers import ModelNotAvailable, OptionError, get_metric
from metrics.scorers.span_grammar import SpanAutomaton, occurrences, resolve_spans

HYPS = ["the cat sat on a mat", "old men told stories of distant seas", "dogs ran across green fields", "the cat sat"]
SRCS = ["le chat", "vieux hommes", "les chiens", "le chat"]


@pytest.fixture(scope="module")
def hf(judge_models):
    """The llama judge as transformers loads it, for computing expected values by hand."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = judge_models["llama"]
    return AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path).eval()


def next_token_probs(model, ids):
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].double()
    return torch.softmax(logits, dim=-1)


def tokens_spelling(tokenizer, word):
    """Every token whose decoded text, stripped, is `word`, found by scanning the vocabulary."""
    return [
        i
        for i in range(len(tokenizer))
        if i not in tokenizer.all_special_ids
        and tokenizer.decode([i]).strip() == word
        and not tokenizer.decode([i]).endswith(" ")
    ]


# ---- score mode ----------------------------------------------------------------------
@pytest.mark.parametrize("scale", ["1-5", "0-9"])
def test_score_is_the_probability_weighted_mean_of_the_scale_tokens(judge_models, hf, scale):
    tokenizer, model = hf
    metric = get_metric("llm-judge", model=judge_models["llama"], scale=scale, batch_size=1, device="cpu")
    results = metric.score(HYPS, srcs=SRCS)
    low, high = (int(x) for x in scale.split("-"))
    for k, (ids, result) in enumerate(zip(metric.prompt_ids(HYPS, srcs=SRCS), results)):
        probs = next_token_probs(model, ids)
        weights = {v: sum(float(probs[t]) for t in tokens_spelling(tokenizer, str(v))) for v in range(low, high + 1)}
        total = sum(weights.values())
        expected = sum(v * w for v, w in weights.items()) / total
        assert result.score == pytest.approx(expected, abs=1e-6)
        assert result.extra["mass"] == pytest.approx(total, rel=1e-5)
        assert sum(result.extra["probabilities"].values()) == pytest.approx(1.0)
        assert result.extra["probabilities"][str(low)] == pytest.approx(weights[low] / total, abs=1e-6)
        assert low <= result.score <= high
    # The prompt is the template in the chat template, ending with the answer prefix.
    text = tokenizer.decode(metric.prompt_ids(HYPS[:1], srcs=SRCS[:1])[0])
    assert text.startswith("<|user|>") and "<|assistant|>\nScore:" in text and HYPS[0] in text
    assert "Source: le chat" in text and "Reference:" not in text  # no reference: its line is left out
    assert len({round(r.score, 9) for r in results}) > 1  # the judge reads the output


def test_score_batches_and_models_without_chat_template(judge_models):
    one = get_metric("llm-judge", model=judge_models["llama"], batch_size=1, device="cpu").score(HYPS, srcs=SRCS)
    padded = get_metric("llm-judge", model=judge_models["llama"], batch_size=3, device="cpu").score(HYPS, srcs=SRCS)
    # Left padding with real-token positions: a padded batch reads what one prompt alone reads.
    assert [r.score for r in padded] == pytest.approx([r.score for r in one], abs=1e-5)
    gpt2 = get_metric("llm-judge", model=judge_models["gpt2"], device="cpu")
    text = gpt2.judge().tokenizer.decode(gpt2.prompt_ids(HYPS[:1])[0])
    assert "<|user|>" not in text and text.endswith("Output: the cat sat on a mat\nAnswer with the score only.\nScore:")
    assert all(1 <= r.score <= 5 for r in gpt2.score(HYPS))


def test_multi_token_scale_values_by_teacher_forcing(judge_models, hf):
    """0-100 with a tokenizer that splits numbers into digits: P(v) = product of the
    probabilities of v's digit tokens, times the probability that the next token does
    not continue the number; renormalised over 0..100; score = sum v * p(v)."""
    tokenizer, model = hf
    metric = get_metric("llm-judge", model=judge_models["llama"], scale="0-100", batch_size=7, device="cpu")
    result = metric.score(HYPS[:1], srcs=SRCS[:1])[0]
    prompt = metric.prompt_ids(HYPS[:1], srcs=SRCS[:1])[0]
    continuing = [
        i for i in range(len(tokenizer)) if i not in tokenizer.all_special_ids and tokenizer.decode([i])[:1].isdigit()
    ]
    # One forward pass per distinct prefix (prompt, prompt+"5", prompt+"5"+"7" ...): 102 instead of
    # the 294 that recomputing each value's prefixes took; the same deterministic pass gives the same
    # probabilities, so every expected value is what it was.
    probs_after = functools.cache(lambda seen: next_token_probs(model, list(seen)))
    weights = {}
    for v in range(101):
        digits = [tokenizer.convert_tokens_to_ids(d) for d in str(v)]  # one token per digit
        p, seen = 1.0, tuple(prompt)
        for d in digits:
            p *= float(probs_after(seen)[d])
            seen += (d,)
        after = probs_after(seen)
        weights[v] = p * (1 - sum(float(after[t]) for t in continuing))
    total = sum(weights.values())
    expected = sum(v * w for v, w in weights.items()) / total
    assert result.score == pytest.approx(expected, abs=1e-6)
    assert result.extra["mass"] == pytest.approx(total, rel=1e-5)
    assert result.extra["probabilities"]["57"] == pytest.approx(weights[57] / total, rel=1e-5)


# ---- pairwise mode -------------------------------------------------------------------
def test_pairwise_preferences_both_orders_from_the_answer_tokens(judge_models, hf):
    tokenizer, model = hf
    metric = get_metric("llm-judge", model=judge_models["llama"], mode="pairwise", batch_size=4, device="cpu")
    items = [1, 1, 1, 2]
    srcs = ["le chat"] * 3 + ["autre"]  # the outputs of one item share its source
    results = metric.score(HYPS, srcs=srcs, items=items)
    a_ids, b_ids = tokens_spelling(tokenizer, "A"), tokens_spelling(tokenizer, "B")

    def prefer_first(i, j):
        probs = next_token_probs(model, metric.prompt_ids(HYPS, srcs=srcs, pair=(i, j))[0])
        pa, pb = sum(float(probs[t]) for t in a_ids), sum(float(probs[t]) for t in b_ids)
        return pa / (pa + pb)

    for i in range(3):
        pairs = {e["opponent"]: e for e in results[i].extra["pairs"]}
        assert sorted(pairs) == [j for j in range(3) if j != i]
        for j, entry in pairs.items():
            assert entry["preference"] == pytest.approx(prefer_first(i, j), abs=1e-5)
            assert entry["swapped"] == pytest.approx(1 - prefer_first(j, i), abs=1e-5)
        wins = [(e["preference"] + e["swapped"]) / 2 for e in pairs.values()]
        assert results[i].score == pytest.approx(sum(wins) / len(wins))
        assert results[i].extra["preference"] == pytest.approx(sum(e["preference"] for e in pairs.values()) / 2)
    # Each pair's two win probabilities add up to 1, so an item's mean score is 0.5.
    assert sum(r.score for r in results[:3]) / 3 == pytest.approx(0.5)
    # An item with one output has no pair: no score, left out of the corpus mean.
    assert math.isnan(results[3].score) and results[3].extra["pairs"] == []
    corpus = metric.corpus_score(results)
    assert corpus.score == pytest.approx(0.5) and corpus.extra["n"] == 3


def test_pairwise_needs_two_outputs_of_an_item(judge_models):
    metric = get_metric("llm-judge", model=judge_models["llama"], mode="pairwise", device="cpu")
    with pytest.raises(Exception, match="at least two outputs of the same item"):
        metric.score(HYPS[:2], items=[1, 2])
    with pytest.raises(Exception, match="needs items="):
        metric.score(HYPS[:2])


# ---- spans mode ----------------------------------------------------------------------
def _random_output(rng: random.Random) -> str:
    alphabet = list("the cat sat on a mat while dogs ran") + ['"', "\\", "\n", "\t", "é", "ü", "→", "🙂", "{", "}"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))


@pytest.fixture
def short_prompt(tmp_path):
    """A short spans prompt: the tiny models read it as well as the long one, in less time."""
    path = tmp_path / "short.txt"
    path.write_text("Mark the errors of: {output}\n[answer]\n", encoding="utf-8")
    return str(path)


def test_constrained_spans_always_parse_and_quote_the_output(judge_models, short_prompt):
    rng = random.Random(23)
    hyps = [_random_output(rng) for _ in range(200)]
    metric = get_metric(
        "llm-judge",
        model=judge_models["gpt2"],
        mode="spans",
        max_new_tokens=48,
        prompt=short_prompt,
        batch_size=200,
        device="cpu",
    )
    results = metric.score(hyps)
    assert len(results) == 200
    with_spans = 0
    for hyp, result in zip(hyps, results):
        answer = json.loads(result.extra["raw"])  # 100 %: every answer parses
        assert set(answer) == {"errors"}
        assert len(answer["errors"]) == len(result.extra["spans"])  # every quote was found in the output
        for span in result.extra["spans"]:
            assert 0 <= span["start"] < span["end"] <= len(hyp)
            assert hyp[span["start"] : span["end"]] == span["text"]
            assert span["severity"] in ("minor", "major")
        weights = {"minor": 1, "major": 5}
        assert result.score == -sum(weights[s["severity"]] for s in result.extra["spans"])
        with_spans += bool(result.extra["spans"])
    assert with_spans > 20  # the judge does mark spans, not only {"errors":[]}


def test_mqm_spans_carry_a_category(judge_models):
    metric = get_metric(
        "llm-judge", model=judge_models["llama"], mode="spans", protocol="mqm", max_new_tokens=80, device="cpu"
    )
    results = metric.score(HYPS)
    spans = [s for r in results for s in r.extra["spans"]]
    assert spans and all(
        s["category"] in ("accuracy", "fluency", "terminology", "style", "locale", "other") for s in spans
    )


def test_automaton_closes_within_the_budget_from_any_state():
    automaton = SpanAutomaton("the cat", severities=("minor", "major"), max_errors=2)
    state = automaton.feed(automaton.start(), '{"errors":[{"text":"the c')
    assert state[0] == "Q" and automaton.closing_length(state) == len('","occurrence":0,"severity":"minor"}]}')
    assert automaton.feed(state, "x") is None and automaton.feed(state, "\\") is None
    done = automaton.feed(state, '","occurrence":0,"severity":"minor"}]}')
    assert done == ("E",)
    # After max_errors errors only the end of the list is allowed.
    two = automaton.feed(
        automaton.start(), '{"errors":[' + ",".join(['{"text":"a","occurrence":0,"severity":"major"}'] * 2)
    )
    assert automaton.feed(two, ",") is None and automaton.feed(two, "]}") == ("E",)
    # A text with nothing quotable offers no error at all.
    empty = SpanAutomaton('"\\', severities=("minor",))
    assert empty.feed(empty.start(), '{"errors":[{') is None


def test_ambiguous_quotes_resolve_by_occurrence_index_as_factgenie():
    # factgenie (prompting/transforms.py, character level): the n-th of all overlapping
    # occurrences; an index out of range falls back to the first occurrence.
    text = "the cat and the cat; aaa"
    assert occurrences(text, "aa") == [21, 22]
    spans = resolve_spans(
        text,
        [
            {"text": "the cat", "occurrence": 1, "severity": "major"},
            {"text": "the cat", "occurrence": 7, "severity": "minor"},
            {"text": "aa", "occurrence": 1, "severity": "minor", "category": "style"},
            {"text": "dog", "occurrence": 0, "severity": "minor"},
        ],
    )
    assert [(s["start"], s["end"]) for s in spans] == [(12, 19), (0, 7), (22, 24)]
    assert spans[2]["category"] == "style" and "category" not in spans[0]


def test_sampling_is_seeded(judge_models, short_prompt):
    def run(seed):
        metric = get_metric(
            "llm-judge",
            model=judge_models["llama"],
            mode="spans",
            temperature=1.0,
            seed=seed,
            max_new_tokens=40,
            prompt=short_prompt,
            device="cpu",
        )
        return [r.extra["raw"] for r in metric.score(HYPS)], metric.signature()

    first, sig = run(1)
    again, sig_again = run(1)
    other, sig_other = run(2)
    assert first == again and sig == sig_again
    assert sig != sig_other and "decoding:sample(t=1,seed=1" in sig
    assert all(json.loads(raw) for raw in first + other)


# ---- truncation, signature, options ------------------------------------------------------
def test_long_outputs_are_truncated_with_a_warning(judge_models, caplog):
    metric = get_metric("llm-judge", model=judge_models["llama"], max_input_tokens=200, device="cpu")
    long = " ".join(["the cat sat on a mat"] * 40)
    with caplog.at_level(logging.WARNING, logger="metrics.scorers.llm_judge"):
        results = metric.score([long, "the cat"])
    assert results[0].extra["truncated"] is True and "truncated" not in results[1].extra
    assert len(metric.prompt_ids([long])[0]) <= 200
    assert "1 of 2 output(s) truncated" in caplog.text
    corpus = metric.corpus_score(results).as_dict()
    assert corpus["truncated"] == 1 and "truncated" in corpus["warnings"][0]
    spans = get_metric(
        "llm-judge", model=judge_models["llama"], mode="spans", max_input_tokens=450, max_new_tokens=40, device="cpu"
    ).score([long])[0]
    assert spans.extra["truncated"] and spans.extra["judged_chars"] < len(long)
    assert all(s["end"] <= spans.extra["judged_chars"] for s in spans.extra["spans"])


def test_signature_follows_prompt_weights_and_decoding(judge_models, tmp_path):
    def sig(**options):
        return get_metric("llm-judge", **{"model": judge_models["llama"], "device": "cpu", **options}).signature()

    base = sig()
    fields = dict(part.split(":", 1) for part in base.split("|")[1:])
    assert base.startswith("llm-judge|v:1|model:llama|mode:score|protocol:da|prompt:score-da.v1@")
    assert fields["decoding"] == "next-token-probabilities" and fields["dtype"] == "fp32"
    assert sig(batch_size=2) == base  # speed options change nothing
    # Weights: same config, other random weights.
    other = get_metric("llm-judge", model=judge_models["llama_seed1"], device="cpu").signature()
    other_fields = dict(part.split(":", 1) for part in other.split("|")[1:])
    assert other_fields["config"] == fields["config"] and other_fields["weights"] != fields["weights"]
    # Prompt: a file with the built-in text, then one word changed.
    from metrics.scorers.llm_judge_prompts import BUILTIN

    same = tmp_path / "da.txt"
    same.write_text(BUILTIN["score-da.v1"], encoding="utf-8")
    changed = tmp_path / "da2.txt"
    changed.write_text(BUILTIN["score-da.v1"].replace("expert", "strict"), encoding="utf-8")
    digest = fields["prompt"].split("@")[1]
    assert sig(prompt=str(same)).split("|prompt:")[1].startswith(f"da.txt@{digest}")
    assert digest not in sig(prompt=str(changed))
    assert sig(scale="0-9") != base
    # Decoding settings of spans mode.
    spans = sig(mode="spans")
    assert "decoding:greedy" in spans and "max_new_tokens:256" in spans
    assert sig(mode="spans", max_new_tokens=64) != spans
    assert sig(mode="spans", temperature=0.7, seed=3) != spans


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "needs model="),
        # Path options: the one answer every refusal gets (metrics.scorers.files), telling nothing of the disk.
        ({"model": "/nonexistent/judge"}, "model '/nonexistent/judge': not allowed or not found"),
        ({"mode": "rank"}, "mode='rank'; use one of score, pairwise, spans"),
        ({"mode": "spans", "protocol": "da"}, "protocol='da' in mode spans; use one of esa, mqm"),
        ({"scale": "5-1"}, "scale='5-1': expected LOW-HIGH"),
        ({"scale": "ten"}, "scale='ten'"),
        ({"mode": "pairwise", "scale": "1-5"}, "scale applies to mode=score only"),
        ({"temperature": 0.5}, "temperature applies to mode=spans only"),
        ({"mode": "spans", "max_new_tokens": 8}, "at least 16 in spans mode"),
        ({"prompt": "no-such-template.v9"}, "prompt: not allowed or not found"),
        ({"batch_size": 0}, "batch_size=0 is out of range"),
        ({"temperature": "hot"}, "expected float"),
        ({"beam": 4}, "unknown option(s) beam"),
        ({"dtype": "int8"}, "dtype='int8': use auto, float32, bfloat16 or float16"),
    ],
)
def test_bad_options_are_clear_errors(judge_models, options, message):
    if "model" not in options and options:
        options = {"model": judge_models["llama"], **options}
    # Errors about files (model directory, prompt file) come where the metric first reads them.
    with pytest.raises((OptionError, ModelNotAvailable), match=message.replace("(", r"\(").replace(")", r"\)")):
        get_metric("llm-judge", **options).signature()


def test_prompt_file_must_fill_the_mode(judge_models, tmp_path):
    prompt = tmp_path / "p.txt"
    prompt.write_text("Rate {output}.\n[answer]\nScore:", encoding="utf-8")
    with pytest.raises(OptionError, match=r"lacks the placeholder\(s\) \{output_a\}, \{output_b\}"):
        get_metric("llm-judge", model=judge_models["llama"], mode="pairwise", prompt=str(prompt)).signature()
    with pytest.raises(OptionError, match=r"prompt 'pairwise.v1' lacks the placeholder\(s\) \{output\}"):
        get_metric("llm-judge", model=judge_models["llama"], prompt="pairwise.v1")  # built-in: checked at once
    assert get_metric("llm-judge", model=judge_models["llama"], prompt=str(prompt), device="cpu").score(["x"])
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe{output}")
    with pytest.raises(OptionError, match="not UTF-8"):
        get_metric("llm-judge", model=judge_models["llama"], prompt=str(binary)).score(["x"])


def test_a_directory_without_a_causal_lm_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    metric = get_metric("llm-judge", model=str(tmp_path), device="cpu")
    with pytest.raises(ModelNotAvailable, match='no "architectures"'):  # which head it has is unknown
        metric.score(["x"])
    (tmp_path / "config.json").write_text('{"model_type": "llama", "architectures": ["LlamaForCausalLM"]}')
    metric = get_metric("llm-judge", model=str(tmp_path), device="cpu")
    with pytest.raises(ModelNotAvailable, match="cannot load a tokenizer"):
        metric.score(["x"])


def test_weights_digest_is_sha256_of_the_files_and_cached_across_processes(tmp_path, monkeypatch):
    import hashlib
    import os

    from metrics.scorers import llm_judge

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(os.urandom(4096))
    expected = hashlib.sha256(b"model.safetensors\0" + weights.read_bytes()).hexdigest()[:12]
    cache = tmp_path / "digests.json"
    monkeypatch.setenv("WORKBENCH_DIGEST_CACHE", str(cache))
    monkeypatch.setattr(llm_judge, "DIGEST_CACHE_MIN_BYTES", 0)
    monkeypatch.setattr(llm_judge, "_DIGESTS", {})
    assert llm_judge.files_digest([weights]) == expected
    stored = json.loads(cache.read_text())
    assert list(stored.values()) == [expected]
    # Another process (empty in-process cache) takes the stored value without reading the file...
    cache.write_text(json.dumps({key: "feedbeef0000" for key in stored}))
    monkeypatch.setattr(llm_judge, "_DIGESTS", {})
    assert llm_judge.files_digest([weights]) == "feedbeef0000"
    # ...until the file changes (size, mtime or inode).
    weights.write_bytes(os.urandom(4097))
    monkeypatch.setattr(llm_judge, "_DIGESTS", {})
    assert (
        llm_judge.files_digest([weights])
        == hashlib.sha256(b"model.safetensors\0" + weights.read_bytes()).hexdigest()[:12]
    )
