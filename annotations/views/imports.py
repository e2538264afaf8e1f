from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotations import selectors


@login_required
def import_job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A large import running on a worker: its progress (updated by static/js/import-job.js), then its outcome."""
    job = get_object_or_404(selectors.import_job_list(user=request.user), pk=pk)
    return render(request, "annotations/import_job.html", {"job": job, "project": job.project})
