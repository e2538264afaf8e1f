"""The test hook WORKBENCH_METRIC_PROGRESS_HOLD (tests/browser/test_learned_metrics.py): a model
metric's chunk, once it has stored progress inside it (0 < scored < size), waits until a file
exists, for at most WORKBENCH_METRIC_PROGRESS_HOLD_TIMEOUT seconds; without the setting, or before any
progress, nothing waits."""

import logging
import threading

from metrics.models import ChunkStatus
from metrics.services import run_create, run_prepare
from metrics.services.chunks import _hold, _Watch
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


def _running_chunk():
    dataset = build_dataset(name="hold-bound", items=6, systems=2)
    run, _ = run_create(dataset=dataset, metric="chrf")
    run_prepare(run_id=run.pk)
    chunk = run.chunks.get()
    chunk.status = ChunkStatus.RUNNING
    chunk.save(update_fields=["status"])
    return run, chunk


def test_a_held_chunk_goes_on_when_the_file_never_comes(db, tmp_path, settings, caplog):
    """The release file never appears (the test that set the hook died): past the timeout the chunk
    goes on, and the log says so. Before the bound, this waited for ever (the thread never returned)."""
    run, chunk = _running_chunk()
    never = tmp_path / "never"
    settings.WORKBENCH_METRIC_PROGRESS_HOLD = str(never)
    settings.WORKBENCH_METRIC_PROGRESS_HOLD_TIMEOUT = 0.0
    returned = threading.Event()
    rescued = []

    def rescue():  # without the bound the watch would wait for ever: end it, and fail the test
        if not returned.wait(60):
            rescued.append(True)
            never.touch()

    helper = threading.Thread(target=rescue)
    helper.start()
    with caplog.at_level(logging.WARNING, logger="metrics.services.chunks"):
        try:
            _Watch(chunk_id=chunk.pk, run_id=run.pk, size=12, report=True)(8, 24)
        finally:
            returned.set()
            helper.join(60)
    assert not rescued, "the watch waited for a file that never comes"
    assert any("still absent" in record.getMessage() for record in caplog.records)


def test_the_hold_waits_its_timeout_out_by_the_clock_not_by_polls(tmp_path):
    """A clock that moves only when the hold pauses: it gives up exactly when the timeout has passed,
    and returns at once (True) when the file is there."""
    now = [0.0]
    pauses = []

    def pause(seconds):
        pauses.append(seconds)
        now[0] += 1.0

    assert _hold(str(tmp_path / "never"), "chunk", timeout=120, clock=lambda: now[0], pause=pause) is False
    assert now[0] == 120.0 and len(pauses) == 120
    (tmp_path / "there").touch()
    assert _hold(str(tmp_path / "there"), "chunk", timeout=120, clock=lambda: now[0], pause=pause) is True
    assert len(pauses) == 120
