"""Under pytest-xdist each worker process gets its own Redis database (workbench/settings/test.py):
gw0 keeps the configured one, the next ones count down, modulo Redis' 16."""

from workbench.settings.test import _redis_db_of_worker


def test_each_xdist_worker_takes_its_own_redis_database():
    assert _redis_db_of_worker("redis://127.0.0.1:6379/15", 0) == "redis://127.0.0.1:6379/15"
    assert _redis_db_of_worker("redis://127.0.0.1:6379/15", 1) == "redis://127.0.0.1:6379/14"
    assert _redis_db_of_worker("redis://127.0.0.1:6379/1", 2) == "redis://127.0.0.1:6379/15"
    # Nothing to move: another broker, or no database number in the URL.
    assert _redis_db_of_worker("filesystem://", 1) == "filesystem://"
    assert _redis_db_of_worker("redis://127.0.0.1:6379", 1) == "redis://127.0.0.1:6379"
