"""Unit answers that take the same time whatever the unit.

Handing out or taking back a control unit (annotations.quality: a degraded
copy is made, alias ids drawn, the answer checked against the original) costs
more work than a regular unit; measured over a few hundred units, the time an
answer takes would tell controls apart. Every answer about a unit is therefore
held back until `WORKBENCH_UNIT_RESPONSE_FLOOR_MS` have passed since the
request began, which is longer than either path takes, so both arrive after
the same time (tests/annotations/test_confinement.py times them).
"""
from __future__ import annotations

import functools
import time

from django.conf import settings


def unit_response_floor(view):
    """Hold the view's answer (an error too) until the floor has passed."""

    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        started = time.monotonic()
        try:
            return view(*args, **kwargs)
        finally:
            left = settings.WORKBENCH_UNIT_RESPONSE_FLOOR_MS / 1000 - (time.monotonic() - started)
            if left > 0:
                time.sleep(left)

    return wrapped
