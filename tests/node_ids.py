"""One node id per test, which pytest-xdist needs: it schedules and reports tests by node id, and
`--dist loadfile` keeps one test per id, so tests sharing an id silently do not run.

schemathesis (4.32) names its items `test[GET /api/x/]` but, with pytest 9.2 building an item's id from its
original name and its parametrization (none here), every operation of `tests/annotations/apis/test_fuzz.py`
got the id `...::test_api_never_answers_with_a_server_error`: 64 tests serially, 1 under `-n 2 --dist
loadfile`. Each gets its operation back as its parameters (`...[GET /api/x/]`, the id schemathesis means),
and a collection that still holds two tests with one id stops the run rather than lose tests under xdist.
"""

from collections import Counter

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        label = getattr(item, "operation_label", None)  # schemathesis' items only
        node_id = getattr(item, "_id", None)  # pytest >= 9.2's structured id
        if label and node_id is not None and getattr(node_id, "params", "") is None:
            item._id = node_id.with_params(label)
    shared = sorted(node for node, count in Counter(item.nodeid for item in items).items() if count > 1)
    if shared:
        raise pytest.UsageError(f"tests sharing a node id (pytest-xdist would run one of each): {shared[:5]}")
