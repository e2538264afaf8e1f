"""Export pages: the options form of a campaign, the job's progress, the download (researchers only)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotations import selectors
from annotations.access import campaign_for_staff
from annotations.apis.exports import export_download_response
from annotations.export.jobs import export_job_create, options_from_json
from annotations.forms import ExportForm


@login_required
@require_http_methods(["GET", "POST"])
def campaign_export(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = campaign_for_staff(
        user=request.user, pk=pk, queryset=selectors.campaign_list(user=request.user).prefetch_related("systems")
    )
    systems = sorted(s.name for s in campaign.systems.all()) or sorted(
        campaign.dataset.systems.values_list("name", flat=True)
    )
    form = ExportForm(request.POST or None, systems=systems, criteria=list(campaign.criteria))
    if request.method == "POST" and form.is_valid():
        # Bad options raise ExportFailed, a DomainError: a 400 page with every problem (DomainErrorMiddleware).
        job = export_job_create(user=request.user, campaign=campaign, options=options_from_json(form.cleaned_data))
        return redirect("export-job-detail", pk=job.pk)
    jobs = selectors.export_job_list(user=request.user).filter(campaign=campaign)[:10]
    return render(
        request,
        "campaigns/export.html",
        {"campaign": campaign, "project": campaign.project, "form": form, "jobs": jobs},
    )


@login_required
def export_job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """An export being written by a worker: progress (static/js/export-job.js), then the download link."""
    job = get_object_or_404(selectors.export_job_list(user=request.user), pk=pk)
    return render(
        request,
        "campaigns/export_job.html",
        {
            "job": job,
            "campaign": job.campaign,
            "project": job.campaign.project,
            "waiting": selectors.export_job_waiting(job=job),
        },
    )


@login_required
def export_job_download(request: HttpRequest, pk: int):
    job = get_object_or_404(selectors.export_job_list(user=request.user), pk=pk)
    return export_download_response(job)
