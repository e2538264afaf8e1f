from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotations import protocols, selectors
from annotations.access import campaign_for_staff
from annotations.forms import JudgementUploadForm
from annotations.models import ImportJob
from annotations.services.import_jobs import judgements_upload_import
from annotations.services.imports import ImportFailed
from workbench.exceptions import DomainError


@login_required
def import_job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A large import running on a worker: its progress (updated by static/js/import-job.js), then its outcome."""
    job = get_object_or_404(selectors.import_job_list(user=request.user), pk=pk)
    return render(request, "annotations/import_job.html", {"job": job, "project": job.project})


@login_required
def judgement_upload(request: HttpRequest, pk: int) -> HttpResponse:
    """Upload judgements collected elsewhere into a campaign (owners and researchers), as
    `import_judgements`: atomic, every problem listed as "line N: reason"."""
    campaign = campaign_for_staff(user=request.user, pk=pk)
    errors: list = []
    form = JudgementUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            result = judgements_upload_import(
                user=request.user,
                upload=upload,
                campaign=campaign,
                fmt=form.cleaned_data["format"],
                skip_invalid=form.cleaned_data["skip_invalid"],
            )
        except ImportFailed as exc:
            errors = list(exc.errors)
        except (DomainError, PermissionDenied) as exc:
            form.add_error(None, str(exc) or "The import was refused.")
        else:
            if isinstance(result, ImportJob):
                return redirect("import-job-detail", pk=result.pk)
            if result.skipped:
                # The refused lines stay on screen: a redirect would lose them.
                return render(
                    request,
                    "annotations/judgement_upload.html",
                    {
                        "campaign": campaign,
                        "project": campaign.project,
                        "form": JudgementUploadForm(),
                        "formats": _formats(campaign),
                        "result": result,
                        "skipped": result.skipped,
                        "filename": upload.name,
                    },
                )
            if result.unchanged:
                messages.info(request, f"{upload.name}: every judgement was already imported; nothing changed.")
            else:
                messages.success(
                    request,
                    f"Imported {result.created} judgement{'s' if result.created != 1 else ''} "
                    f"from {upload.name} into {campaign.name}.",
                )
            return redirect("campaign-detail", pk=campaign.pk)
    return render(
        request,
        "annotations/judgement_upload.html",
        {
            "campaign": campaign,
            "project": campaign.project,
            "form": form,
            "errors": errors,
            "formats": _formats(campaign),
        },
        # A POST that gets here imported nothing (a bad file or form): a 400, as the dataset upload page.
        status=400 if request.method == "POST" else 200,
    )


def _formats(campaign) -> tuple[str, ...]:

    return protocols.of(campaign).import_formats
