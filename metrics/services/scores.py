"""Writing a chunk's scores with COPY, without compiling and quoting thousands
of parameters as `bulk_create` does (which cost more than scoring chrF); an
idempotent INSERT ... ON CONFLICT (run, output) DO UPDATE where scores of the
chunk are already stored."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, transaction
from psycopg.errors import UniqueViolation

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


def _row(output_id: int, seg: SegmentResult) -> tuple:
    return output_id, score_value(seg.score), json_text(seg.extra) or "{}", json_text(seg.stats)


def scores_store(
    *, run_id: int, output_ids: Sequence[int], batches: Iterable[Sequence[SegmentResult]]
) -> list[SegmentResult]:
    """Store the segment results of `output_ids`, given in consecutive batches
    (often a generator that scores them), and return them all; call inside a
    transaction.

    Each batch is sent to PostgreSQL as soon as it arrives, in one COPY straight
    into the table, so the database stores a batch while the next one is scored
    (on the other core). A chunk's scores are committed together with the chunk
    turning done, so a chunk being scored has none stored; only when a concurrent
    delivery of the same chunk committed them first does the unique (run, output)
    constraint refuse the COPY, and they are upserted instead (the same values;
    the caller then finds the chunk already done)."""
    segments: list[SegmentResult] = []
    table = OutputScore._meta.db_table
    batches = iter(batches)
    try:
        with transaction.atomic(), connection.cursor() as cursor:  # a savepoint: the upsert goes on after a refusal
            with cursor.cursor.copy(f"COPY {table} (run_id, output_id, score, extra, stats) FROM STDIN") as copy:
                for batch in batches:
                    start = len(segments)
                    segments.extend(batch)
                    for oid, seg in zip(output_ids[start:], batch):
                        copy.write_row((run_id, *_row(oid, seg)))
        return segments
    except UniqueViolation:  # raised by psycopg's COPY itself, not wrapped by Django
        pass
    for batch in batches:  # the refusal may come before the last batch was scored
        segments.extend(batch)
    _upsert(run_id=run_id, rows=[_row(oid, seg) for oid, seg in zip(output_ids, segments)])
    return segments


def _upsert(*, run_id: int, rows: list[tuple]) -> None:
    """COPY into a temporary table, then one INSERT ... ON CONFLICT DO UPDATE."""
    table = OutputScore._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {_LOAD} "
            "(output_id bigint, score double precision, extra jsonb, stats jsonb) ON COMMIT DELETE ROWS"
        )
        cursor.execute(f"TRUNCATE {_LOAD}")  # rows of an earlier chunk in the same transaction (--sync in tests)
        with cursor.cursor.copy(f"COPY {_LOAD} (output_id, score, extra, stats) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f"INSERT INTO {table} (run_id, output_id, score, extra, stats) "
            f"SELECT %s, output_id, score, extra, stats FROM {_LOAD} "
            "ON CONFLICT (run_id, output_id) DO UPDATE "
            "SET score = EXCLUDED.score, extra = EXCLUDED.extra, stats = EXCLUDED.stats",
            [run_id],
        )
