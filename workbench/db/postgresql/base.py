"""Django's PostgreSQL backend with a cheaper connection health check.

With `CONN_HEALTH_CHECKS`, Django runs `SELECT 1` before the first query of every
request on a persistent connection: one more round trip per request, on the annotation
requests about a tenth of their database waits (bench/bench_peers.py). Here the check
runs only when the connection has not passed one for
`WORKBENCH_DB_HEALTH_CHECK_SECONDS` (1 s): an idle connection, the one a restarted or
failed-over server has dropped, is still checked and replaced before a request uses it;
a busy one is checked about once a second instead of on every request. A connection
that raised an error is checked at the end of that request whatever this says (Django's
`close_if_unusable_or_obsolete`). 0 checks before every request, as Django does.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    _checked_at = float("-inf")

    def close_if_health_check_failed(self):
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        now = time.monotonic()
        if now - self._checked_at < getattr(settings, "WORKBENCH_DB_HEALTH_CHECK_SECONDS", 0):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()
        self._checked_at = now

    def connect(self):
        super().connect()
        self._checked_at = time.monotonic()  # a new connection needs no check for a while
