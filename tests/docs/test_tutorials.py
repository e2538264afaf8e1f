"""Every command block of the tutorials runs, in order, against a scratch database.

Each tutorial is followed as a reader would: its `bash` / `console` blocks run one after another
in a fresh folder that holds only the project's `manage.py` and `.venv` (as links), with the test
database as DATABASE_URL, so files a block writes are there for the next. A block that exits
non-zero fails the test with its output. Blocks marked `<!-- not-run: ... -->` (a browser, a
server, a long run) are skipped here, and the mark must name the test file that covers them.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.docs.blocks import ROOT, RUN_LANGUAGES, blocks, tutorials

TUTORIALS = tutorials()


def test_there_are_tutorials_with_command_blocks():
    assert TUTORIALS, "docs/tutorials/ holds no tutorial"
    for path in TUTORIALS:
        assert any(b.language in RUN_LANGUAGES and b.skip_reason is None for b in blocks(path)), (
            f"{path.name}: no command block runs"
        )


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_skipped_blocks_name_the_test_that_covers_them(path):
    for block in blocks(path):
        if block.skip_reason is None:
            continue
        named = re.findall(r"tests/[\w/.-]+\.py", block.skip_reason)
        assert named, f"{block.where()}: a not-run block must name the test that covers it"
        for test_file in named:
            assert (ROOT / test_file).is_file(), f"{block.where()}: {test_file} does not exist"


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_commands_run(path, transactional_db, tmp_path):
    from django.db import connection

    db = connection.settings_dict
    (tmp_path / "manage.py").symlink_to(ROOT / "manage.py")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings.test",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "DJANGO_READ_DOT_ENV_FILE": "0",
        "PYTHONUNBUFFERED": "1",
    }
    ran = 0
    for block in blocks(path):
        if block.language not in RUN_LANGUAGES or block.skip_reason is not None:
            continue
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, (
            f"{block.where()} exited {done.returncode}\n--- block\n{block.script}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )
        ran += 1
    assert ran
