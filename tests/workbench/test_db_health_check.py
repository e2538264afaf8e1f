"""The persistent connections' health check (workbench.db.postgresql): at most once per
WORKBENCH_DB_HEALTH_CHECK_SECONDS on a busy connection, always on one idle longer, and a
connection the server dropped is replaced before a request uses it. Real PostgreSQL; each
test opens its own connection (outside the test's transaction) and plays the request
cycle Django runs: `close_if_unusable_or_obsolete` (request_started), then a query."""

import time

import pytest
from django.db import connection, connections
from django.test.utils import override_settings

from workbench.db.postgresql.base import DatabaseWrapper

pytestmark = pytest.mark.django_db


@pytest.fixture
def own():
    wrapper = connections.create_connection("default")
    checks = []
    usable = wrapper.is_usable

    def counted():
        checks.append(1)
        return usable()

    wrapper.is_usable = counted
    wrapper.ensure_connection()
    yield wrapper, checks
    wrapper.close()


def _request(wrapper) -> int:
    wrapper.close_if_unusable_or_obsolete()  # what request_started runs
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_the_settings_use_this_backend_with_health_checks_on():
    assert isinstance(connections["default"], DatabaseWrapper)
    assert connections["default"].settings_dict["CONN_HEALTH_CHECKS"] is True


@override_settings(WORKBENCH_DB_HEALTH_CHECK_SECONDS=3600)
def test_a_busy_connection_is_not_checked_before_every_request(own):
    wrapper, checks = own
    pids = {_request(wrapper) for _ in range(5)}
    assert checks == [] and len(pids) == 1


@override_settings(WORKBENCH_DB_HEALTH_CHECK_SECONDS=0)
def test_zero_checks_before_every_request_as_django_does(own):
    wrapper, checks = own
    for _ in range(3):
        _request(wrapper)
    assert len(checks) == 3


@override_settings(WORKBENCH_DB_HEALTH_CHECK_SECONDS=3600)
def test_a_connection_idle_past_the_interval_and_dropped_by_the_server_is_replaced(own):
    wrapper, checks = own
    first = _request(wrapper)
    with connection.cursor() as cursor:  # the server drops it (as a restart would)
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    # Idle for longer than the interval (set back rather than waited for).
    wrapper._checked_at = time.monotonic() - 3601
    second = _request(wrapper)
    assert checks == [1] and second != first
