"""The submit body's hand check (`_submit_body_plain`) against the serializer it stands in for:
for every body it accepts, the result equals `UnitSubmitApi.InputSerializer`'s validated data; every
body the serializer refuses, it leaves to the serializer (None), so refusals keep its wording."""

import random

from annotations.apis.campaigns import UnitSubmitApi, _submit_body_plain

ANSWER = {"criterion": "fluency", "output": "AB12CD34EF56GH78", "score": 4}
VALUES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    5,
    2**31 - 1,
    2**31,
    2**63 - 1,
    2**63,
    1.0,
    1.5,
    "",
    "7",
    "x" * 64,
    "x" * 65,
    "true",
    [],
    {},
    [1],
    ["a"],
    [ANSWER],
    {"a": 1},
]


def _serializer(body):
    serializer = UnitSubmitApi.InputSerializer(data=body)
    return serializer.validated_data if serializer.is_valid() else None


def _bodies():
    rng = random.Random(25)
    yield {"judgements": [ANSWER], "shown_order": ["AB12CD34EF56GH78"], "time_spent_ms": 1200, "next": True}
    yield {"judgements": [ANSWER, {**ANSWER, "spans": [{"start": 0, "end": 2, "severity": "minor"}]}]}
    yield {"judgements": [ANSWER] * 500, "shown_order": list(range(1, 101)), "extra": 1}
    yield {"judgements": [ANSWER] * 501}
    yield {"judgements": []}
    yield {"shown_order": [1]}
    yield [ANSWER]
    for _ in range(3000):
        body = {"judgements": [ANSWER]}
        for key in rng.sample(["judgements", "shown_order", "time_spent_ms", "next"], rng.randint(1, 3)):
            value = rng.choice(VALUES)
            if key == "shown_order" and rng.random() < 0.5:
                value = [rng.choice(VALUES) for _ in range(rng.randint(0, 3))]
            if key == "judgements" and rng.random() < 0.5:
                value = [rng.choice([ANSWER, {}, {"x": None}, *VALUES]) for _ in range(rng.randint(0, 3))]
            body[key] = value
        yield body


def test_the_hand_check_accepts_only_what_the_serializer_accepts_and_gives_the_same_data():
    accepted = refused = 0
    for body in _bodies():
        plain, reference = _submit_body_plain(body), _serializer(body)
        if plain is None:
            refused += 1
            continue
        accepted += 1
        assert reference is not None, body
        assert plain == dict(reference), body
    # Both kinds are exercised: a check that accepted nothing (or everything) could not fail here.
    assert accepted > 100 and refused > 100
