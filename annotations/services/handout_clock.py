"""The server's clock of a unit starts when its hand-out is answered, not when it is chosen.

`active_since` (annotations.services.assignment_work) was the moment the unit was chosen, inside
the request that hands it out: the rest of that request and the response floor
(annotations.timing, 150 ms in campaigns with controls) counted as time on the unit, although the
annotator could not see it yet. The hand-out notes the assignment here (`handed_out`), and the
view's wrapper (`clock_after_response`, outside the floor) moves `active_since` to the moment the
answer leaves: only the network's share of the wait is left in.

Only when the answer was held to the floor: without it the rest of the request is a few
milliseconds, not worth a statement on the hot path (tests/annotations/apis/test_query_counts.py
pins the hand-out's statements of campaigns without controls).
"""

from __future__ import annotations

import contextvars
import functools
from datetime import datetime

from django.utils import timezone

from annotations import timing
from annotations.models import Assignment

_handed: contextvars.ContextVar[list | None] = contextvars.ContextVar("handed_out", default=None)


def handed_out(assignment_id: int, since: datetime) -> None:
    """The request handed out (or resumed) the assignment, its clock started at `since`."""
    pending = _handed.get()
    if pending is not None:
        pending.append((assignment_id, since))


def clock_after_response(view):
    """Wrap a view that may hand out units (outside `unit_response_floor`): the clock of each
    unit it handed out starts when the view, floor included, is done."""

    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        token = _handed.set([])
        watch = timing.floor_watch_start()
        try:
            return view(*args, **kwargs)
        finally:
            pending = _handed.get() or []
            _handed.reset(token)
            if timing.floor_watch_end(watch) and pending:
                now = timezone.now()
                for assignment_id, since in pending:
                    # Only while the stretch it opened is still the open one (not submitted since).
                    Assignment.objects.filter(
                        pk=assignment_id, active_since=since, status=Assignment.Status.PENDING
                    ).update(active_since=now)

    return wrapped
