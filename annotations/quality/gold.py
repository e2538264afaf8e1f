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

from collections.abc import Mapping

from django.core.exceptions import ValidationError

from workbench.exceptions import DomainError

SCORE_KEYS = {"min", "max"}


class InvalidExpectation(DomainError, ValueError):
    pass


def _protocol(name: str):
    from annotations.protocols import registry  # lazy: protocols load the models; this pure module does not

    try:
        return registry.get(name)
    except KeyError:
        raise InvalidExpectation(f"unknown protocol {name!r}") from None


def expectation_clean(campaign, expected, *, output_ids: list[int], texts: Mapping[int, str] | None = None) -> dict:
    """Check an expected answer for a unit of `campaign` showing `output_ids` (`texts`: their
    texts, for ESA span offsets); returns it keyed by criterion (``"*"`` kept). Raises
    `InvalidExpectation`, `criterion: reason`.

    What an expectation shares with an answer (the criterion, scores on its scale, best and
    worst, span offsets) is checked by the protocol's own rules, with their messages.
    """
    protocol = _protocol(campaign.protocol)
    keys = protocol.gold_expected_keys
    if not isinstance(expected, Mapping) or not expected:
        raise InvalidExpectation('the expected answer must be an object keyed by criterion (or "*")')
    clean = {}
    for criterion, spec in expected.items():
        try:
            clean[criterion] = _spec_clean(protocol, campaign, criterion, spec, keys, output_ids, texts)
        except ValidationError as exc:
            raise InvalidExpectation(f"{criterion}: {exc.messages[0]}") from None
    return clean


def _spec_clean(protocol, campaign, criterion, spec, keys, output_ids, texts) -> dict:
    if criterion != "*":
        try:
            protocol.check_criterion(criterion, campaign=campaign)
        except ValidationError as exc:
            raise InvalidExpectation(exc.messages[0]) from None
    if not isinstance(spec, Mapping) or not spec:
        raise InvalidExpectation(f"{criterion}: the expectation must be a non-empty object")
    unknown = set(spec) - keys
    if unknown:
        raise InvalidExpectation(
            f"{criterion}: unknown key {', '.join(sorted(map(repr, unknown)))} for a "
            f"{protocol.name} unit (expected {', '.join(sorted(keys))})"
        )
    spec = dict(spec)
    for bound in sorted(SCORE_KEYS & set(spec)):
        try:
            for c in campaign.criteria if criterion == "*" else [criterion]:
                spec[bound] = protocol.check_expected_bound(spec[bound], campaign=campaign, criterion=c)
        except ValidationError as exc:
            raise InvalidExpectation(f"{criterion}: {bound}: {exc.messages[0]}") from None
    if "min" in spec and "max" in spec and spec["min"] > spec["max"]:
        raise InvalidExpectation(f"{criterion}: min is above max")
    # An expected winner names an output (not a side: the sides are shuffled per annotator).
    if "winner" in spec and spec["winner"] != "tie" and spec["winner"] not in output_ids:
        raise InvalidExpectation(f'{criterion}: winner must be one of the unit\'s outputs or "tie"')
    if "best" in spec or "worst" in spec:
        protocol.check_choice(spec.get("best"), spec.get("worst"), output_ids)
    if "spans" in spec:
        spans = spec["spans"]
        if not isinstance(spans, list):
            raise InvalidExpectation(f'{criterion}: spans must be a list of {{"start", "end"}} character offsets')
        # The offsets are into the output's text; a unit of several outputs (cESA) expects them in
        # each output's answer, so they must fit the shortest text.
        known = [(texts or {}).get(o) for o in output_ids]
        text = min(known, key=len) if known and None not in known else None
        for index, span in enumerate(spans, start=1):
            if not isinstance(span, Mapping):
                raise InvalidExpectation(f"{criterion}: span {index} must be an object")
            protocol.check_span_offsets(index, span.get("start"), span.get("end"), text)
        spec["spans"] = [{"start": s["start"], "end": s["end"]} for s in spans]
    if "missing" in spec and not isinstance(spec["missing"], bool):
        raise InvalidExpectation(f"{criterion}: missing must be true or false")
    return spec


def expectation_for(expected: Mapping, criterion: str) -> Mapping | None:
    return expected.get(criterion) or expected.get("*")


def gold_check(protocol: str, spec: Mapping, answer: Mapping) -> list[str]:
    """What is wrong with `answer` against `spec` (an empty list: it passed): the protocol's rules
    (`Protocol.gold_problems`)."""
    return _protocol(protocol).gold_problems(spec, answer)
