"""Progress and cancellation inside one scoring call (no Django).

A model metric scores a whole chunk in one call that may take minutes. The caller (the
chunk service) passes a callback with `watching(callback)`; scorers call `step(done, total)`
between batches. The callback records progress and may raise (the run was cancelled): the
exception leaves the scorer's loop at the next batch boundary, so a cancelled run frees its
worker within one batch. Without a callback `step` does nothing.

`done`/`total` count the units of the current pass (texts embedded, prompts scored); a call
that makes passes inside passes (minWED's rounds call an embedded metric) wraps the inner ones
in `checks_only()`, whose steps only give the callback the chance to stop (done=None).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

Callback = Callable[[int | None, int | None], None]

_callback: contextvars.ContextVar[Callback | None] = contextvars.ContextVar("workbench_progress", default=None)
_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("workbench_progress_quiet", default=False)


@contextlib.contextmanager
def watching(callback: Callback | None) -> Iterator[None]:
    token = _callback.set(callback)
    try:
        yield
    finally:
        _callback.reset(token)


@contextlib.contextmanager
def checks_only() -> Iterator[None]:
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


def step(done: int, total: int) -> None:
    """A batch boundary: `done` of `total` units of this pass are scored."""
    callback = _callback.get()
    if callback is None:
        return
    if _quiet.get() or total <= 0:
        callback(None, None)
    else:
        callback(done, total)
