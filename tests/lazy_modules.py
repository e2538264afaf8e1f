"""Reference libraries that take seconds to import (torch, bert-score, sentence-transformers, rouge-score),
imported by a test module when one of its tests first uses them, not when pytest collects the module.

Collection imports every test module: with torch, transformers and bert-score at the top of a scorer's
test module, every run paid for them (about 18 s of a loaded 2-core machine's collection for
tests/metrics/scorers/test_bertscore.py alone), `make test-fast PYTEST_ARGS=-k ...` too, and so did each
pytest-xdist process, which collects the whole suite whether or not it runs a test that needs them.

`torch = lazy("torch")` at the top of the module keeps the code as it reads (`torch.allclose(...)`): the
first attribute read imports the module. `skip_if_absent=True` is `pytest.importorskip` moved to that
first use: a test that needs a missing optional reference package is skipped with importorskip's reason
(before, the whole module was skipped while being collected).
"""

import importlib
from types import ModuleType

import pytest


class LazyModule:
    """Stands for a module until an attribute is read, then imports it and hands out its attributes."""

    def __init__(self, name: str, *, skip_if_absent: bool = False):
        self.__dict__.update(_name=name, _skip_if_absent=skip_if_absent, _module=None)

    def _load(self) -> ModuleType:
        if self._module is None:
            if self._skip_if_absent:
                module = pytest.importorskip(self._name)
            else:
                module = importlib.import_module(self._name)
            self.__dict__["_module"] = module
        return self._module

    def __getattr__(self, attribute: str):
        # Collection probes every name of a test module for pytest's own markers (`_pytestfixturefunction`,
        # `__test__`, ...): a private name imports nothing. The tests read only public names.
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return getattr(self._load(), attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._name!r}, {state}>"


def lazy(name: str, *, skip_if_absent: bool = False) -> LazyModule:
    return LazyModule(name, skip_if_absent=skip_if_absent)
