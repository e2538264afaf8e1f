"""The analysis, quality and meta-evaluation APIs of a large campaign answer from the figures workers
computed (issue 45), as the pages do (`annotations.views.figures`).

Above WORKBENCH_FIGURES_INLINE_MAX judgements an endpoint wrapped in `figures_api` computes no figure
in the request: it answers the last one a worker stored, adds `"figure": {"status", "computed_at",
"age_seconds", "error"}` to its JSON (and the header `X-Figure-Status`) and asks a worker for a new one
when the campaign changed since (debounced per figure and state; one computation per campaign at a
time). With no figure yet it answers 202 with only that `figure` object and `Retry-After`: ask again.
Small campaigns answer inline, exactly as before (no `figure` key).

status: `ready` (the figure reflects the campaign's current state), `computing` (older, a worker is
computing this campaign's figures now), `queued` (older or absent, the computation is waiting for a
worker).
"""

from __future__ import annotations

import functools

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.analysis.figure_jobs import page_figures
from annotations.models import Campaign
from annotations.selectors import figures_cache

# Seconds a client is asked to wait before it asks again for a figure being computed.
RETRY_AFTER_S = 2


class FigureStatusSerializer(serializers.Serializer):
    """The `figure` object (schema only)."""

    status = serializers.ChoiceField(choices=["ready", "computing", "queued"])
    computed_at = serializers.DateTimeField(allow_null=True)
    age_seconds = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_blank=True)

    class Meta:
        ref_name = "FigureStatus"


class FigurePendingSerializer(serializers.Serializer):
    """The 202's body (schema only)."""

    figure = FigureStatusSerializer()

    class Meta:
        ref_name = "FigurePending"


FIGURE_RESPONSES_HELP = (
    "Campaigns with more judgements than WORKBENCH_FIGURES_INLINE_MAX: the figure a worker computed, "
    "with a `figure` object (status ready|computing|queued, computed_at, age_seconds); a new one is "
    "computed on a worker when the campaign has changed. Smaller campaigns: computed in the request, "
    "no `figure` key."
)


def pending_response() -> OpenApiResponse:
    """The 202 of the OpenAPI schema."""
    return OpenApiResponse(
        FigurePendingSerializer,
        description="Large campaign, no figure computed yet: a worker computes it; ask again after "
        "Retry-After seconds.",
    )


def figure_status(campaign: Campaign, page: figures_cache.PageFigures) -> dict:
    """The `figure` object of an answer read from workers' figures."""
    state = figures_cache.worker_state(campaign)
    if not (page.stale or page.pending):
        status = "ready"
    elif state["running_since"] is not None:
        status = "computing"
    else:
        status = "queued"
    computed_at = page.computed_at()
    return {
        "status": status,
        "computed_at": computed_at.isoformat() if computed_at else None,
        "age_seconds": round((timezone.now() - computed_at).total_seconds()) if computed_at else None,
        "error": state["error"],
    }


def figures_api(get):
    """Wrap an APIView's `get(self, request, pk, ...)` whose figures go through
    `figure_jobs.figure` / `figures_cache.cached`: see the module's docstring."""

    @functools.wraps(get)
    def wrapped(self, request: Request, pk: int, *args, **kwargs) -> Response:
        with page_figures() as page:
            try:
                response = get(self, request, pk, *args, **kwargs)
            except figures_cache.FigurePending:
                campaign = Campaign.objects.get(pk=pk)  # the view found it already (access checked)
                status = figure_status(campaign, page)
                return Response(
                    {"figure": status},
                    status=202,
                    headers={"Retry-After": str(RETRY_AFTER_S), "X-Figure-Status": status["status"]},
                )
        if not page.from_snapshots() or response.status_code != 200:
            return response
        status = figure_status(Campaign.objects.get(pk=pk), page)
        if isinstance(response.data, dict):
            response.data = {**response.data, "figure": status}
        response["X-Figure-Status"] = status["status"]
        if status["status"] != "ready":
            response["Retry-After"] = str(RETRY_AFTER_S)
        return response

    return wrapped
