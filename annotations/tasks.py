"""Celery tasks of the annotations app: thin, idempotent (see STYLE.md)."""

from celery import shared_task

from annotations.services.import_jobs import import_job_run


@shared_task(name="annotations.import_job_run", acks_late=True, ignore_result=True)
def import_job_run_task(job_id: int) -> None:
    """Run an uploaded import on a worker. A duplicate or redelivered task
    does nothing unless the job is still queued (or its worker died)."""
    import_job_run(job_id=job_id)


@shared_task(name="annotations.export_job_run", acks_late=True, ignore_result=True)
def export_job_run_task(job_id: int) -> None:
    """Write an export started from the browser or the API (see annotations.export.jobs)."""
    from annotations.export.jobs import export_job_run

    export_job_run(job_id=job_id)


@shared_task(name="annotations.campaign_plan", acks_late=True, ignore_result=True)
def campaign_plan_task(campaign_id: int) -> None:
    """Plan a big campaign's units on a worker (annotations.services.units): a duplicate does
    nothing once it is planned; a redelivery after a worker died plans again from nothing."""
    from annotations.services.units import campaign_units_plan_worker

    campaign_units_plan_worker(campaign_id=campaign_id)
