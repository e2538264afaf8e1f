"""Lines that Python's json accepts but the database or the importer cannot take.

Before the strict reader each of these gave a 500 on the API and the upload
form and a traceback from the commands (RecursionError, jsonb refusing
Infinity, psycopg refusing a lone surrogate, float() overflowing) or, for
duplicate keys, silently kept the last value. Shared by the service, form,
API and command tests; each maps to the words its line error must contain.
"""

GOOD_LINE = b'{"item": "ok-1", "source": "fine", "outputs": {"A": "a"}}'

DEEP = "[" * 5000 + "]" * 5000

DATASET_LINES: dict[str, tuple[bytes, str]] = {
    "deep meta": (('{"item": "x", "meta": {"v": ' + DEEP + "}}").encode(), "levels deep"),
    "meta 1e309": (b'{"item": "x", "meta": {"v": 1e309}}', "1e309 is out of range"),
    "meta 400 digits": (b'{"item": "x", "meta": {"v": ' + b"7" * 400 + b"}}", "is out of range"),
    "surrogate in source": (b'{"item": "x", "source": "a\\ud800b"}', "lone surrogate"),
    "surrogate in meta key": (b'{"item": "x", "meta": {"\\udfff": 1}}', "lone surrogate"),
    "duplicate key": (b'{"item": "n1", "item": "n9", "source": "s"}', "duplicate key 'item'"),
}

CSV_META_1E999 = b'item,meta\nx,"{""v"": 1e999}"\n'

JUDGEMENT_LINES: dict[str, tuple[bytes, str]] = {
    "deep": (
        (
            '{"item": "i1", "system": "A", "annotator": "w", "criterion": "fluency", "score": 3, "x": ' + DEEP + "}"
        ).encode(),
        "levels deep",
    ),
    "score 400 digits": (
        b'{"item": "i1", "system": "A", "annotator": "w", "criterion": "fluency", "score": ' + b"9" * 400 + b"}",
        "is out of range",
    ),
    "surrogate annotator": (
        b'{"item": "i1", "system": "A", "annotator": "w\\ud800", "criterion": "fluency", "score": 3}',
        "lone surrogate",
    ),
    "duplicate key": (
        b'{"item": "i1", "system": "A", "annotator": "w", "annotator": "v", "criterion": "fluency", "score": 3}',
        "duplicate key 'annotator'",
    ),
}
