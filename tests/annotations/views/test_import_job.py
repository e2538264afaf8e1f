"""A large upload through the form and the API runs on a real Celery worker;
the web process never parses it; the import page and API follow the job."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Dataset, ImportJob, Membership
from annotations.services import import_jobs
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.hostile import DATASET_LINES
from tests.waiting import wait_until

LINES = "".join(
    json.dumps({"item": f"i{n}", "outputs": {"A": f"a{n}", "B": f"b{n}"}}) + "\n" for n in range(5000)
).encode()


def wait_for(job_id: int, timeout: float = 90) -> ImportJob:
    def finished() -> ImportJob | None:
        job = ImportJob.objects.get(pk=job_id)
        return job if job.finished else None

    return wait_until(finished, timeout, f"import job {job_id} to finish")


@pytest.fixture
def web_never_parses(monkeypatch, settings):
    """Above the threshold the web process must not call the importer (the worker is another process)."""
    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 10_000

    def refuse(**kwargs):
        raise AssertionError("the web process parsed a large upload")

    monkeypatch.setattr(import_jobs, "dataset_import", refuse)


@pytest.mark.worker
def test_large_upload_through_the_form_runs_on_a_worker(celery_worker_process, client, web_never_parses):
    membership = MembershipFactory(role=Membership.Role.OWNER)
    client.force_login(membership.user)
    response = client.post(
        reverse("dataset-upload"),
        {
            "file": SimpleUploadedFile("big.jsonl", LINES),
            "dataset_name": "big",
            "project": membership.project.pk,
            "format": "auto",
        },
    )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert response["Location"] == reverse("import-job-detail", args=[job.pk])
    page = client.get(response["Location"])
    assert page.status_code == 200 and "big.jsonl" in page.content.decode()

    job = wait_for(job.pk)
    assert job.status == "succeeded", job.errors
    dataset = Dataset.objects.get(name="big")
    assert dataset.items.count() == 5000 and job.dataset == dataset
    done = client.get(response["Location"]).content.decode()
    assert "5000 items, 10000 outputs" in done and reverse("dataset-detail", args=[dataset.pk]) in done
    # Another user of no role in the project cannot follow the job.
    client.force_login(UserFactory())
    assert client.get(response["Location"]).status_code == 404


@pytest.mark.worker
def test_large_bad_upload_through_the_api_fails_on_the_worker_with_line_errors(celery_worker_process, web_never_parses):
    membership = MembershipFactory(role=Membership.Role.RESEARCHER)
    api = APIClient()
    api.force_authenticate(membership.user)
    content = LINES + b"\n".join(line for line, _ in DATASET_LINES.values()) + b"\n"
    response = api.post(
        "/api/datasets/",
        {"project": membership.project.pk, "name": "bad", "file": SimpleUploadedFile("bad.jsonl", content)},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    assert response["Location"] == response.json()["url"]
    wait_for(response.json()["id"])
    job = api.get(response["Location"]).json()
    assert job["status"] == "failed" and job["dataset"] is None
    assert [e.split(":")[0] for e in job["errors"]] == [f"line {5001 + n}" for n in range(len(DATASET_LINES))]
    assert not Dataset.objects.filter(name="bad").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["failed", "succeeded"])
def test_a_finished_job_shows_its_status_without_a_phase(client, status):
    """A failed import once read "Failed: Done"; finished, the status says it all (the phase is for a job
    under way, and the page's script hides it too when the job it follows ends)."""
    membership = MembershipFactory(role=Membership.Role.RESEARCHER)
    job = ImportJob.objects.create(
        user=membership.user,
        project=membership.project,
        dataset_name="d",
        filename="d.jsonl",
        size=10,
        status=status,
        phase=ImportJob.Phase.DONE,
        errors=["line 2: source is too long"] if status == "failed" else [],
    )
    client.force_login(membership.user)
    body = client.get(reverse("import-job-detail", args=[job.pk])).content.decode()
    state = body[body.index('class="job-state"') : body.index("</progress>")]
    assert 'data-field="phase-line" hidden' in state
    running = ImportJob.objects.filter(pk=job.pk)
    running.update(status="running", phase=ImportJob.Phase.READING)
    body = client.get(reverse("import-job-detail", args=[job.pk])).content.decode()
    assert '<span data-field="phase-line">: <span data-field="phase">Reading and checking the file</span>' in body
