"""Rows built once for a module's tests, the way Django's `TestCase.setUpTestData` keeps them for a class.

`kept_for_module(django_db_blocker)` opens a transaction that stays open while the module's tests run and is
rolled back after the last one. Each test's own transaction (pytest-django's `db`) is then a savepoint inside
it, rolled back when the test ends, so a test sees the rows exactly as built, whatever an earlier test
wrote. The fixture that builds the rows hands each test a deep copy of the Python objects (as
`setUpTestData` does), so a test that changes an instance in memory does not leak it either.

Only for tests on `db`: a transactional test (`transaction=True`, the live server, threads with their own
connections) would not see rows that were never committed, and its flush would empty the tables under the
module's transaction; `kept_rows` refuses it.
"""

import copy
from contextlib import contextmanager

import pytest


@contextmanager
def kept_for_module(django_db_blocker):
    from django.db import transaction

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        # Marked as a test case's own, as Django marks TestCase's: a `durable=True` block inside stays allowed.
        outer._from_testcase = True
        outer.__enter__()
        try:
            yield
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def kept_rows(request, built):
    """A test's deep copy of the module's `built` objects; fails a transactional test that asks for them."""
    marker = request.node.get_closest_marker("django_db")
    transactional = (marker is not None and marker.kwargs.get("transaction")) or any(
        name in request.fixturenames for name in ("transactional_db", "live_server")
    )
    if transactional:
        pytest.fail("module-kept rows are uncommitted: a transactional test cannot use them (tests/module_rows.py)")
    return copy.deepcopy(built)
