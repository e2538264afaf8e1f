"""The reference pages generated from the code equal what the code says now.

docs/gen_commands.py writes one page per management command (its `--help`), the metric options
page (the registry), the OpenAPI schema (`manage.py spectacular`) and the commands' part of the
nav. These tests fail when a command, a metric or an endpoint changed and the pages were not
written again (`python docs/gen_commands.py`)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from tests.docs.blocks import ROOT


def _generator():
    spec = importlib.util.spec_from_file_location("gen_commands", ROOT / "docs" / "gen_commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen():
    return _generator()


@pytest.fixture(scope="module")
def expected(gen):
    os.environ["COLUMNS"] = gen.HELP_COLUMNS
    return gen.expected_files()


def test_every_generated_page_equals_what_the_code_gives(expected):
    stale = [
        str(path.relative_to(ROOT))
        for path, text in expected.items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], f"out of date, run `python docs/gen_commands.py`: {stale}"


def test_no_page_for_a_command_that_is_gone(gen, expected):
    pages = set((ROOT / "docs" / "reference" / "commands").glob("*.md"))
    assert pages <= set(expected)


def test_every_project_command_has_a_page(gen):
    names = gen.project_commands()
    assert {
        "import_dataset",
        "create_campaign",
        "import_judgements",
        "run_metric",
        "correlate",
        "agreement",
        "quality",
        "export_dataset",
        "score",
        "build_docs",
    } <= set(names)
    for name in names:
        assert (gen.COMMANDS_DIR / f"{name}.md").is_file(), name


def test_a_page_equals_the_help_that_manage_py_prints(gen):
    """The pages hold the parser's own help; here, as a user runs it, in a process of its own."""
    page = (gen.COMMANDS_DIR / "import_judgements.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n(.*)```", page, re.S).group(1)
    env = {**os.environ, "COLUMNS": gen.HELP_COLUMNS, "DJANGO_SETTINGS_MODULE": "workbench.settings.test"}
    printed = subprocess.run(
        [sys.executable, "manage.py", "import_judgements", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed == block
