import pytest  # noqa: E402

from tests.annotations.views.conftest import annotator, dataset, outsider, owner, project, researcher  # noqa: F401


@pytest.fixture(autouse=True)
def _join_throttle_per_test(fresh_throttles):
    """Each test starts with the join rate limit's count at zero: together they pass 30 joins a minute."""
    yield
