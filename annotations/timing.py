"""Unit answers that take the same time whatever the unit.

Handing out or taking back a control unit (annotations.quality: a degraded
copy is made, alias ids drawn, the answer checked against the original) costs
more work than a regular unit; measured over a few hundred units, the time an
answer takes would tell controls apart. Every answer about a unit is therefore
held back until `WORKBENCH_UNIT_RESPONSE_FLOOR_MS` have passed since the
request began, which is longer than either path takes, so both arrive after
the same time (tests/annotations/test_confinement.py times them); past the
floor, until its next multiple. On a loaded machine the floor in force rises
with the recent answers' times (`floor_in_force`), so that a control's extra
work stays under it there too (tests/annotations/test_timing_under_load.py:
a rank test on the hand-outs' clock times under CPU hogs).

Only campaigns that can hand out controls pay for it: the engine's enrolment
lock reads whether quality control may place a control (`controls_possible_sql`,
in the query it runs anyway) and says so with `controls_in_play`; a campaign
without controls has nothing to hide, and its answers are not held back.
"""

from __future__ import annotations

import collections
import contextvars
import functools
import gc
import math
import threading
import time

from django.conf import settings
from django.db import connection

from annotations.models import Campaign
from annotations.selectors.controls import controls_possible_sql

# Set during a request when its campaign can hand out controls (read per request by the decorator).
_controls = contextvars.ContextVar("unit_floor_controls", default=False)
# Set when an answer of this request was held to the floor (read by services.handout_clock).
_held = contextvars.ContextVar("unit_floor_held", default=False)


def floor_watch_start() -> contextvars.Token:
    """Start watching whether this request's answer is held to the floor (`floor_watch_end`)."""
    return _held.set(False)


def floor_watch_end(token: contextvars.Token) -> bool:
    """Whether an answer was held to the floor since `floor_watch_start`."""
    held = _held.get()
    _held.reset(token)
    return held


def controls_in_play(possible: bool) -> None:
    """Called by the engine with whether this request's campaign can hand out control units."""
    if possible:
        _controls.set(True)


def campaign_controls_check(campaign_id: int) -> None:
    """For a unit page that takes no lock (showing a pending unit): ask the database whether
    the campaign can hand out controls, as the engine's lock query does."""

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {controls_possible_sql('c.id')} FROM {Campaign._meta.db_table} c WHERE c.id = %s", [campaign_id]
        )
        row = cursor.fetchone()
    controls_in_play(bool(row and row[0]))


# The floor follows the load. A fixed floor hides a control's extra work only while every answer
# takes less than it: on a loaded machine every path slows down, the control's more, and the
# controls crossed into the next step far more often than regular units (issue 46: 56 % against
# 15 % at 150 ms). So the floor in force is the configured one or, when higher, FLOOR_MARGIN times
# the FLOOR_QUANTILE of the last FLOOR_WINDOW held answers of this process, controls among them:
# nearly every answer, control or not, ends at the same instant whatever the load. One slow
# answer (a batch end's quality figures) moves a quantile little, so it does not hold the next
# ones long; the few past the floor still end on its next multiple.
FLOOR_WINDOW = 200
FLOOR_QUANTILE = 0.95
FLOOR_MARGIN = 1.5
_recent: collections.deque = collections.deque(maxlen=FLOOR_WINDOW)
_recent_lock = threading.Lock()


def floor_in_force(configured: float) -> float:
    """The floor (seconds) an answer is held to now: the configured one, or more under load."""
    with _recent_lock:
        taken = sorted(_recent)
    if not taken:
        return configured
    high = taken[min(len(taken) - 1, int(FLOOR_QUANTILE * len(taken)))]
    return max(configured, FLOOR_MARGIN * high)


def floor_history_clear() -> None:
    """Forget the answers seen so far (tests that give the clock of their own)."""
    with _recent_lock:
        _recent.clear()


def _hold(started: float) -> None:
    # A control's extra work leaves more young objects behind, so without this the
    # collector would run at another point of the next request (before its floor began):
    # 0.2 ms more in the median, told apart by a rank test on 200 units. Collected here,
    # inside the held time, every request starts with the young generations empty.
    floor = settings.WORKBENCH_UNIT_RESPONSE_FLOOR_MS / 1000
    if floor <= 0:
        return
    gc.collect(1)
    elapsed = time.monotonic() - started
    floor = floor_in_force(floor)
    with _recent_lock:
        _recent.append(elapsed)
    # An answer past the floor (a loaded machine, a batch end's quality figures) is held to the
    # next multiple of it: what it shows is one coarse step, not how much longer it took.
    time.sleep(floor * max(1, math.ceil(elapsed / floor)) - elapsed)


def unit_response_floor(view):
    """Hold the view's answer (an error too) until the floor has passed, in campaigns with controls."""

    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        started = time.monotonic()
        token = _controls.set(False)
        try:
            return view(*args, **kwargs)
        finally:
            needed = _controls.get()
            _controls.reset(token)
            if needed:
                _hold(started)
                _held.set(True)

    return wrapped
