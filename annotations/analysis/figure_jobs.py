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

from annotations.analysis import mqm_errors, pages, report
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
    "disagreement": lambda c, p: pages.disagreement_ranked(c, p),
    "meta": lambda c, p: pages.meta_table(c, annotators=p["a"], systems=p["s"], normalize=p["z"]),
    "wave-discrepancies": lambda c, p: pages.wave_discrepancies(c, annotators=p["a"], threshold=p["t"]),
    "judges": lambda c, p: pages.judge_panel(c, annotators=p["a"], normalize=p["z"], epsilon=p["e"]),
    "meta-tasks": lambda c, p: pages.meta_tasks(c, annotators=p["a"]),
    "quality-figures": lambda c, p: quality.campaign_figures(campaign=c),
    "quality-agreement": lambda c, p: quality.campaign_agreement(campaign=c),
    "mqm-errors": lambda c, p: mqm_errors.error_breakdown(c, annotators=p["a"], systems=p["s"], criterion=p["k"]),
    "mqm-error-items": lambda c, p: mqm_errors.error_items(
        c, system=p["s"], category=p["c"], severity=p["v"], annotators=p["a"], criterion=p["k"]
    ),
    # The REST API's figures (annotations.analysis.apis), with its validated query as the parameters.
    "api-agreement": lambda c, p: report.agreement_report(
        campaign=c, criterion=p.get("criterion"), annotators=p["annotators"], bootstrap=p["bootstrap"], seed=p["seed"]
    ),
    "api-correlation": lambda c, p: report.correlate_report(
        campaign=c,
        metric=p["metric"],
        criterion=p["criterion"],
        level=p["level"],
        method=p["method"],
        group_by=p["group_by"],
        normalize=p["normalize"],
        min_votes=p["min_votes"],
        min_consensus=p["min_consensus"],
        compare=p.get("compare"),
        annotators=p["annotators"],
        bootstrap=p["bootstrap"],
        seed=p["seed"],
        epsilon=p["epsilon"],
        alt_scoring=p.get("alt_scoring"),
        q_fdr=p["q_fdr"],
        min_instances=p["min_instances"],
    ),
    "api-rankings": lambda c, p: report.ranking_report(
        campaign=c,
        criterion=p.get("criterion") or None,
        annotators=p["annotators"],
        systems=p["system"],
        rule=p["rule"],
        alpha=p["alpha"],
        resamples=p["resamples"],
        rule_seed=p["seed"],
    ),
    "api-mqm-errors": lambda c, p: mqm_errors.error_breakdown(
        c, annotators=p["annotators"], systems=p["systems"], criterion=p.get("criterion")
    ),
    "api-mqm-error-items": lambda c, p: mqm_errors.error_items(
        c,
        system=p["system"],
        category=p.get("category"),
        severity=p.get("severity"),
        annotators=p["annotators"],
        criterion=p.get("criterion"),
    ),
}
NAMES = frozenset(FIGURES)

# Filters served from precomputed pieces (issue 45; docs/reference/analysis.md#filters-on-large-campaigns).
# By criterion: the parameter naming it; computing such a figure for one criterion computes it for every
# criterion of the campaign in the same task, so switching criterion reads a stored figure.
BY_CRITERION: dict[str, str] = {
    "agreement": "c",
    "scatter": "c",
    "disagreement": "c",
    "rankings": "c",
    "mqm-errors": "k",
    "api-agreement": "criterion",
    "api-correlation": "criterion",
    "api-rankings": "criterion",
    "api-mqm-errors": "criterion",
}
# By systems: (the parameter naming the subset, how to select it from the figure over all systems).
# The other figures' system filters (rankings' clusters, correlations over systems) depend on the
# subset as a whole, and included annotators change every figure: those are figures of their own,
# computed by a worker with the page's progress indicator.
BY_SYSTEMS: dict[str, tuple[str, Callable]] = {
    "mqm-errors": ("s", mqm_errors.breakdown_systems_select),
    "api-mqm-errors": ("systems", mqm_errors.breakdown_systems_select),
}


def figure(campaign: Campaign, name: str, params: dict):
    """One figure of `FIGURES` through the figures cache: computed here for a small campaign (or
    outside `page_figures`), read from its worker's snapshot for a large one inside it."""
    return figures_cache.cached(campaign, name, params, lambda: FIGURES[name](campaign, params))


def page_figures():
    """What a page view runs in (`figures_cache.from_workers`): these figures from their snapshots,
    asking a worker for new ones."""
    return figures_cache.from_workers(names=NAMES, refresh=figure_refresh_request, selections=BY_SYSTEMS)


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
        if _stored(campaign_id, name, params, current):  # a duplicate task, or a page asked while the last one ran
            return False
        figure_state_running(campaign_id=campaign_id, name=name)
        error = _compute_store(campaign, name, params, current)
        if error is None and name in BY_CRITERION:
            # The same figure for the campaign's other criteria: a later switch of criterion reads them.
            parameter = BY_CRITERION[name]
            for criterion in campaign.criteria:
                other = {**params, parameter: criterion}
                if criterion != params.get(parameter) and not _stored(campaign_id, name, other, current):
                    _compute_store(campaign, name, other, current)
        figure_state_idle(campaign_id=campaign_id, error=error or "")
        return True
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def _stored(campaign_id: int, name: str, params: dict, current: str) -> bool:
    return FigureSnapshot.objects.filter(
        campaign_id=campaign_id, name=name, key=figures_cache.params_key(params), stamp=current
    ).exists()


def _compute_store(campaign: Campaign, name: str, params: dict, current: str) -> str | None:
    """Compute one figure and store it; what went wrong (None: nothing)."""
    try:
        value = FIGURES[name](campaign, params)
    except Exception as exc:  # noqa: BLE001 - kept as the figure: the page handles it as it would in the request
        logger.exception("campaign %s: figure %s failed", campaign.pk, name)
        try:
            figure_snapshot_store(
                campaign_id=campaign.pk, name=name, params=params, stamp=current, value=FigureFailed(exc)
            )
        except Exception:  # noqa: BLE001 - an exception that does not pickle: said on the state
            pass
        return f"{name}: {type(exc).__name__}"
    figure_snapshot_store(campaign_id=campaign.pk, name=name, params=params, stamp=current, value=value)
    return None


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
