"""A fixed-window request count per client address, in the configured cache
(Redis in production, so every web process shares it)."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from workbench.security import client_ip


def join_rate_exceeded(request: HttpRequest) -> bool:
    """Whether this client made more than WORKBENCH_JOIN_RATE join requests in the current minute."""
    limit = getattr(settings, "WORKBENCH_JOIN_RATE", 30)
    if not limit:
        return False
    window = int(time.time() // 60)
    key = f"join-rate:{client_ip(request)}:{window}"
    if cache.add(key, 1, timeout=120):
        return False
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=120)
        return False
    return count > limit
