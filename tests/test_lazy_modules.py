"""tests/lazy_modules.py: a heavy reference library is imported by the first test that reads from it,
never by collection (which probes every name of a test module for pytest's private markers)."""

import sys

import pytest

from tests.lazy_modules import lazy


@pytest.fixture
def counted_module(tmp_path, monkeypatch):
    """A module of its own that counts how many times it has been imported, on sys.path for this test."""
    name = f"lazy_sample_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("import builtins\nbuiltins.lazy_sample_imports += 1\nanswer = 42\n")
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.setattr("builtins.lazy_sample_imports", 0, raising=False)
    yield name
    sys.modules.pop(name, None)


def test_collection_probes_import_nothing_and_the_first_public_read_imports_once(counted_module):
    import builtins

    module = lazy(counted_module)
    # What pytest's collection reads from every name of a test module.
    for probe in ("_pytestfixturefunction", "_fixture_function_marker", "__test__", "__wrapped__"):
        assert getattr(module, probe, None) is None
    assert counted_module not in sys.modules and builtins.lazy_sample_imports == 0

    assert module.answer == 42 and module.answer == 42
    assert builtins.lazy_sample_imports == 1 and counted_module in sys.modules


def test_an_absent_optional_package_skips_the_test_that_uses_it():
    module = lazy("no_such_package_for_the_workbench", skip_if_absent=True)
    with pytest.raises(pytest.skip.Exception, match="no_such_package_for_the_workbench"):
        module.anything
    with pytest.raises(ModuleNotFoundError):
        lazy("no_such_package_for_the_workbench").anything
