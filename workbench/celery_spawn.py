"""A real Celery worker process of our own, started the way `make run` starts one, for the test suite
(tests/celery_workers.py) and the benchmarks (bench/bench_metric_runs.py, bench/bench_pages.py).

One place for the command line (solo pool: a task runs in the process that a test may kill), its log
file and the wait for its first ping, so the tests and the benchmarks measure the same worker. The web
and worker processes never import it; the benchmarks may import it (never test code).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKER_QUEUES = ("cpu", "gpu")


def worker_start(
    *,
    env: dict[str, str],
    log_dir: Path,
    prefix: str,
    queues: tuple[str, ...] = WORKER_QUEUES,
    loglevel: str = "INFO",
    ready_within: float = 120.0,
) -> tuple[subprocess.Popen, str]:
    """Start `celery -A workbench worker` with `env` (the whole environment) and return the process and its
    host name once it answers a ping. Its output goes to a file in `log_dir`: the process carries its path
    (`.log_path`) and the open file (`.log_file`, closed by `worker_stop`). A worker that exits, or does not
    answer within `ready_within` seconds (a bound on a broken start, not a timing), raises RuntimeError
    naming its log."""
    from workbench.celery import app  # lazy: Celery and Django's settings load when a worker starts, not on import

    name = f"{prefix}-{uuid.uuid4().hex[:8]}@%h"
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / f"{prefix}-worker-{uuid.uuid4().hex[:8]}.log", "w")
    command = [sys.executable, "-m", "celery", "-A", "workbench", "worker", "-Q", ",".join(queues)]
    command += ["--pool", "solo", "-n", name, "--loglevel", loglevel]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    proc.log_path = log.name
    proc.log_file = log
    host = name.replace("%h", os.uname().nodename)
    deadline = time.monotonic() + ready_within
    # Each ping waits up to a second for the answer: no pause of its own between tries.
    while not app.control.ping(destination=[host], timeout=1.0):
        if proc.poll() is not None:
            log.close()
            raise RuntimeError(f"celery worker exited with {proc.returncode}; see {log.name}")
        if time.monotonic() > deadline:
            worker_stop(proc)
            raise RuntimeError(f"celery worker {host} did not answer a ping within {ready_within} s; see {log.name}")
    return proc, host


def worker_stop(proc: subprocess.Popen, *, within: float = 30.0) -> None:
    """Ask the worker to stop (SIGTERM: it finishes its task), kill it if it has not after `within`
    seconds, and close its log."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc.log_file.close()
