"""The figures a worker computes for the pages of a large campaign (issue 45), by name.

Each name is the one its page function gives `figures_cache.cached`, with the parameters it passes
there; `FIGURES` turns them back into the call. A figure's worker (`figure_compute`, the task
`annotations.figures_compute`) computes one campaign's figures at a time (a PostgreSQL advisory
lock; a second task for the same campaign is sent again a little later), from the campaign's state
when it starts, and stores the figure with that state: a judgement submitted meanwhile makes it
stale again and the next page asks for another.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable

from django.db import connection

from annotations.analysis import pages
from annotations.models import Campaign
from annotations.models.figures import FigureSnapshot
from annotations.quality import selectors as quality
from annotations.selectors import figures_cache
from annotations.selectors.figures_cache import FigureFailed
from annotations.services.figures import (
    figure_refresh_request,
    figure_resend,
    figure_snapshot_store,
    figure_state_idle,
    figure_state_running,
)

logger = logging.getLogger(__name__)
# Seconds before a task that found its campaign's lock held tries again.
LOCK_RETRY_S = 2.0

FIGURES: dict[str, Callable[[Campaign, dict], object]] = {
    "agreement": lambda c, p: pages.dashboard_agreement(c, criterion=p["c"], annotators=p["a"]),
    "scatter": lambda c, p: pages.scatter(
        c, run_id=p["run"], criterion=p["c"], annotators=p["a"], systems=p["s"], normalize=p["z"]
    ),
    "rankings": lambda c, p: pages.rankings(
        c,
        criterion=p["c"],
        annotators=p["a"],
        systems=p["s"],
        rule=p["r"],
        alpha=p["al"],
        resamples=p["n"],
        seed=p["seed"],
    ),
    "meta": lambda c, p: pages.meta_table(c, annotators=p["a"], systems=p["s"], normalize=p["z"]),
    "wave-discrepancies": lambda c, p: pages.wave_discrepancies(c, annotators=p["a"], threshold=p["t"]),
    "judges": lambda c, p: pages.judge_panel(c, annotators=p["a"], normalize=p["z"], epsilon=p["e"]),
    "meta-tasks": lambda c, p: pages.meta_tasks(c, annotators=p["a"]),
    "quality-figures": lambda c, p: quality.campaign_figures(campaign=c),
    "quality-agreement": lambda c, p: quality.campaign_agreement(campaign=c),
}
NAMES = frozenset(FIGURES)


def page_figures():
    """What a page view runs in (`figures_cache.from_workers`): these figures from their snapshots,
    asking a worker for new ones."""
    return figures_cache.from_workers(names=NAMES, refresh=figure_refresh_request)


def _lock_key(campaign_id: int) -> int:
    return zlib.crc32(f"figures:{campaign_id}".encode()) - 2**31


def figure_compute(*, campaign_id: int, name: str, params: dict) -> bool:
    """Compute one figure of a campaign and store it (False: nothing to do, or sent again later)."""
    if name not in FIGURES:
        logger.warning("campaign %s: no figure named %r", campaign_id, name)
        return False
    campaign = Campaign.objects.filter(pk=campaign_id).select_related("dataset").first()
    if campaign is None:
        return False
    key = _lock_key(campaign_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        if not cursor.fetchone()[0]:
            figure_resend(campaign_id=campaign_id, name=name, params=params, countdown=LOCK_RETRY_S)
            return False
    try:
        current = figures_cache.stamp(campaign)
        done = FigureSnapshot.objects.filter(
            campaign_id=campaign_id, name=name, key=figures_cache.params_key(params), stamp=current
        ).exists()
        if done:  # a duplicate task, or a page asked while the last one ran
            return False
        figure_state_running(campaign_id=campaign_id, name=name)
        try:
            value = FIGURES[name](campaign, params)
        except Exception as exc:  # noqa: BLE001 - kept as the figure: the page handles it as it would in the request
            logger.exception("campaign %s: figure %s failed", campaign_id, name)
            try:
                figure_snapshot_store(
                    campaign_id=campaign_id, name=name, params=params, stamp=current, value=FigureFailed(exc)
                )
            except Exception:  # noqa: BLE001 - an exception that does not pickle: say so on the state
                figure_state_idle(campaign_id=campaign_id, error=f"{name}: {type(exc).__name__}")
                return False
            figure_state_idle(campaign_id=campaign_id, error=f"{name}: {type(exc).__name__}")
            return True
        figure_snapshot_store(campaign_id=campaign_id, name=name, params=params, stamp=current, value=value)
        figure_state_idle(campaign_id=campaign_id)
        return True
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


# Figures a refresh computes again at most (the most recently asked for first).
REFRESH_MAX = 20


def figures_refresh(*, campaign_id: int) -> int:
    """After submits (`services.figures.figures_changed`): compute again the figures of the campaign
    that pages asked for and that no longer reflect its state; how many were computed."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return 0
    current = figures_cache.stamp(campaign)
    old = (
        FigureSnapshot.objects.filter(campaign_id=campaign_id, value__isnull=False)
        .exclude(stamp=current)
        .order_by("-wanted_at")
        .values_list("name", "params")[:REFRESH_MAX]
    )
    return sum(1 for name, params in list(old) if figure_compute(campaign_id=campaign_id, name=name, params=params))
