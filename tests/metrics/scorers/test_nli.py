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
        (
            "You can bring your kids to Blue Spice in the riverside area.",
            "omission+hallucination",
            ["Blue Spice is a pub.", "Blue Spice is in the riverside area."],
        ),
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
    assert backend.calls == [
        [
            ("Blue Spice is a pub.", "Blue Spice is a pub."),
            ("Blue Spice is a pub.", "Blue Spice is in the riverside area."),
            ("Blue Spice is a pub. Blue Spice is in the riverside area.", "Blue Spice is a pub."),
            ("The Eagle is cheap.", "The price range of The Eagle is cheap."),
            ("The price range of The Eagle is cheap.", "The Eagle is cheap."),
        ]
    ]
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
    assert (
        triple_to_fact(("Alan_Bean", "birthPlace", '"Wheeler, Texas"'))
        == "The birth place of Alan Bean is Wheeler, Texas."
    )
    assert triple_to_fact(("Blue Spice", "eatType", "pub")) == "The eat type of Blue Spice is pub."
    assert (
        triple_to_fact(("Aarhus_Airport", "runwayLength", "'2702.0'"))
        == "The runway length of Aarhus Airport is 2702.0."
    )


def test_templates_option_file_and_value_keyed_entries(tmp_path):
    path = tmp_path / "templates.json"
    path.write_text(json.dumps(E2E_TEMPLATES), encoding="utf-8")
    # A templates option (JSON string, as from the CLI) overrides the file's entry.
    metric = NLIMetric(
        backend=WordOverlapNLI(),
        templates_file=str(path),
        templates=json.dumps({"area": ["<subject> lies in <object>."]}),
    )
    triples = [
        ("Blue Spice", "eatType", "pub"),
        ("Blue Spice", "area", "riverside"),
        ("Blue Spice", "familyFriendly", "no"),
        ("Blue Spice", "food", "French"),
    ]
    assert metric.facts(triples) == [
        "Blue Spice is a pub.",  # first entry of the list
        "Blue Spice lies in riverside.",
        "Blue Spice is not family-friendly.",
        "The food of Blue Spice is French.",  # no template -> back-off
    ]


def test_bad_templates_are_rejected(tmp_path):
    with pytest.raises(OptionError, match="template for 'area'"):
        NLIMetric(backend=WordOverlapNLI(), templates={"area": 3})
    with pytest.raises(OptionError, match="templates_file: not allowed or not found"):
        NLIMetric(backend=WordOverlapNLI(), templates_file=str(tmp_path / "missing.json")).facts(BLUE_SPICE)
    with pytest.raises(InputError, match="segment 0"):
        NLIMetric(backend=WordOverlapNLI()).score(["x"], data=[[("a", "b")]])


