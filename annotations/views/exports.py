"""Export pages: the options form of a campaign, the job's progress, the download (researchers only)."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotations import selectors
from annotations.apis.exports import export_download_response
from annotations.export import ExportFailed
from annotations.export.jobs import export_job_create, options_from_json
from annotations.forms import ExportForm
from annotations.views.annotate import require_staff_page


@login_required
@require_http_methods(["GET", "POST"])
def campaign_export(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(selectors.campaign_list(user=request.user).prefetch_related("systems"), pk=pk)
    require_staff_page(user=request.user, campaign=campaign)
    systems = sorted(s.name for s in campaign.systems.all()) or sorted(
        campaign.dataset.systems.values_list("name", flat=True))
    form = ExportForm(request.POST or None, systems=systems, criteria=list(campaign.criteria))
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            job = export_job_create(user=request.user, campaign=campaign, options=options_from_json(form.cleaned_data))
        except ExportFailed as exc:
            problems = exc.problems
        else:
            return redirect("export-job-detail", pk=job.pk)
    jobs = selectors.export_job_list(user=request.user).filter(campaign=campaign)[:10]
    return render(request, "campaigns/export.html", {
        "campaign": campaign, "project": campaign.project, "form": form, "problems": problems, "jobs": jobs})


@login_required
def export_job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """An export being written by a worker: progress (static/js/export-job.js), then the download link."""
    job = get_object_or_404(selectors.export_job_list(user=request.user), pk=pk)
    return render(request, "campaigns/export_job.html", {"job": job, "campaign": job.campaign,
                                                         "project": job.campaign.project})


@login_required
def export_job_download(request: HttpRequest, pk: int):
    job = get_object_or_404(selectors.export_job_list(user=request.user), pk=pk)
    return export_download_response(job)
