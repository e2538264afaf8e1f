"""Strict JSON: what Python's json accepts but the workbench must refuse, with a message."""

import json

import pytest

from workbench import strictjson

DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    "text, message",
    [
        (DEEP, "nested 5000 levels deep"),
        ('{"a": ' + "[" * 65 + "]" * 65 + "}", "nested 66 levels deep"),
        ('{"x": 1e309}', "out of range"),
        ('{"x": -1e309}', "out of range"),
        ('{"score": ' + "9" * 400 + "}", "out of range"),
        ('{"x": ' + "1" * 5000 + "}", "out of range"),
        ('{"x": NaN}', "NaN is not allowed"),
        ('{"x": Infinity}', "Infinity is not allowed"),
        ('{"item": "n1", "item": "n9"}', "duplicate key 'item'"),
        ('{"meta": {"a": 1, "a": 2}}', "duplicate key 'a'"),
        ('{"source": "\\ud800"}', "lone surrogate \\ud800"),
        ('{"meta": {"\\udfff": 1}}', "lone surrogate \\udfff"),
        ('["ok", ["\\udc00x"]]', "lone surrogate \\udc00"),
    ],
)
def test_refused_with_a_clear_message(text, message):
    with pytest.raises(ValueError) as exc:
        strictjson.loads(text)
    assert message in str(exc.value)
    # Python's own json takes all but the deepest nesting without complaint (or crashes on it).
    if text is not DEEP and "NaN" not in text and "Infinity" not in text and "1" * 5000 not in text:
        json.loads(text)


def test_python_json_crashes_where_strict_json_answers():
    with pytest.raises(RecursionError):
        json.loads(DEEP)


@pytest.mark.parametrize(
    "text",
    [
        '{"item": "e2e-1", "data": [["Blue Spice", "eatType", "pub"]], "meta": {"k": [1, 2.5, null, true]}}',
        '{"emoji": "\\ud83d\\ude00", "escaped": "\\\\ud800 is text"}',  # a valid pair; an escaped backslash
        '{"big": 1' + "0" * 308 + ', "small": 1e-320, "neg": -1.5e308}',
        '{"s": "' + "[" * 500 + '"}',  # brackets inside a string are text
        "[" * 64 + "]" * 64,
    ],
)
def test_accepted_as_python_json_reads_it(text):
    assert strictjson.loads(text) == json.loads(text)


def test_depth_counts_structure_not_strings():
    assert strictjson.nesting_depth('[[1, "]]]]"], [[[{}]]]]') == 5
    assert strictjson.nesting_depth('{"a": "{{{{"}') == 1
