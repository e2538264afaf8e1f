import pytest

from workbench.celery import ping


@pytest.mark.worker
def test_real_worker_consumes_the_queue(celery_worker_process):
    result = ping.delay()
    assert result.get(timeout=60) == "pong"
