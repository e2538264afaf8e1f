"""Model instances from hand-written SQL, for the two requests annotators make all day
(and the claim and flip of every metric chunk).

Fetching a unit and submitting one are most of the workbench's traffic, and
on them building and compiling ORM querysets (joins, subqueries, locks) cost
more CPU than PostgreSQL spent answering. Those few queries are written once
as SQL strings instead; these helpers list a model's columns and turn a slice
of a result row back into an instance, through the fields' own converters
(JSON text to Python), exactly as the ORM would.
"""

from __future__ import annotations

import functools

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import Model


def cursor():
    """A cursor for the statements of the annotation requests: on PostgreSQL
    the server binds their parameters and, once a statement has run
    `prepare_threshold` times on the connection (settings), keeps it prepared,
    so it is no longer parsed and planned on every request. Django's own
    cursors bind on the client and never prepare; this one is for fixed
    statement texts with few parameters (the server takes at most 65,535).
    With preparing turned off, or while queries are logged (DEBUG,
    query counts in the tests: Django can only show client-bound SQL), Django's
    cursor."""
    db = connections[DEFAULT_DB_ALIAS]  # the `connection` proxy, looked up once (a thread-local per use)
    if not db.settings_dict["OPTIONS"].get("prepare_threshold") or db.queries_logged:
        return db.cursor()

    db.close_if_health_check_failed()
    db.ensure_connection()
    with db.wrap_database_errors:
        # As connection.cursor() does, with the server-binding class (execute wrappers still apply).
        return db._prepare_cursor(ServerBindingCursor(db.connection))


def q(name: str) -> str:
    return connection.ops.quote_name(name)


@functools.cache
def table(model: type[Model]) -> str:
    return q(model._meta.db_table)


@functools.cache
def _fields(model: type[Model]) -> tuple:
    return tuple(model._meta.concrete_fields)


@functools.cache  # the same few strings on every request: quoting them each time cost ~1 ms a request
def columns(model: type[Model], alias: str) -> str:
    """`alias."col", ...` for every concrete field, in `from_row` order."""
    return ", ".join(f"{alias}.{q(f.column)}" for f in _fields(model))


def width(model: type[Model]) -> int:
    return len(_fields(model))


@functools.cache
def _layout(model: type[Model]) -> tuple[int, tuple[int, ...], list[str]]:
    """Where the primary key is, which fields convert their database value, and the attribute names."""
    fields = _fields(model)
    pk = [f.primary_key for f in fields].index(True)
    converted = tuple(i for i, f in enumerate(fields) if hasattr(f, "from_db_value"))
    return pk, converted, [f.attname for f in fields]


def from_row(model: type[Model], row, start: int = 0):
    """The instance whose columns (as listed by `columns`) begin at `row[start]`,
    or None when its primary key is NULL (the far side of a LEFT JOIN)."""
    fields = _fields(model)
    pk, converted, attnames = _layout(model)
    values = list(row[start : start + len(fields)])
    if values[pk] is None:
        return None
    db = connections[DEFAULT_DB_ALIAS]
    for i in converted:
        if values[i] is not None:
            values[i] = fields[i].from_db_value(values[i], None, db)
    return model.from_db(DEFAULT_DB_ALIAS, attnames, values)


def json_param(model: type[Model], name: str, value):
    """`value` as the query parameter the model's field `name` would send (e.g. JSON)."""
    return model._meta.get_field(name).get_db_prep_save(value, connection)


@functools.cache
def _insert_layout(model: type[Model]) -> tuple[tuple, str]:
    fields = tuple(f for f in _fields(model) if not f.primary_key)
    return fields, ", ".join(q(f.column) for f in fields)


def insert_sql(model: type[Model], instances: list) -> tuple[str, list]:
    """`INSERT INTO ... VALUES (...), ... RETURNING pk` for the instances, and its
    parameters (each field's `pre_save` and database value, as the ORM computes them)."""
    fields, names = _insert_layout(model)
    db = connections[DEFAULT_DB_ALIAS]  # once: each use of the `connection` proxy is a thread-local lookup
    params = [f.get_db_prep_save(f.pre_save(obj, add=True), db) for obj in instances for f in fields]
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return (
        f"INSERT INTO {table(model)} ({names}) VALUES {', '.join([row] * len(instances))} "
        f"RETURNING {q(model._meta.pk.column)}",
        params,
    )


def saved(instances: list, pks) -> None:
    """Mark the instances inserted by `insert_sql` as saved, with their primary keys.
    PostgreSQL returns the rows of a multi-row VALUES in order (bulk_create relies on it too)."""
    for obj, (pk,) in zip(instances, pks):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, connection.alias


def insert(model: type[Model], instances: list) -> None:
    """INSERT the instances in one statement and set their primary keys: what
    `bulk_create` does on PostgreSQL, without building the query through the ORM
    (a unit's 2-15 judgements cost ~1 ms a submit that way). Database errors
    (unique constraints) come up as Django's, as from bulk_create."""
    if not instances:
        return
    sql, params = insert_sql(model, instances)
    # The server binds at most 65,535 parameters: a larger insert binds on the client.
    with cursor() if len(params) <= 65535 else connection.cursor() as c:
        c.execute(sql, params)
        saved(instances, c.fetchall())


def commit_without_flush_wait() -> None:
    """This transaction's commit will not wait for its WAL to reach the disk (`synchronous_commit`
    off for this transaction only; PostgreSQL's own WAL writer flushes it within a few hundred ms).

    For transactions whose loss in a crash of the database server is harmless, on requests where a
    commit's fsync is most of their time: each commit waits for one (6 ms p50 on the 2-core host, and
    far longer while other commits queue for the WAL; a crowd visitor's Start made four, issue 45).
    Visibility is unchanged: other connections see the rows as soon as the commit returns. And any
    later commit that does wait (a hand-out's, a submit's) flushes the WAL up to its own record, so
    everything committed before it in this connection is then on disk too.

    Only in the outermost transaction, which this call then owns (a `SET LOCAL` inside a caller's
    transaction would relax the caller's commit as well): elsewhere it does nothing."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql" or not db.in_atomic_block or len(db.atomic_blocks) != 1:
        return
    with db.cursor() as c:
        c.execute("SET LOCAL synchronous_commit TO OFF")
