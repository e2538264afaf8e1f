"""Waiting on a condition, never on the clock (the suite's rule): tests import `wait_until` from here."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = 0.1,
    pause: Callable[[float], object] = time.sleep,
) -> T:
    """Poll `predicate` until it answers something truthy (returned) or `timeout`
    seconds pass (an AssertionError saying what never happened). For what a
    test cannot be told about: another process's write, a lock another
    connection waits for, a server that starts listening. Never a fixed sleep:
    a busy machine only makes the wait longer, not the test wrong. `pause`
    waits between polls (browser tests pass one that keeps Playwright's
    event loop running: see tests/browser/conftest.py `browser_wait_until`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        pause(interval)
