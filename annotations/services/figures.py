"""Figures computed on workers (issue 45): asking for one, and storing what a worker computed.

A page of a large campaign asks (`figure_refresh_request`) for each figure it answered old or not at
all; the request is debounced in the cache (one task per figure and state of the campaign, however
many pages ask) and sent by name. The worker (`annotations.analysis.figure_jobs`) computes one
campaign's figures at a time, under an advisory lock, and stores each with the state it reflects
(`figure_snapshot_store`); `FigureState` says on the page what it is doing.
"""

from __future__ import annotations

import logging
import pickle

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from annotations.models import Campaign
from annotations.models.figures import FigureSnapshot, FigureState
from annotations.selectors.figures_cache import params_key
from workbench.broker import celery_app

logger = logging.getLogger(__name__)
# Sent by name (`annotations.tasks` registers them): services never import the tasks.
FIGURES_TASK = "annotations.figures_compute"
REFRESH_TASK = "annotations.figures_refresh"
# How long one request for a figure of one state stands: pages asking again meanwhile send nothing.
# A lost message (a broker restarted) is asked for again after this.
REQUEST_DEBOUNCE_S = 600
# A campaign whose figures a page asked for within this time is refreshed after submits; others are not
# (no task, and no Celery loaded by a web worker that only serves annotators).
WANTED_S = 7 * 24 * 3600


def figure_refresh_request(*, campaign: Campaign, name: str, params: dict, stamp: str) -> bool:
    """Ask a worker for the figure `name` (with `params`) of the campaign in its state `stamp`; True if
    this call sent the task (the first since that state), False if one is on its way already."""
    flag = f"figures-asked:{campaign.pk}:{name}:{params_key(params)}:{stamp}"
    # Submits refresh only the campaigns whose figures someone reads (figures_changed).
    cache.set(f"figures-wanted:{campaign.pk}", 1, WANTED_S)
    if not cache.add(flag, 1, REQUEST_DEBOUNCE_S):
        return False
    # Nothing is written to the database here: GETs never write (the state is the worker's to write).
    try:
        celery_app.send_task(FIGURES_TASK, args=[campaign.pk, name, params])
    except Exception as exc:  # noqa: BLE001 - any broker failure: the page keeps its old figure
        cache.delete(flag)
        logger.warning("campaign %s: figure %s could not be queued: %s: %s", campaign.pk, name, type(exc).__name__, exc)
        return False
    return True


def figures_changed(*, campaign_id: int) -> None:
    """A submit changed the campaign (called once it committed): at most one refresh per campaign every
    WORKBENCH_FIGURES_DEBOUNCE_S seconds, sent to run that much later, so a burst of submits makes one
    computation of the figures pages have asked for (`annotations.analysis.figure_jobs.figures_refresh`).
    One or two cache operations per submit; nothing in the database."""
    debounce = settings.WORKBENCH_FIGURES_DEBOUNCE_S
    if debounce <= 0 or not cache.get(f"figures-wanted:{campaign_id}"):
        return
    if not cache.add(f"figures-changed:{campaign_id}", 1, debounce):
        return
    try:
        celery_app.send_task(REFRESH_TASK, args=[campaign_id], countdown=debounce)
    except Exception as exc:  # noqa: BLE001 - the next page asks again; never fail a submit for it
        cache.delete(f"figures-changed:{campaign_id}")
        logger.warning("campaign %s: figures refresh could not be queued: %s: %s", campaign_id, type(exc).__name__, exc)


def figure_resend(*, campaign_id: int, name: str, params: dict, countdown: float) -> None:
    """Send a figure's task again later (its campaign's lock was held by another computation)."""
    celery_app.send_task(FIGURES_TASK, args=[campaign_id, name, params], countdown=countdown)


@transaction.atomic
def figure_snapshot_store(*, campaign_id: int, name: str, params: dict, stamp: str, value) -> FigureSnapshot:
    """Keep a figure a worker computed, with the campaign's state it reflects (one row per figure)."""
    snapshot, _ = FigureSnapshot.objects.update_or_create(
        campaign_id=campaign_id,
        name=name,
        key=params_key(params),
        defaults={
            "params": params,
            "stamp": stamp,
            "value": pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL),
            "computed_at": timezone.now(),
        },
    )
    return snapshot


def figure_state_running(*, campaign_id: int, name: str) -> None:
    FigureState.objects.update_or_create(
        campaign_id=campaign_id, defaults={"running_since": timezone.now(), "queued_at": None, "error": ""}
    )


def figure_state_idle(*, campaign_id: int, error: str = "") -> None:
    FigureState.objects.update_or_create(campaign_id=campaign_id, defaults={"running_since": None, "error": error})
