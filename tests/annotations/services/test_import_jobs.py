"""Large uploads become import jobs; running one is idempotent and reports its progress."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotations.models import Dataset, ImportJob, Membership
from annotations.services import import_jobs
from annotations.services.import_jobs import dataset_upload_import, import_job_run
from annotations.services.imports import DatasetImportResult, DatasetNameTaken, ImportFailed, dataset_import
from tests.annotations.factories import DatasetFactory, MembershipFactory, ProjectFactory
from tests.annotations.hostile import DATASET_LINES

pytestmark = pytest.mark.django_db

LINES = "".join(
    json.dumps({"item": f"i{n}", "source": f"source {n}", "outputs": {"A": f"a{n}"}}) + "\n" for n in range(12_000)
).encode()


@pytest.fixture
def staff():
    return MembershipFactory(role=Membership.Role.RESEARCHER)


@pytest.fixture
def queued(staff, settings, django_capture_on_commit_callbacks):
    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 1000
    with django_capture_on_commit_callbacks(execute=False) as queued_tasks:
        job = dataset_upload_import(
            user=staff.user, upload=SimpleUploadedFile("big.jsonl", LINES), dataset_name="big", project=staff.project
        )
    assert isinstance(job, ImportJob) and len(queued_tasks) == 1  # queued once the transaction commits
    return job


def test_small_upload_is_imported_at_once_large_one_is_queued_untouched(staff, settings, queued):
    assert (queued.status, queued.phase, queued.size, queued.file.size) == ("queued", "waiting", len(LINES), len(LINES))
    assert not Dataset.objects.filter(name="big").exists()  # nothing parsed yet
    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 10 * len(LINES)
    result = dataset_upload_import(
        user=staff.user, upload=SimpleUploadedFile("small.jsonl", LINES), dataset_name="small", project=staff.project
    )
    assert isinstance(result, DatasetImportResult) and result.items == 12_000


def test_checks_that_need_no_reading_are_made_before_queueing(staff, settings):
    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 1000
    DatasetFactory(name="taken", project=ProjectFactory())
    upload = SimpleUploadedFile("big.jsonl", LINES)
    with pytest.raises(DatasetNameTaken):
        dataset_upload_import(user=staff.user, upload=upload, dataset_name="taken", project=staff.project)
    with pytest.raises(ImportFailed, match="unknown format"):
        dataset_upload_import(user=staff.user, upload=upload, dataset_name="x", project=staff.project, fmt="xml")
    assert not ImportJob.objects.exists()


def test_running_a_job_imports_reports_and_cleans_up(queued):
    path = queued.file.path
    job = import_job_run(job_id=queued.pk)
    assert (job.status, job.phase, job.progress) == ("succeeded", "done", 1.0)
    assert job.result["items"] == 12_000 and job.dataset == Dataset.objects.get(name="big")
    assert job.started_at <= job.finished_at and not job.file
    import os

    assert not os.path.exists(path)  # the upload is deleted once imported
    # A duplicated or redelivered task does nothing.
    assert import_job_run(job_id=queued.pk) is None
    assert Dataset.objects.get(name="big").items.count() == 12_000


def test_a_job_whose_worker_died_is_claimed_again(queued):
    ImportJob.objects.filter(pk=queued.pk).update(status="running")
    assert import_job_run(job_id=queued.pk) is None  # a live worker may still hold it
    ImportJob.objects.filter(pk=queued.pk).update(updated_at=timezone.now() - import_jobs.STALE_AFTER * 2)
    assert import_job_run(job_id=queued.pk).status == "succeeded"


def test_a_bad_file_fails_the_job_with_its_line_errors(staff, settings, django_capture_on_commit_callbacks):
    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 10
    content = b"\n".join(line for line, _ in DATASET_LINES.values())
    with django_capture_on_commit_callbacks(execute=False):
        job = dataset_upload_import(
            user=staff.user, upload=SimpleUploadedFile("bad.jsonl", content), dataset_name="bad", project=staff.project
        )
    job = import_job_run(job_id=job.pk)
    assert job.status == "failed" and len(job.errors) == len(DATASET_LINES)
    assert all(e.startswith(f"line {n}: ") for n, e in enumerate(job.errors, 1))
    assert not Dataset.objects.filter(name="bad").exists()


def test_a_job_of_someone_who_lost_their_role_fails_cleanly(queued, staff):
    Membership.objects.filter(pk=staff.pk).update(role=Membership.Role.ANNOTATOR)
    job = import_job_run(job_id=queued.pk)
    assert job.status == "failed" and "owners and researchers" in job.errors[0]


def test_importer_reports_reading_progress_then_writing():
    calls = []
    dataset_import(stream=LINES, dataset_name="p", progress=lambda phase, fraction: calls.append((phase, fraction)))
    reading = [f for phase, f in calls if phase == "reading"]
    assert len(reading) >= 3 and reading == sorted(reading) and 0 <= reading[0] < reading[-1] < 1
    assert calls[-1] == ("writing", None)


def test_progress_is_saved_on_the_job(queued):
    ImportJob.objects.filter(pk=queued.pk).update(status="running")
    report = import_jobs._progress_reporter(queued.pk)
    report("reading", 0.4)
    queued.refresh_from_db()
    assert (queued.phase, queued.progress) == ("reading", 0.4)
    report("writing", None)
    queued.refresh_from_db()
    assert queued.phase == "writing"


def test_an_unreachable_task_queue_fails_the_job_instead_of_leaving_it_queued(
    staff, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from workbench.celery import app as celery_app

    def broker_down(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to redis")

    monkeypatch.setattr(celery_app, "send_task", broker_down)
    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 1000
    with django_capture_on_commit_callbacks(execute=True):
        job = dataset_upload_import(
            user=staff.user, upload=SimpleUploadedFile("big.jsonl", LINES), dataset_name="big", project=staff.project
        )
    job.refresh_from_db()
    assert job.status == "failed" and "task queue is unreachable" in job.errors[0] and not job.file


def test_a_small_zip_that_expands_past_the_async_size_is_queued(staff, settings, django_capture_on_commit_callbacks):
    """A zip counts by what it expands to (its directory's sizes, which zipfile never reads past),
    not by its own size: a 1 MB zip of a 1 GB dataset file was once read in the web request."""
    import io
    import zipfile

    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 100_000
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("d.jsonl", LINES)
    assert len(out.getvalue()) < 100_000 < len(LINES)
    with django_capture_on_commit_callbacks(execute=False) as queued_tasks:
        job = dataset_upload_import(
            user=staff.user, upload=SimpleUploadedFile("d.zip", out.getvalue()), dataset_name="z", project=staff.project
        )
    assert isinstance(job, ImportJob) and len(queued_tasks) == 1
    assert not Dataset.objects.filter(name="z").exists()  # nothing parsed yet