def test_e2e_mr_to_triples():
    assert e2e_mr_to_triples("name[Blue Spice], eatType[pub], near[Café Rouge]") == [
        ("Blue Spice", "eatType", "pub"),
        ("Blue Spice", "near", "Café Rouge"),
    ]
    assert e2e_mr_to_triples(
        "eatType[coffee shop], customer rating[5 out of 5], name[The Eagle], priceRange[£20-25]"
    ) == [
        ("The Eagle", "eatType", "coffee shop"),
        ("The Eagle", "customer rating", "5 out of 5"),
        ("The Eagle", "priceRange", "£20-25"),
    ]
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
            assert [fact["probs"][k] for k in ("contradiction", "neutral", "entailment")] == pytest.approx(
                expected, abs=1e-5
            )
        premise = " ".join(f["fact"] for f in seg.extra["facts"])
        logits = net(**tok(premise, OUTPUTS[1], truncation=True, return_tensors="pt")).logits[0]
        probs = seg.extra["hallucination_check"]["probs"]
        assert [probs[k] for k in ("contradiction", "neutral", "entailment")] == pytest.approx(
            torch.softmax(logits, -1).tolist(), abs=1e-5
        )


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

    config = RobertaConfig(
        vocab_size=len(tiny_tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=66,
        num_labels=2,
    )
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
    assert "WORKBENCH_MODELS" in message and "WORKBENCH_MODEL_DIRS" in message and "never downloaded" in message


# ---- compat=nlgi_eval against a transcription of ufal/nlgi_eval's check_inst ----
# The only reference code in this repository, as issue 8 asks: a minimal transcription of
# `Evaluator.triples_to_templates` and `Evaluator.check_inst` from ufal/nlgi_eval
# (nli_eval.py, commit 34f304a, Dušek & Kasner 2020), logging and the E2E
# "ignore restaurant" option left out; `classify(text)` stands in for RoBERTa on the
# single string `roberta_classify` builds.
_NLGI_REMAP = {
    "eat_type": "eatType",
    "rating": "customer rating",
    "family_friendly": "familyFriendly",
    "price_range": "priceRange",
}


def _nlgi_triples_to_templates(templates, tripleset):
    output = []
    for subject, predicate, obj in tripleset:
        if predicate not in templates:
            if predicate in _NLGI_REMAP and _NLGI_REMAP[predicate] in templates:
                template = templates[_NLGI_REMAP[predicate]]
            else:
                template = "The %s of <subject> is <object>." % predicate
                template = re.sub("([a-z])([A-Z])", r"\1 \2", template)
        else:
            template = templates[predicate]
        if isinstance(template, dict):
            template = template[obj]
        if isinstance(template, list):
            template = template[0]
        template = template.replace("<subject>", subject)
        obj_str = re.sub("^[\"'](.*)[\"']$", r"\1", obj)
        template = template.replace("<object>", obj_str)
        template = template.replace("_", " ")
        output.append(template)
    return output


def _nlgi_check_inst(classify, templates, mr, sent):
    roberta_classify = lambda a, b: classify("%s </s></s> %s" % (a, b))  # noqa: E731
    templs = _nlgi_triples_to_templates(templates, mr)
    ent_confs = []
    mr2sent = roberta_classify(" ".join(templs), sent)
    ent_confs.append(float(mr2sent[2]))
    mr2sent = ["C", "N", "E"][np.argmax(mr2sent)]
    sent2mr = roberta_classify(sent, " ".join(templs))
    ent_confs.append(float(sent2mr[2]))
    sent2mr = ["C", "N", "E"][np.argmax(sent2mr)]
    if sent2mr == "E" and mr2sent == "E":
        output = "OK"
    elif sent2mr == "E":
        output = "hallucination"
    elif mr2sent == "E":
        output = "omission"
    else:
        output = "hallucination+omission"
    omitted = []
    for triple, templ in zip(mr, templs):
        sent2triple = roberta_classify(sent, templ)
        ent_confs.append(float(sent2triple[2]))
        sent2triple = ["C", "N", "E"][np.argmax(sent2triple)]
        if sent2triple != "E":
            omitted.append(triple)
    if omitted:
        output = "hallucination+omission" if "hallucination" in output else "omission"
    return output, min(ent_confs), omitted, templs


def _stand_in_classify(text):
    """Deterministic C/N/E probabilities of "premise </s></s> hypothesis" from word overlap
    (case-sensitive, so the back-off's kept case matters), negation, and length (a
    hypothesis of more than 12 distinct words is never entailed, so the whole-input
    check can fail while every fact passes)."""
    premise, hypothesis = text.split(" </s></s> ", 1)
    p_words, h_words = set(re.findall(r"\w+", premise)), set(re.findall(r"\w+", hypothesis))
    found = len(h_words & p_words) / len(h_words) if h_words else 1.0
    if ("not" in h_words) != ("not" in p_words):
        return np.array([0.6, 0.3, 0.1])
    if found == 1.0 and len(h_words) > 12:
        return np.array([0.05, 0.5, 0.45])
    if found == 1.0:
        return np.array([0.02, 0.08 + 0.01 * (len(h_words) % 5), 0.9 - 0.01 * (len(h_words) % 5)])
    return np.array([0.15, 0.85 - 0.5 * found, 0.5 * found])


class JoinedStandIn:
    """Our backend protocol around the stand-in: receives pairs, encodes them as nlgi_eval does."""

    labels = LABELS

    def __init__(self):
        self.encodings = []

    def entailment_probs(self, pairs, encoding="pair"):
        self.encodings.append(encoding)
        return np.array([_stand_in_classify(f"{a} </s></s> {b}") for a, b in pairs])


_E2E_TEST_TEMPLATES = {  # written for this test, in nlgi_eval's file format
    "eatType": ["<subject> is a <object> ."],
    "area": ["<subject> is in the <object> ."],
    "near": ["<subject> is near <object> ."],
    "food": ["<subject> serves <object> food ."],
    "priceRange": ["<subject> has a price range of <object> ."],
    "customer rating": ["<subject> has a <object> customer rating ."],
    "familyFriendly": {"yes": ["<subject> is family-friendly ."], "no": ["<subject> is not family-friendly ."]},
}
_WEBNLG_ITEMS = [
    ([("Alan_Bean", "birthPlace", '"Wheeler, Texas"')], "Alan Bean was born in Wheeler, Texas."),
    ([("Alan_Bean", "birthPlace", "Wheeler,_Texas")], "The birth Place of Alan Bean is Wheeler, Texas."),
    (
        [('"Aarhus"', "cityServed", "'Aarhus_Airport'"), ("Aarhus_Airport", "runwayLength", '"2702.0"')],
        "Aarhus Airport serves the city of Aarhus and its runway length is 2702.0.",
    ),
    ([("Aarhus_Airport", "runwayLength", '"2702.0"')], "The runway Length of Aarhus Airport is 2702.0."),
    (
        [("Alan_Shepard", "dateOfBirth", '"1923-11-18"'), ("Alan_Shepard", "occupation", "Test_pilot")],
        "Alan Shepard, born on 1923-11-18, was a test pilot.",
    ),
    (
        [("Alan_Shepard", "dateOfBirth", '"1923-11-18"'), ("Alan_Shepard", "occupation", "Test_pilot")],
        "The date Of Birth of Alan Shepard is 1923-11-18. The occupation of Alan Shepard is Test pilot.",
    ),
    (
        [("Acharya_Institute", "ISBN_number", "978-1"), ("Acharya_Institute", "city", "Bangalore")],
        "The ISBN number of Acharya Institute is 978-1 and the city of Acharya Institute is Bangalore.",
    ),
    (
        [("Blue Spice", "eat_type", "pub"), ("Blue Spice", "family_friendly", "no")],
        "Blue Spice is a pub . Blue Spice is not family-friendly .",
    ),
    ([("Blue Spice", "familyFriendly", "yes")], "Blue Spice is not family-friendly ."),
    ([], "Nothing to say."),
]


def _compat_items(shared_data):
    import csv

    items = list(_WEBNLG_ITEMS)
    with open(shared_data / "e2e-human" / "quality.csv", encoding="utf-8") as fh:
        rows = [row for _, row in zip(range(40), csv.DictReader(fh))]
    seen = set()
    for row in rows:
        if row["mr"] in seen:
            continue
        seen.add(row["mr"])
        triples = e2e_mr_to_triples(row["mr"])
        items += [(triples, row[f"ref{k}"]) for k in range(1, 6)]
    return items


def test_compat_nlgi_eval_equals_check_inst(shared_data):
    items = _compat_items(shared_data)
    assert len(items) >= 30
    backend = JoinedStandIn()
    metric = NLIMetric(backend=backend, templates=_E2E_TEST_TEMPLATES, compat="nlgi_eval")
    segs = metric.score([sent for _, sent in items], data=[mr for mr, _ in items])
    assert set(backend.encodings) == {"joined"}
    labels = set()
    for seg, (mr, sent) in zip(segs, items):
        output, confidence, omitted, templs = _nlgi_check_inst(_stand_in_classify, _E2E_TEST_TEMPLATES, mr, sent)
        expected = "omission+hallucination" if output == "hallucination+omission" else output
        assert seg.extra["label"] == expected, (mr, sent)
        assert seg.extra["confidence"] == pytest.approx(confidence, abs=1e-12)
        assert [f["fact"] for f in seg.extra["facts"]] == templs
        assert [tuple(f["triple"]) for f in seg.extra["facts"] if not f["entailed"]] == omitted
        labels.add(expected)
    # The items exercise every label, and the whole-input check alone setting "omission".
    assert labels == {"OK", "omission", "hallucination", "omission+hallucination"}
    assert any(s.extra["label"] == "omission" and not s.extra["omitted"] for s in segs)


def test_default_mode_is_check_inst_without_the_whole_input_check(shared_data):
    """The paper's text (default): no whole-input omission check, a tokenizer text pair,
    a back-off with lower-cased camelCase parts. With the same facts and a classifier
    that ignores the encoding, labels and confidences are check_inst's minus that check."""
    items = _compat_items(shared_data)
    paper = NLIMetric(backend=WordOverlapNLI(), templates=_E2E_TEST_TEMPLATES)
    segs = paper.score([sent for _, sent in items], data=[mr for mr, _ in items])
    differs = 0
    for seg, (mr, sent) in zip(segs, items):
        facts = paper.facts(mr)
        assert [f["fact"] for f in seg.extra["facts"]] == facts
        backend = WordOverlapNLI()
        rows = backend.entailment_probs([(sent, f) for f in facts] + [(" ".join(facts), sent)])
        omitted = [f for f, row in zip(facts, rows) if np.argmax(row) != 2]
        hallucination = np.argmax(rows[-1]) != 2
        assert seg.extra["omitted"] == omitted
        assert seg.extra["confidence"] == pytest.approx(min(rows[:, 2]))
        assert (
            seg.extra["label"]
            == {
                (False, False): "OK",
                (True, False): "omission",
                (False, True): "hallucination",
                (True, True): "omission+hallucination",
            }[(bool(omitted), bool(hallucination))]
        )
        differs += facts != _nlgi_triples_to_templates(_E2E_TEST_TEMPLATES, mr)
    assert differs > 0  # the back-off differs ("birth place" vs nlgi_eval's "birth Place")


def test_joined_encoding_is_nlgi_evals_single_string(tiny_models):
    """With compat=nlgi_eval the real backend encodes "premise </s></s> hypothesis" as one
    string (other token ids than the tokenizer's pair) and gives that string's probabilities."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    plain, _ = tiny_models
    metric = get_metric("nli", model=str(plain), device="cpu", compat="nlgi_eval")
    [seg] = metric.score(["Blue Spice is a pub."], data=[[("Blue Spice", "eatType", "pub")]])
    tok = AutoTokenizer.from_pretrained(str(plain))
    net = AutoModelForSequenceClassification.from_pretrained(str(plain)).eval()
    joined = tok("%s </s></s> %s" % ("Blue Spice is a pub.", seg.extra["facts"][0]["fact"]), return_tensors="pt")
    pair = tok("Blue Spice is a pub.", seg.extra["facts"][0]["fact"], return_tensors="pt")
    assert joined["input_ids"].tolist() != pair["input_ids"].tolist()
    with torch.no_grad():
        expected = torch.softmax(net(**joined).logits[0], -1).tolist()
    probs = seg.extra["facts"][0]["probs"]
    assert [probs[k] for k in ("contradiction", "neutral", "entailment")] == pytest.approx(expected, abs=1e-5)
    assert "compat:nlgi_eval" in metric.signature()


def test_templates_option_accepts_a_json_file_path(tmp_path):
    path = tmp_path / "templates.json"
    path.write_text(json.dumps(E2E_TEMPLATES), encoding="utf-8")
    by_path = NLIMetric(backend=WordOverlapNLI(), templates=str(path))
    by_value = NLIMetric(backend=WordOverlapNLI(), templates=E2E_TEMPLATES)
    assert (
        by_path.facts(BLUE_SPICE)
        == by_value.facts(BLUE_SPICE)
        == ["Blue Spice is a pub.", "Blue Spice is in the riverside area."]
    )
    assert by_path.signature() == by_value.signature()
    with pytest.raises(OptionError, match="templates: not allowed or not found"):
        NLIMetric(backend=WordOverlapNLI(), templates=str(tmp_path / "missing.json")).facts(BLUE_SPICE)
    with pytest.raises(OptionError, match="compat"):
        NLIMetric(backend=WordOverlapNLI(), compat="ufal")
