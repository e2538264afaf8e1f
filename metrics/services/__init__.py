"""Writes of the metrics app: runs (create, cancel, re-run, finalise) and
their chunks (plan, claim, score, upsert). See `runs.py` and `chunks.py`."""

from metrics.services.chunks import chunk_execute
from metrics.services.runs import (
    RunInputError,
    run_cancel,
    run_create,
    run_execute_sync,
    run_fail,
    run_finalise,
    run_prepare,
    run_rerun,
)

__all__ = [
    "RunInputError",
    "chunk_execute",
    "run_cancel",
    "run_create",
    "run_execute_sync",
    "run_fail",
    "run_finalise",
    "run_prepare",
    "run_rerun",
]
