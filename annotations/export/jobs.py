"""Exports started from the browser or the API: queued here, written by a Celery worker.

The web process never builds an export: `export_job_create` checks the options and the user's
role, stores an `ExportJob` and queues `annotations.tasks.export_job_run_task` once the
transaction commits. The worker writes the folder with `export_dataset` (streaming, bounded
memory), zips it on disk and records progress on the job; the download view streams the zip
from disk (FileResponse), so nothing large is ever held in a web process's memory.
"""

from __future__ import annotations

import logging
import shutil
import time
import zipfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from annotations.export.service import ExportFailed, ExportOptions, export_dataset, export_options_check
from annotations.models import Campaign
from annotations.models.exports import ExportJob
from annotations.selectors import is_project_staff
from workbench.broker import celery_app

log = logging.getLogger(__name__)
STALE_AFTER = timedelta(minutes=30)
PROGRESS_SAVE_SECONDS = 0.5
# Sent by name (`annotations.tasks` registers it): the export never imports the tasks, which import it.
EXPORT_TASK = "annotations.export_job_run"


def exports_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "exports"


@transaction.atomic
def export_job_create(*, user, campaign: Campaign, options: ExportOptions) -> ExportJob:
    """Queue an export of `campaign` (owners and researchers only); bad options raise ExportFailed."""
    if not is_project_staff(user=user, project=campaign.project):
        raise PermissionDenied("Only owners and researchers of the project may export its data.")
    export_options_check(campaign=campaign, options=options)
    job = ExportJob(campaign=campaign, user=user, options=options.as_json() | {"chunk_items": options.chunk_items})
    job.full_clean()
    job.save()
    transaction.on_commit(lambda: _queue(job.pk))
    return job


def _queue(job_id: int) -> None:
    try:
        celery_app.send_task(EXPORT_TASK, args=[job_id])
    except Exception:
        log.exception("could not queue export job %s", job_id)
        _finish(
            job_id,
            status=ExportJob.Status.FAILED,
            errors=["the export could not be handed to a worker (the task queue is unreachable). Try again later."],
        )


def options_from_json(data: dict) -> ExportOptions:
    return ExportOptions(
        fmt=data.get("format", "jsonl"),
        real_annotator_ids=bool(data.get("real_annotator_ids")),
        included_only=bool(data.get("included_only")),
        min_consensus=data.get("min_consensus"),
        complete_units_only=bool(data.get("complete_units_only")),
        systems=data.get("systems") or None,
        criteria=data.get("criteria") or None,
        licence=data.get("licence") or "",
        chunk_items=int(data["chunk_items"]) if data.get("chunk_items") else None,
        annotator_figures=bool(data.get("annotator_figures")),
    )


def export_job_run(*, job_id: int) -> ExportJob | None:
    """Run a queued export once (the worker's side); None when there is nothing to do.

    Claimed with a conditional update, so a duplicated task does nothing; a task redelivered
    after its worker died (the job is stale) starts the export again from scratch.
    """
    now = timezone.now()
    claimed = ExportJob.objects.filter(
        Q(status=ExportJob.Status.QUEUED) | Q(status=ExportJob.Status.RUNNING, updated_at__lt=now - STALE_AFTER),
        pk=job_id,
    ).update(status=ExportJob.Status.RUNNING, progress=0.0, started_at=now, updated_at=now)
    if not claimed:
        return None
    job = ExportJob.objects.select_related("campaign__dataset__project").get(pk=job_id)
    folder = exports_root() / str(job.pk)
    shutil.rmtree(folder, ignore_errors=True)
    name = slugify(job.campaign.name) or "export"
    try:
        result = export_dataset(
            campaign=job.campaign,
            out=folder / name,
            options=options_from_json(job.options),
            progress=_progress_reporter(job.pk),
        )
        archive = folder / f"{name}-{job.options.get('format', 'jsonl')}.zip"
        _zip(folder / name, archive)
    except ExportFailed as exc:
        _finish(job.pk, status=ExportJob.Status.FAILED, errors=exc.problems)
    except Exception:
        log.exception("export job %s failed", job_id)
        _finish(
            job.pk,
            status=ExportJob.Status.FAILED,
            errors=["the export failed on the server. Try again, or ask an administrator to look at the worker's log."],
        )
    else:
        _finish(
            job.pk,
            status=ExportJob.Status.SUCCEEDED,
            result=result.as_json() | {"out": name},
            archive=str(archive.relative_to(Path(settings.MEDIA_ROOT))),
            size=archive.stat().st_size,
        )
    job.refresh_from_db()
    return job


def _zip(folder: Path, archive: Path) -> None:
    """Zip the folder file by file (zipfile streams each file in blocks: bounded memory)."""
    partial = archive.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as z:
        # Every file, sub-folders too (`--format mtme` writes a test set's folder tree).
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            z.write(path, arcname=f"{folder.name}/{path.relative_to(folder).as_posix()}")
    partial.rename(archive)


def _progress_reporter(job_id: int):
    last = [0.0]

    def report(fraction: float) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_SAVE_SECONDS and fraction < 1:
            return
        last[0] = now
        ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.RUNNING).update(
            progress=min(1.0, max(0.0, fraction)) * 0.95, updated_at=timezone.now()
        )

    return report


def _finish(
    job_id: int,
    *,
    status: str,
    errors: list[str] | None = None,
    result: dict | None = None,
    archive: str = "",
    size: int | None = None,
) -> None:
    ExportJob.objects.filter(pk=job_id).update(
        status=status,
        progress=1.0,
        errors=errors or [],
        result=result or {},
        archive=archive,
        size=size,
        finished_at=timezone.now(),
        updated_at=timezone.now(),
    )


def export_job_archive(job: ExportJob) -> Path | None:
    """The job's zip on disk, or None (not done, or removed)."""
    if job.status != ExportJob.Status.SUCCEEDED or not job.archive:
        return None
    path = (Path(settings.MEDIA_ROOT) / job.archive).resolve()
    if exports_root().resolve() not in path.parents or not path.is_file():
        return None
    return path
