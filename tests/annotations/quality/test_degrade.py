"""Degraded controls differ from their originals exactly as configured, and are worse."""

import re
from collections import Counter

import pytest

from annotations.quality.degrade import NotApplicable, degrade, degrade_any

TEXTS = [
    "Blue Spice is a coffee shop in the city centre and has a low customer rating.",
    "The Mill, a family-friendly pub near Café Rouge, serves cheap English food.",
    "There is a coffee shop in the riverside area called Blue Spice which has a low customer rating .",
    "Der Hund läuft schnell über die grüne Wiese, während die Katze schläft.",
]
STRENGTHS = [0.1, 0.3, 0.6, 1.0]


def words(text: str) -> list[str]:
    return re.findall(r"[\w'’-]+", text)


def lower(ws):
    return [w.lower() for w in ws]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("strength", STRENGTHS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_drop_removes_the_configured_share_of_words_and_keeps_the_rest_in_order(text, strength, seed):
    original = words(text)
    result = degrade(text, kind="drop", strength=strength, seed=seed)
    expected_removed = min(len(original) - 1, max(1, round(strength * len(original))))
    kept = words(result.text)
    assert len(original) - len(kept) == expected_removed == result.detail["removed"]
    # What is left is the original with those words taken out, in the same order.
    it = iter(lower(original))
    assert all(w in it for w in lower(kept))
    # Punctuation stays: the sentence still ends the way it did.
    assert result.text.rstrip()[-1] == text.rstrip()[-1]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("strength", STRENGTHS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shuffle_reorders_one_phrase_of_the_configured_length(text, strength, seed):
    original = lower(words(text))
    result = degrade(text, kind="shuffle", strength=strength, seed=seed)
    shuffled = lower(words(result.text))
    length = min(len(original), max(2, round(strength * len(original))))
    assert Counter(shuffled) == Counter(original)
    assert shuffled != original
    changed = [i for i, (a, b) in enumerate(zip(original, shuffled)) if a != b]
    assert changed[-1] - changed[0] < length  # all changes inside one phrase of that length
    assert result.detail["length"] == length


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("strength", STRENGTHS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_invert_reverses_one_phrase_of_the_configured_length(text, strength, seed):
    original = lower(words(text))
    result = degrade(text, kind="invert", strength=strength, seed=seed)
    inverted = lower(words(result.text))
    length = min(len(original), max(2, round(strength * len(original))))
    assert inverted != original
    starts = [
        s
        for s in range(len(original) - length + 1)
        if inverted == original[:s] + original[s : s + length][::-1] + original[s + length :]
    ]
    assert starts, (text, result.text)


E2E = [
    (
        "Blue Spice is a coffee shop in the city centre and has a low customer rating.",
        [
            ["Blue Spice", "name", "Blue Spice"],
            ["Blue Spice", "eatType", "coffee shop"],
            ["Blue Spice", "area", "city centre"],
            ["Blue Spice", "customer rating", "low"],
        ],
    ),
    (
        "The Mill is a kid friendly fast food pub in the city centre near Café Sicilia with a customer rating of 3 out of 5.",
        [
            ["The Mill", "eatType", "pub"],
            ["The Mill", "food", "Fast food"],
            ["The Mill", "area", "city centre"],
            ["The Mill", "near", "Café Sicilia"],
            ["The Mill", "customer rating", "3 out of 5"],
            ["The Mill", "familyFriendly", "yes"],
        ],
    ),
]


def mentions(text: str, value: str) -> bool:
    return value.lower() in text.lower()


@pytest.mark.parametrize("text,data", E2E)
@pytest.mark.parametrize("strength", [0.2, 0.5, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fact_removes_the_chosen_facts_and_keeps_the_others(text, data, strength, seed):
    result = degrade(text, kind="fact", strength=strength, seed=seed, data=data)
    removed = {tuple(f) for f in result.detail["facts"]}
    located = result.detail["located"]
    assert len(removed) == min(located, max(1, round(strength * located)))
    for subject, predicate, obj in data:
        if predicate in ("name", "familyFriendly") or (subject, predicate, obj) in removed:
            continue
        if mentions(text, obj) and not any(mentions(obj, o) or mentions(o, obj) for _, _, o in removed):
            assert mentions(result.text, obj), f"{obj!r} should stay in {result.text!r}"
    for _, predicate, obj in removed:
        surface = "kid friendly" if predicate == "familyFriendly" else obj
        assert not mentions(result.text, surface), f"{obj!r} should be gone from {result.text!r}"
    assert mentions(result.text, data[0][0])  # the subject stays
    assert len(result.text) < len(text)


def test_same_seed_same_control_and_seeds_vary_it():
    text = TEXTS[0]
    for kind in ("drop", "shuffle", "invert"):
        assert degrade(text, kind=kind, seed=5) == degrade(text, kind=kind, seed=5)
        assert len({degrade(text, kind=kind, seed=s).text for s in range(10)}) > 3
    assert degrade(text, kind="fact", seed=5, data=E2E[0][1]) == degrade(text, kind="fact", seed=5, data=E2E[0][1])


@pytest.mark.parametrize("kind", ["drop", "shuffle", "invert", "fact"])
def test_no_mark_of_editing(kind):
    data = E2E[1][1]
    text = E2E[1][0]
    for seed in range(20):
        out = degrade(text, kind=kind, seed=seed, data=data).text
        assert "  " not in out and " ," not in out and " ." not in out and ",," not in out and ".." not in out
        assert out == out.strip()
        assert out[0].isupper()  # the sentence-initial capital survives


def test_what_cannot_be_damaged_says_so():
    with pytest.raises(NotApplicable):
        degrade("Hello", kind="drop")
    with pytest.raises(NotApplicable):
        degrade("ok ok ok", kind="shuffle")
    with pytest.raises(NotApplicable):
        degrade("Blue Spice is a pub.", kind="fact", data=[["Green Man", "food", "Italian"]])
    with pytest.raises(ValueError):
        degrade("a b c", kind="melt")
    with pytest.raises(ValueError):
        degrade("a b c", kind="drop", strength=0)
    # degrade_any falls back to a kind that applies, and records which.
    result = degrade_any("Blue Spice is a pub.", kinds=["fact", "invert"], seed=3, data=[])
    assert result.kind == "invert"


def test_degraded_outputs_are_worse_on_real_e2e_outputs(shared_data):
    """chrF (sacrebleu) against the other systems' outputs for the same input drops for
    nearly every real E2E output, for every kind."""
    from sacrebleu.metrics import CHRF

    from annotations.quality.figure_eight import study_read

    study = study_read(shared_data / "e2e-human" / "quality.csv", criterion="quality")
    chrf = CHRF()
    items = list(study.items.values())[:60]
    for kind in ("drop", "shuffle", "invert", "fact"):
        lower_count = total = 0
        before = after = 0.0
        for n, item in enumerate(items):
            outputs = list(item["outputs"].items())
            for system, text in outputs[:3]:
                refs = [t for s, t in outputs if s != system]
                try:
                    damaged = degrade(text, kind=kind, strength=0.3, seed=n, data=item["data"]).text
                except NotApplicable:
                    continue
                o, d = chrf.sentence_score(text, refs).score, chrf.sentence_score(damaged, refs).score
                total += 1
                lower_count += d < o
                before, after = before + o, after + d
        assert total >= 150
        assert lower_count / total >= 0.9, (kind, lower_count, total)
        assert after / total < before / total - 5, kind
