"""Pages whose figures a worker computes (issue 45): the decorator the analysis and quality pages
run in, the banner it gives the templates, the page shown while no figure exists yet and the status
its script polls."""

from __future__ import annotations

import functools

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from annotations.access import campaign_for_staff
from annotations.analysis.figure_jobs import page_figures
from annotations.selectors import figures_cache


def figures_on_workers(view):
    """Run a campaign page (`view(request, pk, ...)`) with its figures read from what workers computed
    when the campaign is large: an old figure is shown with its age, none yet gives the waiting page
    (202) with a progress indicator; both poll the status and reload when the figures are ready."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, pk: int, *args, **kwargs) -> HttpResponse:
        with page_figures():
            try:
                return view(request, pk, *args, **kwargs)
            except figures_cache.FigurePending:
                return render(request, "analysis/figures_pending.html", {"campaign_pk": pk}, status=202)

    return wrapped


def _status_url(pk: int, page: figures_cache.PageFigures) -> str:
    wanted = [f"{f['name']}:{f['key']}" for f in page.stale + page.pending]
    return reverse("campaign-figures-status", args=[pk]) + "?" + urlencode([("want", w) for w in wanted])


def figures_context(request: HttpRequest) -> dict:
    """Template context (a context processor): `figures_status` when the page being rendered shows
    figures older than its campaign, or waits for them."""
    page = figures_cache.page_figures()
    if page is None or not (page.stale or page.pending):
        return {}
    pk = request.resolver_match.kwargs.get("pk") if request.resolver_match else None
    if pk is None:
        return {}
    return {
        "figures_status": {
            "pending": bool(page.pending),
            "computed_at": page.oldest(),
            "url": _status_url(pk, page),
        }
    }


@login_required
def figures_status(request: HttpRequest, pk: int) -> JsonResponse:
    """Whether the figures a page waits for (`want=name:key`, repeated) reflect the campaign's current
    state, and what its worker is doing."""
    campaign = campaign_for_staff(user=request.user, pk=pk)
    wanted = [tuple(w.split(":", 1)) for w in request.GET.getlist("want")[:50] if ":" in w]
    current = figures_cache.stamp(campaign)
    stamps = figures_cache.snapshot_stamps(campaign, wanted)
    ready = all(stamps.get(w) == current for w in wanted)
    state = figures_cache.worker_state(campaign)
    running = state["running_since"]
    return JsonResponse(
        {
            "ready": ready,
            "done": sum(1 for w in wanted if stamps.get(w) == current),
            "total": len(wanted),
            "state": "running" if running else ("ready" if ready else "queued"),
            "running_seconds": round((timezone.now() - running).total_seconds()) if running else None,
            "error": state["error"],
        }
    )
