"""The scorers' docstring examples run as tests (STYLE.md 18: examples that are tests), so an
example a reader copies is one that works."""

import doctest
import importlib
import pkgutil

import pytest

import metrics.scorers

MODULES = sorted(m.name for m in pkgutil.iter_modules(metrics.scorers.__path__, "metrics.scorers."))
# Examples that load a model (~25 s each on a loaded 2-core machine): left out of `make test-fast`.
LOADS_A_MODEL = {"metrics.scorers.bertscore", "metrics.scorers.rouge", "metrics.scorers.yisi"}


def test_every_scorer_module_is_here():
    assert "metrics.scorers.sacrebleu_metrics" in MODULES and len(MODULES) >= 10


@pytest.mark.parametrize(
    "name", [pytest.param(m, marks=pytest.mark.slow) if m in LOADS_A_MODEL else m for m in MODULES]
)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (run it with -s)"
    assert result.attempted == sum(line.lstrip().startswith(">>>") for line in open(module.__file__, encoding="utf-8"))
