"""A module imported on first use, for the heavy scientific ones (scipy.stats, scipy.sparse).

The web workers import every view module at start-up, and the analysis modules need
scipy only when an analysis runs: `stats = lazy_module("scipy.stats")` keeps
`stats.spearmanr(...)` as written while the import (about half a second and tens of MB
per worker for scipy.stats) waits for the first call. The annotation requests never
make one.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class _LazyModule:
    def __init__(self, name: str):
        self.__dict__["_name"] = name

    def __getattr__(self, attribute: str):
        # Only called for names not yet copied here; importlib's lock makes a first use
        # from two threads at once safe (the second waits for the first's import).
        value = getattr(importlib.import_module(self._name), attribute)
        self.__dict__[attribute] = value  # next time a plain attribute read
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> ModuleType:
    """The module `name`, imported when one of its attributes is first read."""
    return _LazyModule(name)  # type: ignore[return-value]
