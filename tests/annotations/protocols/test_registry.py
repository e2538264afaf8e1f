"""The registry loads the protocols once per process, however many threads ask first: a gunicorn
process's first requests come from several threads at once (found by tests/deploy/test_multihost.py,
where the first requests of a web host answered 500 "protocol ... is registered twice")."""

import threading

from annotations.protocols import registry
from tests.protocol_plugin import every_protocol


def test_threads_asking_first_at_once_load_the_protocols_once(monkeypatch, registered):
    registry._reload(setting="WORKBENCH_PROTOCOLS")  # as override_settings does: the next lookup loads
    real_import = registry.import_string
    both_loading = threading.Barrier(2)

    def import_string(path):
        # Each loading thread's first import waits until the other thread is loading too, which forces
        # the interleaving that broke. With the lock the other thread waits for this load instead and
        # never gets here, so the wait ends at its bound and the load goes on alone.
        if path == registry.configured()[0]:
            try:
                both_loading.wait(5)
            except threading.BrokenBarrierError:
                pass
        return real_import(path)

    monkeypatch.setattr(registry, "import_string", import_string)
    found: list[list[str]] = []
    errors: list[BaseException] = []

    def look_up() -> None:
        try:
            found.append(list(registry.protocols()))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=look_up) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert found == [every_protocol(), every_protocol()]
