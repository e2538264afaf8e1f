"""The end of a transactional test (`transaction=True`, `transactional_db`, the live server, the
Celery worker fixtures): every table emptied by DELETE, not Django's TRUNCATE.

Django's flush TRUNCATEs every table (about 60 here) and then sends `post_migrate`, which writes
the content types and permissions back. TRUNCATE gives each table and each of its indexes a new
file, whatever the table holds: measured on the 2-core machine (load 9-12), 2.2-2.8 s a flush,
against 20-35 ms for DELETE of all but those two tables in one round trip (figures in
docs/how-to/testing.md). The tables are all but empty after a test, so DELETE has little to do.

What stays the same: every table a model owns is empty afterwards but `django_content_type` and
`auth_permission`, which hold exactly what `post_migrate` (the only receivers: contenttypes' and
auth's) would have written back, ids included now; sequences are not reset (nor were they).
DELETE fires triggers (the unit counters' of migration 0027) and foreign-key checks, which have
nothing to protect when every table goes: `session_replication_role = replica` turns both off for
this one transaction, as `tests/browser/conftest.py`'s snapshot does. That needs a superuser (the
tests' `postgres`); for any other role, and for the cases Django treats apart (`available_apps`,
serialized rollback), Django's own flush runs as before.
"""

from django.db import connections, transaction
from django.test import TransactionTestCase

# What `post_migrate` writes back after a flush; kept rather than emptied and written again.
KEPT = frozenset({"django_content_type", "auth_permission"})

_django_teardown = TransactionTestCase._fixture_teardown
_superuser: dict[str, bool] = {}


def _may_skip_triggers(connection) -> bool:
    key = connection.settings_dict["USER"] or ""
    if key not in _superuser:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('is_superuser') = 'on'")
            _superuser[key] = cursor.fetchone()[0]
    return _superuser[key]


def empty_tables(using: str = "default") -> bool:
    """Empty every table of the models but KEPT; False (and nothing done) where the role may not
    turn triggers off."""
    connection = connections[using]
    if connection.vendor != "postgresql" or not _may_skip_triggers(connection):
        return False
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    sql = "".join(f"DELETE FROM {connection.ops.quote_name(table)};" for table in sorted(tables) if table not in KEPT)
    with transaction.atomic(using=using):
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica;" + sql)
    return True


def _fixture_teardown(self) -> None:
    if self.available_apps is not None or self.serialized_rollback:
        return _django_teardown(self)
    for name in self._databases_names(include_mirrors=False):
        if not empty_tables(name):
            return _django_teardown(self)


def install() -> None:
    """Called once from tests/conftest.py: every TransactionTestCase pytest-django makes ends this way."""
    TransactionTestCase._fixture_teardown = _fixture_teardown
