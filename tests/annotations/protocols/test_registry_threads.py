"""The protocol registry loads once when threads ask for it at the same moment (issue 45).

gunicorn's gthread workers serve several requests at once, and the first requests after a worker
starts all find the registry unloaded: two threads loading it side by side raised "protocol 'esa'
is registered twice" (a 500 on a join link's Start, seen by bench_capacity.py). Here a second
thread asks for the registry while the first is inside its load (held there until the second has
either finished or is waiting for the first): both get every protocol, nothing raises.
"""

import threading

from annotations.protocols import registry
from tests.waiting import wait_until


class _WatchedLock:
    """The registry's lock, telling the test when another thread waits for it."""

    def __init__(self):
        self.lock, self.waiting = threading.Lock(), threading.Event()

    def __enter__(self):
        if self.lock.locked():
            self.waiting.set()
        self.lock.acquire()
        return self

    def __exit__(self, *exc):
        self.lock.release()


def test_two_threads_loading_the_registry_at_once_get_every_protocol_once(monkeypatch):
    lock = _WatchedLock()
    monkeypatch.setattr(registry, "_LOCK", lock)
    monkeypatch.setattr(registry, "_loaded", False)
    real_import = registry.import_string
    second, results, errors = [], {}, []

    def ask(name: str) -> None:
        try:
            results[name] = sorted(registry.protocols())
        except Exception as exc:  # noqa: BLE001 - the assertion below shows it
            errors.append(f"{name}: {exc}")

    def import_string(path: str):
        if not second:  # the first import of the first load: the second thread asks now
            second.append(threading.Thread(target=ask, args=("second",)))
            second[0].start()
            # Until the second thread has loaded the registry itself (the old code) or waits for
            # this load (a lock): a condition, not a time.
            wait_until(lambda: not second[0].is_alive() or lock.waiting.is_set(), 120, "the second thread")
        return real_import(path)

    monkeypatch.setattr(registry, "import_string", import_string)
    try:
        ask("first")
        second[0].join()
    finally:
        monkeypatch.undo()
        registry._loaded = False  # the next test loads the registry afresh
        registry.PROTOCOLS.clear()
    assert errors == []
    assert len(results["first"]) == len(results["second"]) == len(registry.configured())
    assert results["first"] == results["second"]
    assert "esa" in results["first"]
