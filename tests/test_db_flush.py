"""A transactional test's teardown (tests/db_flush.py) leaves the database as Django's own flush
and its `post_migrate` do: every model's table empty, the content types and permissions there."""

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from annotations.models import Unit, UnitCount
from tests.annotations.factories import AssignmentFactory, RatingJudgementFactory
from tests.db_flush import KEPT, empty_tables


def _rows_by_table() -> dict[str, int]:
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    with connection.cursor() as cursor:
        counts = {}
        for table in tables:
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def _content_types_and_permissions() -> tuple[set, set]:
    ContentType.objects.clear_cache()
    types = set(ContentType.objects.values_list("app_label", "model"))
    permissions = set(Permission.objects.values_list("content_type__app_label", "codename"))
    return types, permissions


@pytest.mark.django_db(transaction=True)
def test_emptying_leaves_what_djangos_flush_and_post_migrate_leave():
    RatingJudgementFactory(assignment=AssignmentFactory())  # a unit too: the counters' triggers have rows
    before = _rows_by_table()
    assert before[Unit._meta.db_table] and before[UnitCount._meta.db_table], before  # the test writes them

    assert empty_tables()
    ours = _rows_by_table()
    ours_kept = _content_types_and_permissions()

    call_command("flush", verbosity=0, interactive=False)  # Django's, with post_migrate: the reference
    assert _content_types_and_permissions() == ours_kept
    assert {t: n for t, n in ours.items() if t not in KEPT} == {t: 0 for t in ours if t not in KEPT}
    # post_migrate's rows: one content type per model, its default permissions.
    assert len(ours_kept[0]) == len(apps.get_models()), sorted(ours_kept[0])
    assert ("annotations", "view_campaign") in ours_kept[1]


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_writes_rows_that_the_next_one_does_not_see_part_1():
    RatingJudgementFactory(assignment=AssignmentFactory())


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_writes_rows_that_the_next_one_does_not_see_part_2():
    # Runs right after part 1 (pytest-django orders transactional tests after the others, in file
    # order among themselves): part 1's teardown emptied the tables.
    counts = _rows_by_table()
    assert {t: n for t, n in counts.items() if t not in KEPT and n} == {}
    assert counts["django_content_type"] == len(apps.get_models())
