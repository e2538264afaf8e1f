"""Gold (tutorial) units: an expected answer and how an answer is checked against it.

An expected answer is a JSON object per criterion (key ``"*"`` for every
criterion of the campaign):

- rating, RankME and ESA scores: ``{"min": 70, "max": 100}`` (either bound may
  be left out);
- pairwise: ``{"winner": OUTPUT_ID}`` or ``{"winner": "tie"}``;
- best-worst: ``{"best": OUTPUT_ID, "worst": OUTPUT_ID}`` (either may be left out);
- ESA spans: ``{"spans": [{"start": 4, "end": 11}], "min": 0, "max": 60}`` —
  every expected span must overlap one of the annotator's spans (of any
  severity); ``{"missing": true}`` expects a "missing content" marker.

Answers are given in the same terms: ``{"score": x}``, ``{"winner": id|"tie"}``,
``{"best": id, "worst": id}``, ``{"score": x, "spans": [...]}``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from workbench.exceptions import DomainError

SCORE_KEYS = {"min", "max"}
EXPECTED_KEYS = {"rating": SCORE_KEYS, "esa": SCORE_KEYS | {"spans", "missing"},
                 "pairwise": {"winner"}, "bws": {"best", "worst"}}


class InvalidExpectation(DomainError, ValueError):
    pass


def _kind(protocol: str) -> str:
    return {"likert": "rating", "rankme": "rating"}.get(protocol, protocol)


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidExpectation(f"{what} must be a number, got {value!r}")
    return float(value)


def expectation_clean(protocol: str, expected, *, criteria: list[str], output_ids: list[int]) -> dict:
    """Check an expected answer for a unit of `protocol` showing `output_ids`;
    returns it keyed by criterion (``"*"`` kept). Raises `InvalidExpectation`."""
    kind = _kind(protocol)
    if kind not in EXPECTED_KEYS:
        raise InvalidExpectation(f"unknown protocol {protocol!r}")
    if not isinstance(expected, Mapping) or not expected:
        raise InvalidExpectation("the expected answer must be an object keyed by criterion (or \"*\")")
    clean = {}
    for criterion, spec in expected.items():
        if criterion != "*" and criterion not in criteria:
            raise InvalidExpectation(f"unknown criterion {criterion!r} (campaign has {', '.join(criteria)})")
        if not isinstance(spec, Mapping) or not spec:
            raise InvalidExpectation(f"{criterion}: the expectation must be a non-empty object")
        unknown = set(spec) - EXPECTED_KEYS[kind]
        if unknown:
            raise InvalidExpectation(f"{criterion}: unknown key {', '.join(sorted(map(repr, unknown)))} for a "
                                     f"{protocol} unit (expected {', '.join(sorted(EXPECTED_KEYS[kind]))})")
        spec = dict(spec)
        for bound in SCORE_KEYS & set(spec):
            spec[bound] = _number(spec[bound], f"{criterion}: {bound}")
        if "min" in spec and "max" in spec and spec["min"] > spec["max"]:
            raise InvalidExpectation(f"{criterion}: min is above max")
        if "winner" in spec and spec["winner"] != "tie" and spec["winner"] not in output_ids:
            raise InvalidExpectation(f"{criterion}: winner must be one of the unit's outputs or \"tie\"")
        for key in ("best", "worst"):
            if key in spec and spec[key] not in output_ids:
                raise InvalidExpectation(f"{criterion}: {key} must be one of the unit's outputs")
        if spec.get("best") is not None and spec.get("best") == spec.get("worst"):
            raise InvalidExpectation(f"{criterion}: best and worst must differ")
        if "spans" in spec:
            spans = spec["spans"]
            if not isinstance(spans, list) or not all(
                isinstance(s, Mapping) and isinstance(s.get("start"), int) and isinstance(s.get("end"), int)
                and 0 <= s["start"] < s["end"] for s in spans
            ):
                raise InvalidExpectation(f"{criterion}: spans must be a list of {{\"start\", \"end\"}} "
                                         "character offsets with start < end")
            spec["spans"] = [{"start": s["start"], "end": s["end"]} for s in spans]
        if "missing" in spec and not isinstance(spec["missing"], bool):
            raise InvalidExpectation(f"{criterion}: missing must be true or false")
        clean[criterion] = spec
    return clean


def expectation_for(expected: Mapping, criterion: str) -> Mapping | None:
    return expected.get(criterion) or expected.get("*")


def gold_check(protocol: str, spec: Mapping, answer: Mapping) -> list[str]:
    """What is wrong with `answer` against `spec` (an empty list: it passed)."""
    kind = _kind(protocol)
    problems = []
    if "min" in spec or "max" in spec:
        score = answer.get("score")
        low, high = spec.get("min", -math.inf), spec.get("max", math.inf)
        if score is None or not low <= score <= high:
            bounds = (f"{low:g} to {high:g}" if "min" in spec and "max" in spec
                      else f"at least {low:g}" if "min" in spec else f"at most {high:g}")
            problems.append(f"the score is outside the expected range ({bounds})")
    if kind == "pairwise" and "winner" in spec and answer.get("winner") != spec["winner"]:
        problems.append("another output was expected to win" if spec["winner"] != "tie" else "a tie was expected")
    if kind == "bws":
        if "best" in spec and answer.get("best") != spec["best"]:
            problems.append("another output was expected as the best")
        if "worst" in spec and answer.get("worst") != spec["worst"]:
            problems.append("another output was expected as the worst")
    if kind == "esa":
        marked = [s for s in answer.get("spans") or [] if not s.get("missing")]
        for expected in spec.get("spans", []):
            if not any(s["start"] < expected["end"] and expected["start"] < s["end"] for s in marked):
                problems.append(f"an error at characters {expected['start']}-{expected['end']} was not marked")
        if spec.get("missing") and not any(s.get("missing") for s in answer.get("spans") or []):
            problems.append("missing content was expected to be marked")
    return problems
