"""tests/xdist_once.py: a folder built once per run, rebuilt after a build that failed."""

import uuid

import pytest

from tests.xdist_once import built_once


def test_the_folder_is_built_once_and_then_found(tmp_path_factory):
    name, calls = f"once-{uuid.uuid4().hex[:8]}", []

    def build(folder):
        calls.append(folder)
        (folder / "out.txt").write_text("built")

    first = built_once(tmp_path_factory, name, build)
    second = built_once(tmp_path_factory, name, build)
    assert first == second == calls[0] and len(calls) == 1
    assert (first / "out.txt").read_text() == "built"


def test_a_failed_build_leaves_nothing_and_the_next_call_builds_again(tmp_path_factory):
    name = f"once-{uuid.uuid4().hex[:8]}"

    def broken(folder):
        (folder / "half.txt").write_text("half")
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError):
        built_once(tmp_path_factory, name, broken)
    folder = built_once(tmp_path_factory, name, lambda f: (f / "out.txt").write_text("built"))
    assert sorted(p.name for p in folder.iterdir()) == [".built", "out.txt"]
