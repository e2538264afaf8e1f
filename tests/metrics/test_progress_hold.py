"""The test hook WORKBENCH_METRIC_PROGRESS_HOLD (tests/browser/test_learned_metrics.py): a model
metric's chunk, once it has stored progress inside it (0 < scored < size), waits until a file
exists; without the setting, or before any progress, nothing waits."""

import logging
import threading

from metrics.models import ChunkStatus
from metrics.services import run_create, run_prepare
from metrics.services.chunks import _Watch
from tests.metrics.conftest import build_dataset


class _Seen(logging.Handler):
    def __init__(self):
        super().__init__()
        self.held = threading.Event()

    def emit(self, record):
        if "(test hook)" in record.getMessage():
            self.held.set()


def test_a_chunk_with_progress_waits_for_the_file(db, tmp_path, settings):
    dataset = build_dataset(name="hold", items=6, systems=2)
    run, _ = run_create(dataset=dataset, metric="chrf")
    run_prepare(run_id=run.pk)
    chunk = run.chunks.get()
    chunk.status = ChunkStatus.RUNNING
    chunk.save(update_fields=["status"])
    release = tmp_path / "release"

    # Without the setting, and at 0 outputs scored, the watch returns at once.
    settings.WORKBENCH_METRIC_PROGRESS_HOLD = ""
    _Watch(chunk_id=chunk.pk, run_id=run.pk, size=12, report=True)(6, 24)
    settings.WORKBENCH_METRIC_PROGRESS_HOLD = str(release)
    _Watch(chunk_id=chunk.pk, run_id=run.pk, size=12, report=True)(0, 24)

    seen = _Seen()
    logger = logging.getLogger("metrics.services.chunks")
    logger.addHandler(seen)
    returned = threading.Event()
    found: list[str] = []

    def release_when_held():
        try:
            if not seen.held.wait(60):
                found.append("the watch never held")
            elif returned.is_set():
                found.append("the watch returned before the file existed")
        finally:
            release.touch()  # never leaves the test waiting

    helper = threading.Thread(target=release_when_held)
    helper.start()
    try:
        watch = _Watch(chunk_id=chunk.pk, run_id=run.pk, size=12, report=True)
        watch(8, 24)  # 4 of 12 outputs: stored, then held until the file exists
        returned.set()
    finally:
        helper.join(60)
        logger.removeHandler(seen)
    assert not found, found
    chunk.refresh_from_db()
    assert chunk.scored == 4
    watch(16, 24)  # held once per chunk: the next report does not wait again
