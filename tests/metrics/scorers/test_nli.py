"""NLI semantic accuracy (seed 000): the decision logic with a deterministic
stand-in NLI backend, and the real loading path with a tiny random RoBERTa
classifier saved to a temporary directory."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from metrics.scorers import ModelNotAvailable, OptionError, get_metric
from metrics.scorers.errors import InputError
from metrics.scorers.nli import (
    NLIMetric,
    e2e_mr_to_triples,
    split_camel_case,
    triple_to_fact,
)

LABELS = ["contradiction", "neutral", "entailment"]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class WordOverlapNLI:
    """Entailment iff every hypothesis word occurs in the premise. Entailment
    probability otherwise grows with the share of words found (always below
    neutral), so confidences differ between checks."""

    labels = LABELS

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def entailment_probs(self, pairs):
        self.calls.append(list(pairs))
        rows = []
        for premise, hypothesis in pairs:
            hyp = _words(hypothesis)
            found = len(hyp & _words(premise)) / len(hyp) if hyp else 1.0
            if found == 1.0:
                rows.append([0.05, 0.05, 0.9])
            else:
                p_e = 0.3 * found
                rows.append([0.1, 0.9 - p_e, p_e])
        return np.array(rows)


E2E_TEMPLATES = {
    "eatType": ["<subject> is a <object>.", "unused second template"],
    "area": "<subject> is in the <object> area.",
    "familyFriendly": {"yes": ["<subject> is family-friendly."], "no": ["<subject> is not family-friendly."]},
}
BLUE_SPICE = [("Blue Spice", "eatType", "pub"), ("Blue Spice", "area", "riverside")]


@pytest.mark.parametrize(
    "output, label, omitted",
    [
        ("Blue Spice is a pub in the riverside area.", "OK", []),
        ("Blue Spice is a pub.", "omission", ["Blue Spice is in the riverside area."]),
        ("Blue Spice is a pub in the riverside area with kids.", "hallucination", []),
        # The paper's Figure 1: pub omitted, kids hallucinated; "is" is missing too,
        # so the word-overlap stand-in also misses the area fact.
        ("You can bring your kids to Blue Spice in the riverside area.", "omission+hallucination",
         ["Blue Spice is a pub.", "Blue Spice is in the riverside area."]),
    ],
)
def test_fine_and_rough_labels(output, label, omitted):
    metric = NLIMetric(backend=WordOverlapNLI(), templates=E2E_TEMPLATES)
    [seg] = metric.score([output], data=[BLUE_SPICE])
    assert seg.extra["label"] == label
    assert seg.extra["rough"] == ("OK" if label == "OK" else "not_OK")
    assert seg.score == (1.0 if label == "OK" else 0.0)
    assert seg.extra["omitted"] == omitted
    assert [f["entailed"] for f in seg.extra["facts"]] == [f["fact"] not in omitted for f in seg.extra["facts"]]
    assert seg.extra["hallucination_check"]["entailed"] == ("hallucination" not in label)


def test_pairs_sent_to_the_model_and_confidence_is_the_minimum():
    backend = WordOverlapNLI()
    metric = NLIMetric(backend=backend, templates=E2E_TEMPLATES)
    outputs = ["Blue Spice is a pub.", "The Eagle is cheap."]
    data = [BLUE_SPICE, [("The Eagle", "priceRange", "cheap")]]
    segs = metric.score(outputs, data=data)
    # One model call for the whole batch: omission pairs (output, fact) then the
    # hallucination pair (facts joined by one space, output), per segment.
    assert backend.calls == [[
        ("Blue Spice is a pub.", "Blue Spice is a pub."),
        ("Blue Spice is a pub.", "Blue Spice is in the riverside area."),
        ("Blue Spice is a pub. Blue Spice is in the riverside area.", "Blue Spice is a pub."),
        ("The Eagle is cheap.", "The price range of The Eagle is cheap."),
        ("The price range of The Eagle is cheap.", "The Eagle is cheap."),
    ]]
    # Segment 1: fact 2 has 3 of its 7 distinct words (blue, spice, is) in the
    # output -> p(entailment) = 0.3 * 3/7; fact 1 and the hallucination check pass at 0.9.
    assert segs[0].extra["confidence"] == pytest.approx(0.3 * 3 / 7)
    assert segs[0].extra["facts"][1]["probs"]["entailment"] == pytest.approx(0.3 * 3 / 7)
    # Segment 2: back-off fact has 4 of 7 words ("the", "eagle", "is", "cheap") in the output.
    assert segs[1].extra["label"] == "omission"
    assert segs[1].extra["confidence"] == pytest.approx(0.3 * 4 / 7)
    corpus = metric.corpus_score(segs)
    assert corpus.score == 0.0
    assert corpus.extra["labels"] == {"OK": 0, "omission": 2, "hallucination": 0, "omission+hallucination": 0}


def test_corpus_score_is_share_of_ok_outputs():
    metric = NLIMetric(backend=WordOverlapNLI(), templates=E2E_TEMPLATES)
    segs = metric.score(
        ["Blue Spice is a pub in the riverside area.", "Blue Spice is a pub."], data=[BLUE_SPICE, BLUE_SPICE]
    )
    assert metric.corpus_score(segs).score == 0.5


def test_backoff_template_splits_camel_case_strips_quotes_and_underscores():
    assert split_camel_case("eatType") == "eat type"
    assert split_camel_case("ISBN_number") == "ISBN_number"
    assert triple_to_fact(("Alan_Bean", "birthPlace", '"Wheeler, Texas"')) == "The birth place of Alan Bean is Wheeler, Texas."
    assert triple_to_fact(("Blue Spice", "eatType", "pub")) == "The eat type of Blue Spice is pub."
    assert triple_to_fact(("Aarhus_Airport", "runwayLength", "'2702.0'")) == "The runway length of Aarhus Airport is 2702.0."


def test_templates_option_file_and_value_keyed_entries(tmp_path):
    path = tmp_path / "templates.json"
    path.write_text(json.dumps(E2E_TEMPLATES), encoding="utf-8")
    # A templates option (JSON string, as from the CLI) overrides the file's entry.
    metric = NLIMetric(
        backend=WordOverlapNLI(), templates_file=str(path),
        templates=json.dumps({"area": ["<subject> lies in <object>."]}),
    )
    triples = [("Blue Spice", "eatType", "pub"), ("Blue Spice", "area", "riverside"),
               ("Blue Spice", "familyFriendly", "no"), ("Blue Spice", "food", "French")]
    assert metric.facts(triples) == [
        "Blue Spice is a pub.",  # first entry of the list
        "Blue Spice lies in riverside.",
        "Blue Spice is not family-friendly.",
        "The food of Blue Spice is French.",  # no template -> back-off
    ]


def test_bad_templates_are_rejected(tmp_path):
    with pytest.raises(OptionError, match="template for 'area'"):
        NLIMetric(backend=WordOverlapNLI(), templates={"area": 3})
    with pytest.raises(OptionError, match="cannot read"):
        NLIMetric(backend=WordOverlapNLI(), templates_file=str(tmp_path / "missing.json"))
    with pytest.raises(InputError, match="segment 0"):
        NLIMetric(backend=WordOverlapNLI()).score(["x"], data=[[("a", "b")]])


def test_e2e_mr_to_triples():
    assert e2e_mr_to_triples("name[Blue Spice], eatType[pub], near[Café Rouge]") == [
        ("Blue Spice", "eatType", "pub"), ("Blue Spice", "near", "Café Rouge")]
    assert e2e_mr_to_triples("eatType[coffee shop], customer rating[5 out of 5], name[The Eagle], priceRange[£20-25]") == [
        ("The Eagle", "eatType", "coffee shop"), ("The Eagle", "customer rating", "5 out of 5"),
        ("The Eagle", "priceRange", "£20-25")]
    with pytest.raises(InputError, match="no name"):
        e2e_mr_to_triples("eatType[pub]")
    with pytest.raises(InputError, match="cannot parse"):
        e2e_mr_to_triples("name[Blue Spice], eatType pub")


def test_e2e_mrs_from_real_ratings(shared_data):
    import csv

    with open(shared_data / "e2e-human" / "quality.csv", encoding="utf-8") as fh:
        rows = [row for _, row in zip(range(50), csv.DictReader(fh))]
    for row in rows:
        triples = e2e_mr_to_triples(row["mr"])
        n_slots = row["mr"].count("[")
        assert len(triples) == n_slots - 1  # every slot but the name
        assert len({t[0] for t in triples}) == 1


# ---- the real loading path with a tiny random RoBERTa (fixtures in conftest.py) ----
OUTPUTS = ["Blue Spice is a pub in the riverside area.", "You can bring your kids to Blue Spice."]
DATA = [BLUE_SPICE, BLUE_SPICE + [("Blue Spice", "familyFriendly", "yes")]]


def test_tiny_model_gives_valid_results_and_matches_a_direct_forward_pass(tiny_models):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    plain, _ = tiny_models
    metric = get_metric("nli", model=str(plain), device="cpu", batch_size=2)
    segs = metric.score(OUTPUTS, data=DATA)
    for seg in segs:
        assert seg.extra["label"] in ("OK", "omission", "hallucination", "omission+hallucination")
        probs = [f["probs"] for f in seg.extra["facts"]] + [seg.extra["hallucination_check"]["probs"]]
        for p in probs:
            assert set(p) == {"contradiction", "neutral", "entailment"}
            assert sum(p.values()) == pytest.approx(1.0, abs=1e-5)
        assert seg.extra["confidence"] == pytest.approx(min(p["entailment"] for p in probs))
    # Each check is the tokenizer's standard text pair (truncated to the model's
    # 64 tokens: the tiny vocabulary makes these pairs longer) through the
    # classifier, whatever the batching.
    tok = AutoTokenizer.from_pretrained(str(plain))
    net = AutoModelForSequenceClassification.from_pretrained(str(plain)).eval()
    seg = segs[1]
    with torch.no_grad():
        for fact in seg.extra["facts"]:
            logits = net(**tok(OUTPUTS[1], fact["fact"], truncation=True, return_tensors="pt")).logits[0]
            expected = torch.softmax(logits, -1).tolist()
            assert [fact["probs"][k] for k in ("contradiction", "neutral", "entailment")] == pytest.approx(expected, abs=1e-5)
        premise = " ".join(f["fact"] for f in seg.extra["facts"])
        logits = net(**tok(premise, OUTPUTS[1], truncation=True, return_tensors="pt")).logits[0]
        probs = seg.extra["hallucination_check"]["probs"]
        assert [probs[k] for k in ("contradiction", "neutral", "entailment")] == pytest.approx(
            torch.softmax(logits, -1).tolist(), abs=1e-5)


def test_label_order_is_read_from_the_config(tiny_models, monkeypatch):
    plain, permuted = tiny_models
    # The permuted checkpoint is reachable by a configured name, as in production.
    monkeypatch.setenv("WORKBENCH_MODELS", json.dumps({"tiny-permuted-nli": str(permuted)}))
    a = get_metric("nli", model=str(plain), device="cpu").score(OUTPUTS, data=DATA)
    b = get_metric("nli", model="tiny-permuted-nli", device="cpu").score(OUTPUTS, data=DATA)
    for sa, sb in zip(a, b):
        assert sa.extra["label"] == sb.extra["label"]
        assert sa.extra["confidence"] == pytest.approx(sb.extra["confidence"], abs=1e-6)
        for fa, fb in zip(sa.extra["facts"], sb.extra["facts"]):
            assert fa["probs"] == pytest.approx(fb["probs"], abs=1e-6)
    # The entailment bias dominates the random network: every check passes.
    assert [s.extra["label"] for s in b] == ["OK", "OK"]


def test_model_without_entailment_label_is_refused(tmp_path, tiny_tokenizer):
    import torch
    from transformers import RobertaConfig, RobertaForSequenceClassification

    config = RobertaConfig(vocab_size=len(tiny_tokenizer), hidden_size=16, num_hidden_layers=1,
                           num_attention_heads=2, intermediate_size=32, max_position_embeddings=66, num_labels=2)
    torch.manual_seed(0)
    RobertaForSequenceClassification(config).save_pretrained(tmp_path)
    tiny_tokenizer.save_pretrained(tmp_path)
    with pytest.raises(OptionError, match="no entailment label"):
        get_metric("nli", model=str(tmp_path), device="cpu").score(["x"], data=[BLUE_SPICE])


def test_missing_model_says_which_and_how_to_provide_it(monkeypatch):
    monkeypatch.delenv("WORKBENCH_MODELS", raising=False)
    metric = get_metric("nli")  # default roberta-large-mnli, not on this machine
    with pytest.raises(ModelNotAvailable) as info:
        metric.score(["Blue Spice is a pub."], data=[BLUE_SPICE])
    message = str(info.value)
    assert "roberta-large-mnli" in message
    assert "WORKBENCH_MODELS" in message and "model=" in message
