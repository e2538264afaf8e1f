"""The test database cloned from a migrated template instead of migrated in every session.

Migrating an empty database takes about 25 s here, and under pytest-xdist every worker process (gwN)
migrated its own. Instead the first session to need it migrates a template database, named after a digest
of every migration file (Django's own included, so an upgrade counts too): `test_<name>_tpl_<digest>`.
Every session then copies it (`CREATE DATABASE test_<name>[_gwN] TEMPLATE ...`, about a second), the serial
run as much as each xdist worker, and a later run with the same migrations finds the template ready.

- Built and cloned under a PostgreSQL advisory lock, so two workers never both migrate, and no clone reads a
  template still being built: it is migrated under a name of its own (`..._part`) and renamed when complete,
  so a run killed half-way leaves nothing a later run would take for a template.
- A changed migration gives another digest, hence another template: a stale one is never cloned. The templates
  of other digests are dropped when a new one is built (one kept per test database name).
- `--reuse-db`, `--nomigrations` and other backends than PostgreSQL take pytest-django's own path.

The fixture replaces pytest-django's `django_db_setup`, which `tests/conftest.py` extends.
"""

import hashlib
import sys
from pathlib import Path

import pytest

TEMPLATE_INFIX = "_tpl_"
PART_SUFFIX = "_part"
# PostgreSQL truncates identifiers to 63 bytes.
MAX_NAME = 63


def migrations_digest() -> str:
    """A digest of every migration file on disk (each app's, Django's too), in a fixed order."""
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, ignore_no_migrations=True)
    digest = hashlib.sha256()
    for key in sorted(loader.disk_migrations):
        digest.update(repr(key).encode())
        digest.update(Path(sys.modules[loader.disk_migrations[key].__module__].__file__).read_bytes())
    return digest.hexdigest()[:12]


def template_name(test_name: str, worker: str | None, digest: str) -> str:
    """`test_x_tpl_<digest>` for the test database `test_x` or, under xdist, `test_x_gwN`."""
    if worker and test_name.endswith(f"_{worker}"):
        test_name = test_name[: -len(worker) - 1]
    tail = f"{TEMPLATE_INFIX}{digest}"
    return test_name[: MAX_NAME - len(tail) - len(PART_SUFFIX)] + tail


def _lock_key(name: str) -> int:
    """A signed 64-bit key for pg_advisory_lock, the same in every process."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _database_exists(cursor, name: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
    return cursor.fetchone() is not None


def _build_template(connection, template: str, verbosity: int) -> None:
    """Migrate a new database the way Django creates a test database, under `<template>_part`, then rename
    it: only a complete one ever has the template's name."""
    from django.conf import settings

    alias, test = connection.alias, connection.settings_dict["TEST"]
    saved_test_name, saved_name = test.get("NAME"), connection.settings_dict["NAME"]
    part = template + PART_SUFFIX
    test["NAME"] = part
    try:
        # autoclobber: drops a `_part` left by a killed build first.
        connection.creation.create_test_db(verbosity=verbosity, autoclobber=True, serialize=False, keepdb=False)
    finally:
        connection.close()  # CREATE DATABASE ... TEMPLATE needs no session on the source
        test["NAME"] = saved_test_name
        connection.settings_dict["NAME"] = saved_name
        settings.DATABASES[alias]["NAME"] = saved_name
    quote = connection.ops.quote_name
    with connection.creation._nodb_cursor() as cursor:
        cursor.execute(f"ALTER DATABASE {quote(part)} RENAME TO {quote(template)}")
        # The templates of other migrations (one per test database name is enough); one in use is left.
        stem = template[: -len(template.rpartition(TEMPLATE_INFIX)[2])]
        cursor.execute("SELECT datname FROM pg_database WHERE datname <> %s", [template])
        for (name,) in cursor.fetchall():
            if name.startswith(stem):
                try:
                    cursor.execute(f"DROP DATABASE {quote(name)}")
                except Exception:  # noqa: BLE001 - in use by another run: its owner drops it later
                    pass


def clone_test_database(connection, worker: str | None, verbosity: int, serialize: bool) -> str:
    """Create this session's test database for `connection` as a copy of the template (built first if
    missing), point the connection at it and return the name the connection had before."""
    from django.conf import settings

    creation, quote = connection.creation, connection.ops.quote_name
    old_name = connection.settings_dict["NAME"]
    test_name = creation._get_test_db_name()
    template = template_name(test_name, worker, migrations_digest())
    # The lock is held by this maintenance connection until it closes; building and cloning use their own.
    with creation._nodb_cursor() as lock:
        lock.execute("SELECT pg_advisory_lock(%s)", [_lock_key(template)])
        if not _database_exists(lock, template):
            _build_template(connection, template, verbosity)
        if verbosity >= 1:
            print(f"Cloning test database {test_name} from {template}...")
        # A database left by a killed session of the same name goes first, as Django's autoclobber does.
        lock.execute(f"DROP DATABASE IF EXISTS {quote(test_name)}")
        lock.execute(f"CREATE DATABASE {quote(test_name)} TEMPLATE {quote(template)}")
        lock.execute("SELECT pg_advisory_unlock(%s)", [_lock_key(template)])
    # What the end of Django's create_test_db does, less the migrate (the template has it).
    connection.close()
    settings.DATABASES[connection.alias]["NAME"] = test_name
    connection.settings_dict["NAME"] = test_name
    if serialize:
        connection._test_serialized_contents = creation.serialize_db_to_string()
    connection.ensure_connection()
    return old_name


@pytest.fixture(scope="session")
def django_db_setup_from_template(
    request,
    django_test_environment,
    django_db_blocker,
    django_db_use_migrations,
    django_db_keepdb,
    django_db_createdb,
    django_db_modify_db_settings,
):
    """pytest-django's `django_db_setup` (same fixtures, same teardown), its test databases cloned from the
    migrated template rather than migrated here."""
    from django.db import connections
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _disable_migrations, _get_databases_for_setup

    verbosity = request.config.option.verbose
    aliases, serialized_aliases = _get_databases_for_setup(request.session.items)
    worker = getattr(request.config, "workerinput", {}).get("workerid")
    cloned = (
        django_db_use_migrations
        and not django_db_keepdb
        and all(connections[alias].vendor == "postgresql" for alias in aliases)
        and not any(connections[alias].settings_dict["TEST"].get("MIRROR") for alias in aliases)
    )
    with django_db_blocker.unblock():
        if cloned:
            db_cfg = [
                (
                    connections[alias],
                    clone_test_database(connections[alias], worker, verbosity, alias in serialized_aliases),
                    True,
                )
                for alias in sorted(aliases)
            ]
        else:  # pytest-django's own set-up
            if not django_db_use_migrations:
                _disable_migrations()
            keepdb = django_db_keepdb and not django_db_createdb
            db_cfg = setup_databases(
                verbosity=verbosity,
                interactive=False,
                aliases=aliases,
                serialized_aliases=serialized_aliases,
                keepdb=keepdb,
            )

    yield

    if not django_db_keepdb:
        with django_db_blocker.unblock():
            try:
                teardown_databases(db_cfg, verbosity=verbosity)
            except Exception as exc:  # noqa: BLE001
                request.node.warn(pytest.PytestWarning(f"Error when trying to teardown test databases: {exc!r}"))
