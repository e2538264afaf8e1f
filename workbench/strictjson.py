"""JSON as the workbench accepts it: what PostgreSQL can store and Python can read safely.

Python's `json` module accepts input that later fails far from where it was
read: nesting thousands of levels deep (a RecursionError), numbers that
overflow a float (`1e309` becomes `inf`, which jsonb refuses; a 400-digit
integer score overflows `float()`), lone UTF-16 surrogates (`"\\ud800"`,
which cannot be encoded for the database), the NUL character (`"\\u0000"`,
which PostgreSQL stores in neither text nor jsonb) and duplicate keys (the last one
silently wins). `loads` refuses all of them with a `ValueError` whose message
says what is wrong, so importers report it as `line N: ...` and the API as a
400. Used by the REST API's parser and by every importer.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate

# Deeper than any real dataset's meta or data (the triples are 2 deep), far
# below Python's recursion limit (~1000).
MAX_DEPTH = 64

# A JSON string literal (unrolled: linear time, no backtracking).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
# An escaped UTF-16 surrogate; json pairs valid ones into one character,
# so only a match makes a walk for lone ones worth doing.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# The escaped NUL character: PostgreSQL stores it in neither text nor jsonb.
_NUL_ESCAPE = re.compile(r"\\u0000")


def loads(text: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH):
    """`json.loads`, refusing deep nesting, duplicate keys, non-finite or
    float-overflowing numbers and lone surrogates (`ValueError` each)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    # Only text with more openers than the limit can nest too deep: skip the scan otherwise.
    if text.count("[") + text.count("{") > max_depth:
        depth = nesting_depth(text)
        if depth > max_depth:
            raise ValueError(f"nested {depth} levels deep; at most {max_depth} levels are accepted")
    value = json.loads(
        text,
        object_pairs_hook=_object,
        parse_constant=_constant,
        parse_float=_float,
        parse_int=_int,
    )
    if _SURROGATE_ESCAPE.search(text) or _NUL_ESCAPE.search(text):
        _check_strings(value)
    return value


def nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in `text` (brackets inside strings do not count)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    return max(0, max(accumulate(1 if c in "[{" else -1 for c in brackets)))


def _object(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"duplicate key {_shown(duplicate)} in one object")
    return obj


def _constant(name: str):
    # NaN and Infinity are not JSON, and PostgreSQL's jsonb cannot store them.
    raise ValueError(f"{name} is not allowed in JSON")


def _float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"number {_short(literal)} is out of range (larger than a 64-bit float)")
    return value


def _int(literal: str) -> int:
    # Past ~1.8e308 (309 digits) a number is no longer a float: scores and
    # JavaScript readers would overflow.
    digits = len(literal.lstrip("-"))
    if digits > 309 or (digits >= 300 and not math.isfinite(float(literal))):
        raise ValueError(f"number {_short(literal)} is out of range (larger than a 64-bit float)")
    return int(literal)


def _check_strings(value) -> None:
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            _check_string(current)
        elif isinstance(current, dict):
            for key, item in current.items():
                _check_string(key)
                stack.append(item)
        elif isinstance(current, list):
            stack.extend(current)


def lone_surrogate(text: str) -> str | None:
    """A problem message if `text` holds a lone surrogate (from a JSON escape or
    an undecodable command-line argument), else None."""
    match = _SURROGATE.search(text)
    if match:
        return f"holds a lone surrogate \\u{ord(match.group()):04x}, which is not a Unicode character"
    return None


def _check_string(text: str) -> None:
    problem = lone_surrogate(text) or (
        "holds the NUL character \\u0000, which cannot be stored" if "\x00" in text else None
    )
    if problem:
        raise ValueError(f"string {_shown(text)} {problem}")


def _short(literal: str) -> str:
    return literal if len(literal) <= 24 else f"{literal[:12]}...{literal[-6:]} ({len(literal)} characters)"


def _shown(text: str) -> str:
    # ascii(): a lone surrogate in a message must not break the message itself.
    return ascii(text if len(text) <= 40 else text[:40] + "...")
