"""Degraded control outputs: a worse version of a real output ("BAD" items).

A degraded control shows an annotator a damaged copy of an output they also
judge in its original form; a careful annotator scores it lower (Appraise's
bad references, Pearmut's attention checks). The damage must be real, of the
configured kind and strength, and leave no mark that tells it apart from a
system output (no "BAD" tokens, no odd spacing):

- ``drop``: words removed, at random positions;
- ``shuffle``: the words of one contiguous phrase put in another order;
- ``invert``: the word order of one contiguous phrase reversed;
- ``shuffle5``: five words at random positions (all of them in a shorter text) put in another
  order among those positions, whatever the strength (WMT 2026's relative attention checks);
- ``fact`` (data-to-text): the realisation of input facts removed, with the
  function words that carried them ("in the city centre", "and has a low
  customer rating").

``strength`` is a share in (0, 1]: of the words dropped, of the words in the
shuffled or inverted phrase, or of the facts found in the text that are
removed; at least one word (two for a phrase, one fact) is always affected and
never every word. Punctuation stays where it was and a sentence-initial
capital stays at the start. The result depends only on the text, kind,
strength, seed (and data for ``fact``): the same call gives the same control.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

KINDS = ("drop", "shuffle", "invert", "fact", "shuffle5")
# The kinds a plain degraded copy draws from by default (shuffle5 is the relative checks' default).
TEXT_KINDS = ("drop", "shuffle", "invert")
SHUFFLED_WORDS = 5
DEFAULT_STRENGTH = 0.3

_WORD = re.compile(r"\w+(?:['’\-]\w+)*")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
# Words that only carry a fact into the sentence; removed with the fact.
_FUNCTION_WORDS = frozenset(
    """a an the in on at near by of with and which that who it its is are was has have had
    located situated found serves serving served offers offering offered provides providing
    called named also but while where there""".split()
)


class NotApplicable(ValueError):
    """This kind of damage cannot be done to this text (too short, no fact found)."""


@dataclass(frozen=True)
class Degradation:
    text: str
    kind: str
    strength: float
    seed: int
    # What changed: word positions (drop, shuffle, invert) or the removed facts.
    detail: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return {"kind": self.kind, "strength": self.strength, "seed": self.seed, **self.detail}


def degrade(
    text: str, *, kind: str, strength: float = DEFAULT_STRENGTH, seed: int = 0, data: Sequence | None = None
) -> Degradation:
    """A damaged copy of `text`; raises `NotApplicable` when `kind` cannot apply.

    >>> degrade("Blue Spice is a pub in the city centre.", kind="invert", strength=0.3, seed=1).text
    'Blue Spice is a pub in centre city the.'
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    if not isinstance(strength, (int, float)) or not 0 < strength <= 1:
        raise ValueError(f"strength must be in (0, 1], got {strength!r}")
    rng = random.Random(f"{kind}:{strength}:{seed}")
    if kind == "fact":
        result, detail = _remove_facts(text, data or [], strength, rng)
    else:
        words, gaps = _split(text)
        result, detail = {"drop": _drop, "shuffle": _shuffle, "invert": _invert, "shuffle5": _shuffle_words}[kind](
            words, gaps, strength, rng
        )
        result = _keep_initial_capital(text, result)
    if result == text:  # every branch changes the text; this guards the promise
        raise NotApplicable(f"{kind} left the text unchanged")
    return Degradation(text=result, kind=kind, strength=float(strength), seed=seed, detail=detail)


def degrade_any(
    text: str, *, kinds: Sequence[str], strength: float = DEFAULT_STRENGTH, seed: int = 0, data: Sequence | None = None
) -> Degradation:
    """The first of `kinds`, in an order drawn from `seed`, that applies to `text`."""
    order = list(kinds)
    random.Random(f"order:{seed}").shuffle(order)
    problems = []
    for kind in order:
        try:
            return degrade(text, kind=kind, strength=strength, seed=seed, data=data)
        except NotApplicable as exc:
            problems.append(f"{kind}: {exc}")
    raise NotApplicable("; ".join(problems) or "no kind configured")


# --- words and the gaps between them -------------------------------------------------


def _split(text: str) -> tuple[list[str], list[str]]:
    """`text` == gaps[0] + words[0] + gaps[1] + ... + words[-1] + gaps[-1]."""
    words, gaps, last = [], [], 0
    for match in _WORD.finditer(text):
        gaps.append(text[last : match.start()])
        words.append(match.group())
        last = match.end()
    gaps.append(text[last:])
    return words, gaps


def _join(words: Sequence[str], gaps: Sequence[str]) -> str:
    out = [gaps[0]]
    for word, gap in zip(words, gaps[1:]):
        out += [word, gap]
    return "".join(out)


