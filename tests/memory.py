"""Python's own allocations around a block of code (tracemalloc), for the tests that bound a peak.

A process's peak RSS does not show a few tens of MB at test sizes (the start-up's own peak hides
them); tracemalloc's peak does, for what Python and numpy allocate while the block runs.
"""

import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Peak:
    """The peak of what was allocated while the block ran (bytes); set when the block ends."""

    bytes: int = 0


@contextmanager
def python_peak() -> Iterator[Peak]:
    """Trace Python's allocations while the block runs; the yielded Peak holds their peak afterwards."""
    peak = Peak()
    tracemalloc.start()
    try:
        yield peak
        peak.bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


MB = 1024 * 1024


def assert_peak_does_not_grow(what: str, small: Path, large: Path, peak_small: int, peak_large: int) -> None:
    """What streams a file holds no part of it: reading `large` instead of `small` may raise `what`
    (a peak in bytes) by less than a quarter of the files' difference in size. Prints both peaks."""
    difference = large.stat().st_size - small.stat().st_size
    growth = peak_large - peak_small
    print(f"{what}: {small.stat().st_size / MB:.0f} MB file {peak_small / MB:.0f} MB, "
          f"{large.stat().st_size / MB:.0f} MB file {peak_large / MB:.0f} MB")  # fmt: skip
    assert growth < 0.25 * difference, (
        f"{what} grew by {growth / MB:.0f} MB for {difference / MB:.0f} MB more file "
        f"({peak_small / MB:.0f} -> {peak_large / MB:.0f} MB)"
    )
