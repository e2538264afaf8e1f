"""The test database is a copy of the migrated template (tests/db_template.py)."""

import os

from django.db import connection
from django.db.migrations.loader import MigrationLoader

from tests.db_template import MAX_NAME, PART_SUFFIX, migrations_digest, template_name


def test_the_test_database_is_a_fully_migrated_copy_of_the_template_of_these_migrations(db):
    loader = MigrationLoader(connection, ignore_no_migrations=True)
    assert set(loader.disk_migrations) <= set(loader.applied_migrations)
    template = template_name(
        connection.settings_dict["NAME"], os.environ.get("PYTEST_XDIST_WORKER"), migrations_digest()
    )
    with connection.cursor() as cursor:
        # Never connected to (a copy needs the template without sessions): its existence is what is checked.
        cursor.execute("SELECT datname FROM pg_database WHERE datname = %s", [template])
        assert cursor.fetchall() == [(template,)]


def test_one_template_per_test_database_name_and_digest_whatever_the_xdist_process():
    assert template_name("test_x_gw3", "gw3", "0123456789ab") == "test_x_tpl_0123456789ab"
    assert template_name("test_x", None, "0123456789ab") == "test_x_tpl_0123456789ab"
    # A name that merely ends like a process's keeps its ending when there is no such process.
    assert template_name("test_x_gw3", None, "0123456789ab") == "test_x_gw3_tpl_0123456789ab"
    long = template_name("test_" + "n" * 80, None, "0123456789ab")
    assert long.endswith("_tpl_0123456789ab") and len(long + PART_SUFFIX) == MAX_NAME