def _phrase_length(n_words: int, strength: float, minimum: int) -> int:
    return min(n_words, max(minimum, round(strength * n_words)))


def _drop(words, gaps, strength, rng):
    n = len(words)
    if n < 2:
        raise NotApplicable("fewer than 2 words")
    k = min(n - 1, max(1, round(strength * n)))
    positions = sorted(rng.sample(range(n), k))
    words, gaps = list(words), list(gaps)
    for i in reversed(positions):
        before, after = gaps[i], gaps[i + 1]
        if i == 0:
            merged = before
        elif i == len(words) - 1:
            merged = after
        else:
            # Keep whichever gap carries punctuation (", " over " ").
            merged = after if len(after.strip()) > len(before.strip()) else before
        words.pop(i)
        gaps[i : i + 2] = [merged]
    return _join(words, gaps), {"positions": positions, "removed": k, "words": len(words) + k}


def _windows(words: Sequence[str], length: int) -> list[int]:
    """Starts of phrases of `length` words that contain two different words."""
    return [s for s in range(len(words) - length + 1) if len({w.lower() for w in words[s : s + length]}) > 1]


def _shuffle(words, gaps, strength, rng):
    if len(words) < 2:
        raise NotApplicable("fewer than 2 words")
    length = _phrase_length(len(words), strength, 2)
    starts = _windows(words, length)
    if not starts:
        raise NotApplicable("no phrase with two different words")
    start = rng.choice(starts)
    phrase = list(words[start : start + length])
    order = list(range(length))
    while [phrase[i].lower() for i in order] == [w.lower() for w in phrase]:
        rng.shuffle(order)
    words = list(words)
    words[start : start + length] = [phrase[i] for i in order]
    return _join(words, gaps), {"start": start, "length": length, "words": len(words)}


def _shuffle_words(words, gaps, strength, rng):
    """SHUFFLED_WORDS words drawn at random put in another order among their positions (a derangement
    of their texts: no word stays where it was unless it repeats another)."""
    if len({w.lower() for w in words}) < 2:
        raise NotApplicable("fewer than 2 different words")
    k = min(SHUFFLED_WORDS, len(words))
    for _ in range(100):
        positions = sorted(rng.sample(range(len(words)), k))
        if len({words[i].lower() for i in positions}) > 1:
            break
    else:
        raise NotApplicable("no words that change places")
    moved = [words[i] for i in positions]
    if positions[0] == 0 and moved[0][:1].isupper() and moved[0][1:].islower():
        moved[0] = moved[0].lower()  # a sentence-initial capital stays at the start (_keep_initial_capital)
    order = list(range(k))
    while any(moved[order[j]].lower() == moved[j].lower() for j in range(k)) and len(set(map(str.lower, moved))) == k:
        rng.shuffle(order)
    while [moved[i].lower() for i in order] == [w.lower() for w in moved]:
        rng.shuffle(order)
    words = list(words)
    for j, i in enumerate(positions):
        words[i] = moved[order[j]]
    return _join(words, gaps), {"positions": positions, "length": k, "words": len(words)}


def _invert(words, gaps, strength, rng):
    if len(words) < 2:
        raise NotApplicable("fewer than 2 words")
    length = _phrase_length(len(words), strength, 2)
    # A palindromic phrase ("had had") reads the same reversed: skip it.
    starts = [
        s
        for s in _windows(words, length)
        if [w.lower() for w in words[s : s + length]] != [w.lower() for w in reversed(words[s : s + length])]
    ]
    if not starts:
        raise NotApplicable("no phrase that changes when reversed")
    start = rng.choice(starts)
    words = list(words)
    words[start : start + length] = reversed(words[start : start + length])
    return _join(words, gaps), {"start": start, "length": length, "words": len(words)}


def _keep_initial_capital(original: str, result: str) -> str:
    first_old = _WORD.search(original)
    first_new = _WORD.search(result)
    if first_old and first_new and first_old.group()[0].isupper() and first_new.group()[0].islower():
        i = first_new.start()
        result = result[:i] + result[i].upper() + result[i + 1 :]
    return result


# --- facts (data-to-text) ---------------------------------------------------------------


def _plain(value: str) -> str:
    return " ".join(str(value).replace("_", " ").strip().strip("\"'").split())


def _predicate_words(predicate: str) -> list[str]:
    return [w.lower() for w in _CAMEL.sub(" ", _plain(predicate)).split()]


def _surfaces(subject: str, predicate: str, obj: str) -> list[str]:
    """How the fact's object may be written in the text, longest first."""
    value = _plain(obj)
    if not value or value.lower() in {_plain(subject).lower(), "name"} or predicate.lower() == "name":
        return []
    if value.lower() in {"yes", "no", "true", "false"}:
        # A yes/no attribute is written as the attribute itself ("family friendly").
        words = _predicate_words(predicate)
        return [" ".join(words), "-".join(words)] if len(words) > 1 else words
    return [value]


