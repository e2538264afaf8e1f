"""What a session fixture writes to disk, built once per run rather than once per pytest-xdist process.

Under xdist each process gwN runs its own session fixtures; one that only writes files the tests then read
(collectstatic's output) need not run in every process. The first process to ask builds the folder in the
run's own temporary directory (the parent of every gwN's), under a file lock; the others wait on the lock and
find it built. pytest-xdist documents the pattern ("Making session-scoped fixtures execute only once").
"""

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

DONE = ".built"


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `name` of this run, `build(folder)` having filled it in this process or another one. A
    build that raised leaves no folder behind: the next process to ask builds it again."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's, shared by its processes; a later run has another
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (folder / DONE).exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                build(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            (folder / DONE).touch()
    return folder
