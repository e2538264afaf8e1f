"""Uploaded imports: small files at once, large ones on a Celery worker.

The web process never parses a large file: above
`WORKBENCH_IMPORT_ASYNC_BYTES` it only runs the checks that need no reading
(format, names, permission), stores the upload (already streamed to disk by
Django) and queues `annotations.tasks.import_job_run_task`; the worker runs
the importer and records its progress on the `ImportJob`, which the import
page shows.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotations.models import ImportJob, Project
from annotations.protocols import registry as protocols
from annotations.services.imports import (
    DatasetImportResult,
    ImportFailed,
    JudgementImportResult,
    dataset_import,
    dataset_name_check,
    judgements_import,
)
from annotations.services.imports.common import import_permission_check, name_check
from annotations.services.imports.dataset_parse import format_of
from annotations.services.imports.errors import LineError
from annotations.services.imports.judgements import FORMATS
from annotations.services.imports.media import zip_expanded_bytes
from workbench.broker import celery_app

log = logging.getLogger(__name__)
# Sent by name (`annotations.tasks` registers it): services never import the tasks, which import them.
IMPORT_TASK = "annotations.import_job_run"

# A job running longer than this without a word is taken to be dead (its
# worker was killed) and may be claimed again when its task is redelivered.
STALE_AFTER = timedelta(minutes=30)
PROGRESS_SAVE_SECONDS = 0.5


def dataset_upload_import(
    *, user: AbstractBaseUser, upload: UploadedFile, dataset_name: str, project: Project, fmt: str | None = None
) -> DatasetImportResult | ImportJob:
    """Import an uploaded dataset file into `project`: now when it is small
    (the importer's result), else on a worker (the queued `ImportJob`).

    Either way the same checks apply; a large file gets the ones that need
    no reading at once, so a wrong name is not learnt minutes later.
    """
    if max(upload.size, zip_expanded_bytes(upload) or 0) <= settings.WORKBENCH_IMPORT_ASYNC_BYTES:
        return dataset_import(
            stream=upload,
            dataset_name=dataset_name,
            project_name=project.name,
            fmt=fmt,
            filename=upload.name,
            user=user,
        )
    format_of(fmt, upload.name)
    name, problem = name_check(dataset_name, "dataset name")
    if problem:
        raise ImportFailed([LineError(0, problem)])
    import_permission_check(user, project)
    dataset_name_check(dataset_name=name, project_name=project.name, user=user)
    return import_job_create(
        user=user, upload=upload, project=project, kind=ImportJob.Kind.DATASET, dataset_name=name, fmt=fmt or ""
    )


def judgements_upload_import(
    *, user: AbstractBaseUser, upload: UploadedFile, campaign, fmt: str = "jsonl", skip_invalid: bool = False
) -> JudgementImportResult | ImportJob:
    """Import an uploaded judgement file (JSONL, or WMT's MQM TSV for an MQM campaign) into
    `campaign`, atomically, as `import_judgements`: now when it is small, else on a worker.
    `skip_invalid` as `import_judgements --skip-invalid` (the result lists the refused lines)."""

    if fmt not in FORMATS:
        raise ImportFailed([LineError(0, f"unknown format {fmt!r}; expected {' or '.join(FORMATS)}")])
    if upload.size <= settings.WORKBENCH_IMPORT_ASYNC_BYTES:
        return judgements_import(
            stream=upload, campaign_name=campaign.name, user=user, fmt=fmt, skip_invalid=skip_invalid
        )
    import_permission_check(user, campaign.dataset.project)
    protocol = protocols.of(campaign)
    if fmt not in protocol.import_formats:
        raise ImportFailed(
            [
                LineError(
                    0,
                    f"format {fmt} is not a format of {protocol.name} campaigns ({', '.join(protocol.import_formats)})",
                )
            ]
        )
    return import_job_create(
        user=user,
        upload=upload,
        project=campaign.dataset.project,
        kind=ImportJob.Kind.JUDGEMENTS,
        campaign=campaign,
        fmt=fmt,
        skip_invalid=skip_invalid,
    )


@transaction.atomic
def import_job_create(
    *,
    user: AbstractBaseUser,
    upload: UploadedFile,
    project: Project,
    kind: str,
    dataset_name: str = "",
    campaign=None,
    fmt: str = "",
    skip_invalid: bool = False,
) -> ImportJob:
    """Store the upload and queue its import (after the transaction commits)."""
    job = ImportJob(
        kind=kind,
        user=user,
        project=project,
        dataset_name=dataset_name,
        campaign=campaign,
        fmt=fmt,
        skip_invalid=skip_invalid,
        filename=(upload.name or "upload")[:255],
        size=upload.size,
    )
    job.full_clean(exclude=["file"])
    # A temporary upload is moved, not copied, into the storage.
    job.file.save(upload.name or "upload", upload, save=False)
    job.save()
    transaction.on_commit(lambda: _queue(job.pk))
    return job


def _queue(job_id: int) -> None:
    try:
        celery_app.send_task(IMPORT_TASK, args=[job_id])
    except Exception:
        # The broker is unreachable: say so on the job rather than leave it queued forever.
        log.exception("could not queue import job %s", job_id)
        _finish(
            ImportJob.objects.get(pk=job_id),
            status=ImportJob.Status.FAILED,
            errors=[
                "the import could not be handed to a worker (the task queue is unreachable); nothing was "
                "imported. Try again later."
            ],
        )


def import_job_run(*, job_id: int) -> ImportJob | None:
    """Run a queued import once (the worker's side); None when there is nothing to do.

    Idempotent: the job is claimed with a conditional update, so a
    duplicated task does nothing, and a task redelivered after its worker
    died runs the import again, which is safe (imports are atomic).
    """
    now = timezone.now()
    claimed = ImportJob.objects.filter(
        Q(status=ImportJob.Status.QUEUED) | Q(status=ImportJob.Status.RUNNING, updated_at__lt=now - STALE_AFTER),
        pk=job_id,
    ).update(
        status=ImportJob.Status.RUNNING, phase=ImportJob.Phase.READING, progress=0.0, started_at=now, updated_at=now
    )
    if not claimed:
        return None
    job = ImportJob.objects.select_related("user", "project", "campaign").get(pk=job_id)
    try:
        with job.file.open("rb") as stream:
            result = _run_importer(job, stream)
    except ImportFailed as exc:
        _finish(job, status=ImportJob.Status.FAILED, errors=[str(e) for e in exc.errors])
    except Exception:
        # Not the file's fault: say so without details (they are in the worker's log).
        log.exception("import job %s failed", job_id)
        _finish(
            job,
            status=ImportJob.Status.FAILED,
            errors=[
                "the import failed on the server; nothing was imported. Try again, or ask an administrator "
                "to look at the worker's log."
            ],
        )
    else:
        _finish(
            job,
            status=ImportJob.Status.SUCCEEDED,
            result=result.as_json(detail=True),
            dataset=getattr(result, "dataset", None),
        )
    job.refresh_from_db()
    return job


def _run_importer(job: ImportJob, stream):

    report = _progress_reporter(job.pk)
    try:
        if job.kind == ImportJob.Kind.JUDGEMENTS:
            return judgements_import(
                stream=stream,
                campaign_name=job.campaign.name,
                user=job.user,
                progress=report,
                fmt=job.fmt or "jsonl",
                skip_invalid=job.skip_invalid,
            )
        return dataset_import(
            stream=stream,
            dataset_name=job.dataset_name,
            project_name=job.project.name,
            fmt=job.fmt or None,
            filename=job.filename,
            user=job.user,
            progress=report,
        )
    except PermissionDenied as exc:
        # The uploader lost their role while the job waited.
        raise ImportFailed([LineError(0, str(exc) or "You may no longer import into this project.")]) from None


def _progress_reporter(job_id: int):
    """A `progress(phase, fraction)` for the importer that saves at most twice a second.

    Updates run outside the import's transaction (reading happens before it;
    "writing" is reported just before it starts), so the page sees them.
    """
    last = [0.0]

    def report(phase: str, fraction: float | None) -> None:
        now = time.monotonic()
        if phase == ImportJob.Phase.READING and now - last[0] < PROGRESS_SAVE_SECONDS:
            return
        last[0] = now
        ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.RUNNING).update(
            phase=phase, progress=min(1.0, max(0.0, fraction or 0.0)), updated_at=timezone.now()
        )

    return report


def _finish(
    job: ImportJob, *, status: str, errors: list[str] | None = None, result: dict | None = None, dataset=None
) -> None:
    ImportJob.objects.filter(pk=job.pk).update(
        status=status,
        phase=ImportJob.Phase.DONE,
        progress=1.0,
        errors=errors or [],
        result=result or {},
        dataset=dataset,
        finished_at=timezone.now(),
        updated_at=timezone.now(),
    )
    # The upload has served its purpose; the job row keeps what happened.
    if job.file:
        job.file.delete(save=False)
        ImportJob.objects.filter(pk=job.pk).update(file="")
