"""Unit answers that take the same time whatever the unit.

Handing out or taking back a control unit (annotations.quality: a degraded
copy is made, alias ids drawn, the answer checked against the original) costs
more work than a regular unit; measured over a few hundred units, the time an
answer takes would tell controls apart. Every answer about a unit is therefore
held back until `WORKBENCH_UNIT_RESPONSE_FLOOR_MS` have passed since the
request began, which is longer than either path takes, so both arrive after
the same time (tests/annotations/test_confinement.py times them); past the
floor, until its next multiple.

Only campaigns that can hand out controls pay for it: the engine's enrolment
lock reads whether quality control may place a control (`controls_possible_sql`,
in the query it runs anyway) and says so with `controls_in_play`; a campaign
without controls has nothing to hide, and its answers are not held back.
"""

from __future__ import annotations

import contextvars
import functools
import gc
import math
import time

from django.conf import settings


# Set during a request when its campaign can hand out controls (read per request by the decorator).
_controls = contextvars.ContextVar("unit_floor_controls", default=False)


def controls_in_play(possible: bool) -> None:
    """Called by the engine with whether this request's campaign can hand out control units."""
    if possible:
        _controls.set(True)


def campaign_controls_check(campaign_id: int) -> None:
    """For a unit page that takes no lock (showing a pending unit): ask the database whether
    the campaign can hand out controls, as the engine's lock query does."""
    from django.db import connection

    from annotations.models import Campaign
    from annotations.selectors.controls import controls_possible_sql

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {controls_possible_sql('c.id')} FROM {Campaign._meta.db_table} c WHERE c.id = %s", [campaign_id]
        )
        row = cursor.fetchone()
    controls_in_play(bool(row and row[0]))


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

    return wrapped
