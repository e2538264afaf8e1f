"""Every command block of the tutorials runs, in order, against a scratch database.

Each tutorial is followed as a reader would: its `bash` / `console` blocks run one after another
in a fresh folder that holds only the project's `manage.py` and `.venv` (as links), with the test
database as DATABASE_URL, so files a block writes are there for the next. A block that exits
non-zero fails the test with its output. Blocks marked `<!-- not-run: ... -->` (a browser, a
server, a long run) are skipped here, and the mark must name the test file that covers them.

The folder's `.venv/bin/python` hands `manage.py ...` to a fork server (tests/docs/forkserver.py):
each command runs in a fresh process forked from one that imported Django already, so a block costs
its commands' work, not sixty interpreters' imports; everything else runs the real interpreter.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.docs.blocks import ROOT, RUN_LANGUAGES, blocks, tutorials
from tests.docs.forkserver import stand_in

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


@pytest.fixture(scope="module")
def command_server(django_db_setup, tmp_path_factory):
    """(the commands' environment, the fork server's socket), the server started with that environment
    against the test database, for the module's tutorials."""
    from django.db import connection

    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings.test",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "DJANGO_READ_DOT_ENV_FILE": "0",
        "PYTHONUNBUFFERED": "1",
    }
    socket_path = tmp_path_factory.mktemp("forkserver") / "socket"
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.docs.forkserver", str(socket_path)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready = server.stdout.readline()  # "ready" once it listens; "" if it died first (its traceback shows)
        assert ready.strip() == "ready", f"the fork server did not start (exit status {server.wait()})"
        yield env, socket_path
    finally:
        server.terminate()  # it waits for its children, then exits
        server.wait()


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_commands_run(path, transactional_db, tmp_path, command_server):
    env, socket_path = command_server
    (tmp_path / "manage.py").symlink_to(ROOT / "manage.py")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(stand_in(str(socket_path), str(ROOT / ".venv" / "bin" / "python")))
    python.chmod(0o755)
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
