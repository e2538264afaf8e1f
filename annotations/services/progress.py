"""A large campaign's progress tables computed on a worker (issue 45).

The campaign page, its progress.json and the progress API read the counters the submit keeps
(`selectors.dashboards.unit_progress`, always current) and the tables per annotator, per system and
by judgement status (`selectors.dashboards.campaign_dashboard`): a scan of the campaign's units,
assignments and judgements, seconds at a million. For a large campaign the page shows the last tables
with their age and asks a worker for new ones here: one computation per campaign at a time (a flag in
the cache, dropped by the worker when it is done), so a page polling during live annotation gets
tables at most one computation old, and the requests never scan the campaign.
"""

from __future__ import annotations

import logging

from django.core.cache import cache

from annotations.models import Campaign
from annotations.selectors.dashboards import campaign_dashboard, progress_detail_compute
from workbench.broker import celery_app

logger = logging.getLogger(__name__)
# Sent by name (`annotations.tasks` registers it): services never import the tasks.
PROGRESS_TASK = "annotations.progress_compute"
# How long a request stands if its worker never drops the flag (a lost message): asked again after this.
REQUEST_STANDS_S = 600


def _flag(campaign_id: int) -> str:
    return f"progress-asked:{campaign_id}"


def campaign_progress(*, campaign: Campaign) -> dict:
    """The campaign's progress as `campaign_dashboard` gives it; tables older than the campaign (or none
    yet) are asked of a worker."""
    value = campaign_dashboard(campaign=campaign)
    if value["detail"]["stale"] or value["detail"]["pending"]:
        progress_refresh_request(campaign_id=campaign.pk)
    return value


def progress_refresh_request(*, campaign_id: int) -> bool:
    """Ask a worker for the campaign's progress tables; True if this call sent the task, False if one is
    on its way or running. Nothing is written to the database (GETs never write)."""
    if not cache.add(_flag(campaign_id), 1, REQUEST_STANDS_S):
        return False
    try:
        celery_app.send_task(PROGRESS_TASK, args=[campaign_id])
    except Exception as exc:  # noqa: BLE001 - any broker failure: the page keeps its last tables
        cache.delete(_flag(campaign_id))
        logger.warning("campaign %s: progress could not be queued: %s: %s", campaign_id, type(exc).__name__, exc)
        return False
    return True


def progress_compute(*, campaign_id: int) -> bool:
    """The worker's side: compute the campaign's progress tables of its state now and keep them."""
    campaign = Campaign.objects.filter(pk=campaign_id).select_related("dataset").first()
    try:
        if campaign is None:
            return False
        progress_detail_compute(campaign=campaign)
        return True
    finally:
        cache.delete(_flag(campaign_id))
