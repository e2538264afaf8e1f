"""Writing a chunk's scores: COPY into a temporary table, then one
INSERT ... ON CONFLICT (run, output) DO UPDATE, the same idempotent upsert as
`bulk_create(update_conflicts=True)` without compiling and quoting thousands
of parameters (which cost more than scoring chrF)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection

from metrics.models import OutputScore
from metrics.scorers.base import SegmentResult
from metrics.services.common import jsonable

_LOAD = "metrics_score_load"
# One encoder for every row: json.dumps with options builds a new one per call.
_STRICT = json.JSONEncoder(allow_nan=False)


def json_text(value: Any) -> str | None:
    """`value` as JSON text, NaN/inf as null (what `jsonable` gives), None as SQL NULL.
    The C encoder first; `jsonable` only for NaN, numpy values and the like."""
    if value is None:
        return None
    if not value and type(value) is dict:
        return "{}"
    try:
        return _STRICT.encode(value)
    except (TypeError, ValueError):
        value = jsonable(value)
        return None if value is None else json.dumps(value)


def score_value(value: Any) -> float | None:
    value = jsonable(value)
    return None if value is None else float(value)


def scores_upsert(*, run_id: int, output_ids: Sequence[int], segments: Sequence[SegmentResult]) -> None:
    """Store (or overwrite) the score of each output; call inside a transaction."""
    table = OutputScore._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {_LOAD} "
            "(output_id bigint, score double precision, extra jsonb, stats jsonb) ON COMMIT DELETE ROWS"
        )
        cursor.execute(f"TRUNCATE {_LOAD}")  # rows of an earlier chunk in the same transaction (--sync in tests)
        with cursor.cursor.copy(f"COPY {_LOAD} (output_id, score, extra, stats) FROM STDIN") as copy:
            for oid, seg in zip(output_ids, segments):
                copy.write_row((oid, score_value(seg.score), json_text(seg.extra) or "{}", json_text(seg.stats)))
        cursor.execute(
            f"INSERT INTO {table} (run_id, output_id, score, extra, stats) "
            f"SELECT %s, output_id, score, extra, stats FROM {_LOAD} "
            "ON CONFLICT (run_id, output_id) DO UPDATE "
            "SET score = EXCLUDED.score, extra = EXCLUDED.extra, stats = EXCLUDED.stats",
            [run_id],
        )