def _find(text: str, surface: str) -> list[tuple[int, int]]:
    # Hyphens count as part of a word: "high" is not found in "high-priced".
    pattern = r"(?<![\w-])" + r"\s+".join(re.escape(part) for part in surface.split()) + r"(?![\w-])"
    return [(m.start(), m.end()) for m in re.finditer(pattern, text, flags=re.IGNORECASE)]


def _located_facts(text: str, data: Sequence) -> list[tuple[int, list[tuple[int, int]], list[str]]]:
    """(index of the triple, its spans in `text`, predicate words) for facts found in the text."""
    located = []
    subject_spans = []
    for triple in data:
        if isinstance(triple, (list, tuple)) and len(triple) == 3:
            subject_spans += _find(text, _plain(triple[0])) if _plain(triple[0]) else []
    for index, triple in enumerate(data):
        if not (isinstance(triple, (list, tuple)) and len(triple) == 3):
            continue
        subject, predicate, obj = (str(x) for x in triple)
        for surface in _surfaces(subject, predicate, obj):
            spans = [s for s in _find(text, surface) if not any(a < s[1] and s[0] < b for a, b in subject_spans)]
            if spans:
                located.append((index, spans, _predicate_words(predicate)))
                break
    return located


def _widen(text: str, start: int, end: int, predicate_words: list[str]) -> tuple[int, int]:
    """Take in the predicate's own words around the value ("low customer rating",
    "customer rating of 5 out of 5") and the function words before it ("and has a"),
    never across punctuation."""
    while True:
        match = re.match(r"[ \t]+(\w+)", text[end:])
        if match and match.group(1).lower() in predicate_words:
            end += match.end()
        else:
            break
    carriers = _FUNCTION_WORDS | set(predicate_words)
    for _ in range(8):
        match = re.search(r"(?<![\w-])(\w+)[ \t]+$", text[:start])
        if match and match.group(1).lower() in carriers and match.start() > 0:
            start = match.start()
        else:
            break
    return start, end


def _leaves_fragment(text: str, start: int, end: int) -> bool:
    at_sentence_start = re.search(r"(^|[.!?])\s*$", text[:start]) is not None
    at_sentence_end = re.match(r"\s*([.!?]|$)", text[end:]) is not None
    return at_sentence_start and not at_sentence_end


def _tidy(text: str, original: str) -> str:
    """Close the hole a removed fact leaves, in the spacing style of the original."""
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r"\s*[,;]\s*(?=[.!?]|$)", "", text)  # "shop , ." -> "shop ."
    text = re.sub(r"([,;])(\s*[,;])+", r"\1", text)  # ", ," -> ","
    text = re.sub(r"^[\s,;]+", "", text)
    # A sentence emptied by the removal leaves its full stop behind: ". ." -> "."
    text = re.sub(r"([.!?])(\s*[.!?])+", r"\1", text)
    # A conjunction left dangling before the end: "a pub and ." -> "a pub ."
    text = re.sub(r"\s+(?:and|or|but|with|which|that)(?=\s*[.!?]?\s*$)", "", text, flags=re.IGNORECASE)
    if not re.search(r"\w\s+[.,;!?]", original):  # tokenised outputs keep "centre ."
        text = re.sub(r"\s+(?=[.,;!?])", "", text)
    return text.strip()


def _remove_facts(text, data, strength, rng):
    located = _located_facts(text, data)
    if not located:
        raise NotApplicable("no input fact is written in the output")
    k = min(len(located), max(1, round(strength * len(located))))
    widened = [[_widen(text, a, b, words) for a, b in fact_spans] for _, fact_spans, words in located]
    # Prefer facts whose removal leaves whole sentences: one that takes a sentence's
    # start but not its end leaves a fragment ("... Cuisine. and is not kid friendly.").
    clean = [i for i, spans in enumerate(widened) if not any(_leaves_fragment(text, a, b) for a, b in spans)]
    rest = [i for i in range(len(located)) if i not in clean]
    chosen = rng.sample(clean, min(k, len(clean)))
    chosen = sorted(chosen + rng.sample(rest, k - len(chosen)))
    spans = sorted(span for c in chosen for span in widened[c])
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    pieces, last = [], 0
    for a, b in merged:
        pieces.append(text[last:a])
        last = b
    pieces.append(text[last:])
    result = _keep_initial_capital(text, _tidy("".join(pieces), text))
    if not _WORD.search(result):
        raise NotApplicable("removing the fact leaves no words")
    removed = [list(map(str, data[located[c][0]])) for c in chosen]
    return result, {"facts": removed, "removed": k, "located": len(located)}
