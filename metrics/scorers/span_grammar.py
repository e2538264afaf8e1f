"""The constrained output of `llm-judge` in spans mode: an automaton over characters.

The judge may only write, without whitespace,

    {"errors":[{"text":"<quote>","occurrence":<digit>,"severity":"<severity>"[,"category":"<category>"]},...]}

where every quote is a non-empty substring of the judged output (characters
that JSON would have to escape, `"`, `\\` and control characters, never occur
in a quote), so the answer always parses and every quote is found in the output.
At each decoding step only tokens that keep the text on this path are allowed,
and, counting one token per character of the shortest way to finish the JSON
(the closing characters are single tokens of every byte-level vocabulary; the
judge checks its tokenizer), only tokens after which the JSON can still be
closed within the remaining `max_new_tokens`: generation never stops halfway.

This module knows nothing about models: `SpanAutomaton` feeds strings
(token surfaces) and says what may follow; `resolve_spans` maps a parsed answer
to character offsets, resolving a quote that occurs several times by its
occurrence index as factgenie does (`occurence_index` in factgenie's
`SpanAnnotationOccurenceIndex`: the n-th of all, possibly overlapping,
occurrences; an index out of range falls back to the first occurrence).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

END = ("E",)


# Characters that would need escaping inside a JSON string.
def quotable(char: str) -> bool:
    return char not in '"\\' and ord(char) >= 0x20


class SpanAutomaton:
    """The grammar for one judged text. States are hashable tuples:

    - `("L", node, typed, count)`: inside literal node `node` (alternatives in
      `self.nodes[node]`), `typed` characters of it written, `count` errors closed;
    - `("Q", length, ends, count)`: inside a quote of `length` characters whose
      possible end positions in the text are `ends`;
    - `("D", count)`: the occurrence digit is next;
    - `END`: the JSON is complete.
    """

    def __init__(
        self,
        text: str,
        *,
        severities: Sequence[str],
        categories: Sequence[str] = (),
        max_errors: int = 16,
        single_chars: set[str] | None = None,
        cost: Callable[[str], int] | None = None,
    ) -> None:
        self.text = text
        # Tokens needed to write a literal string: its length by default (one token per
        # character), or fewer where the vocabulary has longer pieces of it (`cost`).
        self.cost = cost or len
        self.max_errors = max_errors
        # A quote can start only where a quotable character that is a token of its own
        # stands (so the shortest continuation always exists); no such place: no errors.
        starts = [p for p, c in enumerate(text) if quotable(c) and (single_chars is None or c in single_chars)]
        self.starts = tuple(starts)
        after_severity = "cat" if categories else "close"
        self.nodes: dict[str, list[tuple[str, Any]]] = {
            "open": [('{"errors":[', "list")],
            "list": [("]}", END)] + ([('{"text":"', "Q")] if starts else []),
            "occ": [(',"occurrence":', "D")],
            "sev": [(',"severity":"', "sevv")],
            "sevv": [(f'{s}"', after_severity) for s in severities],
            "cat": [(',"category":"', "catv")],
            "catv": [(f'{c}"', "close") for c in categories],
            "close": [("}", "more")],
            "more": [("]}", END)] + ([(',{"text":"', "Q")] if starts else []),
        }
        cost = self.cost
        self._min: dict[str, int] = {}
        self._min["more"] = cost("]}")
        self._min["close"] = cost("}") + self._min["more"]
        self._min["catv"] = min((cost(s) for s, _ in self.nodes["catv"]), default=0) + self._min["close"]
        self._min["cat"] = cost(self.nodes["cat"][0][0]) + self._min["catv"]
        self._min["sevv"] = min(cost(s) for s, _ in self.nodes["sevv"]) + self._min[after_severity]
        self._min["sev"] = cost(self.nodes["sev"][0][0]) + self._min["sevv"]
        self._min["D"] = 1 + self._min["sev"]
        self._min["occ"] = cost(self.nodes["occ"][0][0]) + self._min["D"]
        # From inside a quote: at least one character, the closing quote, then the rest.
        self._min["Q"] = 1 + 1 + self._min["occ"]
        self._min["list"] = cost("]}")
        self._min["open"] = cost(self.nodes["open"][0][0]) + self._min["list"]

    # ---- states ------------------------------------------------------------
    def start(self) -> tuple:
        return ("L", "open", "", 0)

    def _enter(self, target: Any, count: int) -> tuple:
        if target is END:
            return END
        if target == "Q":
            return ("Q", 0, self.starts, count)
        if target == "D":
            return ("D", count)
        return ("L", target, "", count + (1 if target == "more" else 0))

    def _alternatives(self, node: str, count: int) -> list[tuple[str, Any]]:
        alts = self.nodes[node]
        if node in ("list", "more") and count >= self.max_errors:
            return [a for a in alts if a[1] is END]
        return alts

    def feed_char(self, state: tuple, char: str) -> tuple | None:
        """The state after `char`, or None if the grammar does not allow it."""
        kind = state[0]
        if kind == "E":
            return None
        if kind == "D":
            return ("L", "sev", "", state[1]) if "0" <= char <= "9" else None
        if kind == "Q":
            _, length, ends, count = state
            if char == '"':
                return ("L", "occ", "", count) if length else None
            if not quotable(char):
                return None
            text = self.text
            moved = tuple(p + 1 for p in ends if p < len(text) and text[p] == char)
            return ("Q", length + 1, moved, count) if moved else None
        _, node, typed, count = state
        typed += char
        for alt, target in self._alternatives(node, count):
            if alt == typed:
                return self._enter(target, count)
            if alt.startswith(typed):
                return ("L", node, typed, count)
        return None

    def feed(self, state: tuple, string: str) -> tuple | None:
        for char in string:
            state = self.feed_char(state, char)
            if state is None:
                return None
        return state

    def closing_length(self, state: tuple) -> int:
        """Tokens on the shortest way from `state` to the end of the JSON (characters,
        unless `cost` says how many tokens a literal string takes)."""
        kind = state[0]
        if kind == "E":
            return 0
        if kind == "D":
            return self._min["D"]
        if kind == "Q":
            return (0 if state[1] else 1) + 1 + self._min["occ"]
        _, node, typed, count = state
        best = None
        for alt, target in self._alternatives(node, count):
            if alt.startswith(typed):
                rest = self.cost(alt[len(typed) :]) + self._target_min(target)
                best = rest if best is None else min(best, rest)
        return best if best is not None else 10**9

    def _target_min(self, target: Any) -> int:
        if target is END:
            return 0
        return self._min[target]

    def expected_chars(self, state: tuple) -> set[str] | None:
        """First characters a literal or digit state accepts (None inside a quote: many)."""
        kind = state[0]
        if kind == "E":
            return set()
        if kind == "D":
            return set("0123456789")
        if kind == "Q":
            return None
        _, node, typed, count = state
        return {alt[len(typed)] for alt, _ in self._alternatives(node, count) if alt.startswith(typed)}

    def grammar_chars(self) -> set[str]:
        """Every character of the literal parts: each must be a token of its own."""
        chars = set("0123456789")
        for alts in self.nodes.values():
            for alt, _ in alts:
                chars.update(alt)
        return chars


def parse_answer(raw: str) -> list[dict[str, Any]]:
    """The errors of a constrained answer (json.loads; raises ValueError if it does not parse)."""
    value = json.loads(raw)
    if not isinstance(value, dict) or not isinstance(value.get("errors"), list):
        raise ValueError("the answer is not an object with an errors list")
    return value["errors"]


def occurrences(text: str, quote: str) -> list[int]:
    """Start offsets of every occurrence of `quote`, overlapping ones included."""
    found, start = [], 0
    while quote:
        pos = text.find(quote, start)
        if pos < 0:
            break
        found.append(pos)
        start = pos + 1
    return found


def resolve_spans(text: str, errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """[{start, end, severity, category?, text}] in the order the judge wrote them;
    a quote not found in `text` (impossible under the constraint) is left out."""
    spans = []
    for error in errors:
        quote = str(error.get("text", ""))
        places = occurrences(text, quote)
        if not places:
            continue
        index = error.get("occurrence", 0)
        start = places[index] if isinstance(index, int) and 0 <= index < len(places) else places[0]
        span = {"start": start, "end": start + len(quote), "severity": error.get("severity")}
        if error.get("category") is not None:
            span["category"] = error["category"]
        span["text"] = quote
        spans.append(span)
    return spans
