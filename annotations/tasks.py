"""Celery tasks of the annotations app: thin, idempotent (see STYLE.md).

The services and the export send these by name (`celery_app.send_task(NAME)`, the names defined
beside them), so the tasks import them and never the other way round.
"""

from celery import shared_task

from annotations.analysis.figure_jobs import figure_compute, figures_refresh
from annotations.export.jobs import EXPORT_TASK, export_job_run
from annotations.services.figures import FIGURES_TASK, REFRESH_TASK
from annotations.services.import_jobs import IMPORT_TASK, import_job_run
from annotations.services.progress import PROGRESS_TASK, progress_compute
from annotations.services.units import PLAN_TASK, campaign_units_plan_worker


@shared_task(name=IMPORT_TASK, acks_late=True, ignore_result=True)
def import_job_run_task(job_id: int) -> None:
    """Run an uploaded import on a worker. A duplicate or redelivered task
    does nothing unless the job is still queued (or its worker died)."""
    import_job_run(job_id=job_id)


@shared_task(name=EXPORT_TASK, acks_late=True, ignore_result=True)
def export_job_run_task(job_id: int) -> None:
    """Write an export started from the browser or the API (see annotations.export.jobs)."""
    export_job_run(job_id=job_id)


@shared_task(name=PLAN_TASK, acks_late=True, ignore_result=True)
def campaign_plan_task(campaign_id: int) -> None:
    """Plan a big campaign's units on a worker (annotations.services.units): a duplicate does
    nothing once it is planned; a redelivery after a worker died plans again from nothing."""
    campaign_units_plan_worker(campaign_id=campaign_id)


@shared_task(name=FIGURES_TASK, acks_late=True, ignore_result=True)
def figures_compute_task(campaign_id: int, name: str, params: dict) -> None:
    """Compute one figure of a large campaign for its pages (annotations.analysis.figure_jobs): a
    duplicate finds the figure current and does nothing."""
    figure_compute(campaign_id=campaign_id, name=name, params=params)


@shared_task(name=REFRESH_TASK, acks_late=True, ignore_result=True)
def figures_refresh_task(campaign_id: int) -> None:
    """After submits (debounced): compute again the figures pages of the campaign asked for."""
    figures_refresh(campaign_id=campaign_id)


@shared_task(name=PROGRESS_TASK, acks_late=True, ignore_result=True)
def progress_compute_task(campaign_id: int) -> None:
    """A large campaign's progress tables (per annotator, per system, by status) for its page."""
    progress_compute(campaign_id=campaign_id)
