"""Model instances from hand-written SQL, for the two requests annotators make all day.

Fetching a unit and submitting one are most of the workbench's traffic, and
on them building and compiling ORM querysets (joins, subqueries, locks) cost
more CPU than PostgreSQL spent answering. Those few queries are written once
as SQL strings instead; these helpers list a model's columns and turn a slice
of a result row back into an instance, through the fields' own converters
(JSON text to Python), exactly as the ORM would.
"""
from __future__ import annotations

import functools

from django.db import connection
from django.db.models import Model


def q(name: str) -> str:
    return connection.ops.quote_name(name)


def table(model: type[Model]) -> str:
    return q(model._meta.db_table)


@functools.cache
def _fields(model: type[Model]) -> tuple:
    return tuple(model._meta.concrete_fields)


def columns(model: type[Model], alias: str) -> str:
    """`alias."col", ...` for every concrete field, in `from_row` order."""
    return ", ".join(f"{alias}.{q(f.column)}" for f in _fields(model))


def width(model: type[Model]) -> int:
    return len(_fields(model))


def from_row(model: type[Model], row, start: int = 0):
    """The instance whose columns (as listed by `columns`) begin at `row[start]`,
    or None when its primary key is NULL (the far side of a LEFT JOIN)."""
    fields = _fields(model)
    values = list(row[start:start + len(fields)])
    if values[[f.primary_key for f in fields].index(True)] is None:
        return None
    for i, field in enumerate(fields):
        if values[i] is not None and hasattr(field, "from_db_value"):
            values[i] = field.from_db_value(values[i], None, connection)
    return model.from_db(connection.alias, [f.attname for f in fields], values)
