"""Exports started through the API and the pages: researchers only, written by the worker's service,
downloaded as a zip streamed from disk."""

import io
import zipfile

import pytest
from django.http import FileResponse
from rest_framework.test import APIClient

from annotations.export.jobs import export_job_run
from annotations.models import Membership, Project
from annotations.models.exports import ExportJob
from tests.annotations.export.test_export import likert  # noqa: F401  (fixture)
from tests.annotations.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(likert):  # noqa: F811
    project = Project.objects.get(name="toy")
    users = {}
    for role in ("owner", "researcher", "annotator"):
        users[role] = UserFactory(username=f"{role}-x")
        Membership.objects.create(project=project, user=users[role], role=role)
    users["outsider"] = UserFactory(username="outsider-x")
    return likert[0], users


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_researcher_starts_follows_and_downloads_an_export(people):
    campaign, users = people
    client = _client(users["researcher"])
    answer = client.post(
        f"/api/campaigns/{campaign.pk}/exports/",
        {"format": "csv", "criteria": ["fluency"], "licence": "cc-by-4.0"},
        format="json",
    )
    assert answer.status_code == 202, answer.content
    job = ExportJob.objects.get(pk=answer.json()["id"])
    assert job.status == "queued" and answer.json()["download_url"] is None

    assert export_job_run(job_id=job.pk).status == "succeeded"
    assert export_job_run(job_id=job.pk) is None  # a duplicated task does nothing
    detail = client.get(f"/api/exports/{job.pk}/").json()
    assert detail["status"] == "succeeded" and detail["progress"] == 1.0
    assert detail["result"]["judgements"] == 72  # fluency only: half of the 144 judgements
    download = client.get(detail["download_url"])
    assert download.status_code == 200 and isinstance(download, FileResponse)  # streamed from disk
    assert download["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    assert sorted(archive.namelist()) == sorted(
        f"toy-likert/{n}"
        for n in (
            "README.md",
            "campaign.json",
            "croissant.json",
            "dataset.csv",
            "heds.json",
            "judgements.csv",
            "outputs.csv",
        )
    )
    assert "cc-by-4.0" in archive.read("toy-likert/README.md").decode()

    api_download = client.get(f"/api/exports/{job.pk}/download/")
    assert api_download.status_code == 200


@pytest.mark.parametrize("role,status", [("annotator", 404), ("outsider", 404), ("owner", 202)])
def test_only_owners_and_researchers_export(people, role, status):
    campaign, users = people
    answer = _client(users[role]).post(f"/api/campaigns/{campaign.pk}/exports/", {}, format="json")
    assert answer.status_code == status


def test_jobs_and_downloads_are_hidden_from_annotators_and_outsiders(people, client):
    campaign, users = people
    job = ExportJob.objects.create(campaign=campaign, user=users["researcher"], options={"format": "jsonl"})
    export_job_run(job_id=job.pk)
    for role in ("annotator", "outsider"):
        api = _client(users[role])
        assert api.get(f"/api/exports/{job.pk}/").status_code == 404
        assert api.get(f"/api/exports/{job.pk}/download/").status_code == 404
        client.force_login(users[role])
        assert client.get(f"/exports/{job.pk}/download/").status_code == 404
        assert client.get(f"/exports/{job.pk}/").status_code == 404
    client.force_login(users["annotator"])
    assert client.get(f"/campaigns/{campaign.pk}/export/").status_code == 404  # confined to their units
    client.force_login(users["outsider"])
    assert client.get(f"/campaigns/{campaign.pk}/export/").status_code == 404


def test_bad_options_are_refused_before_queueing(people):
    campaign, users = people
    answer = _client(users["researcher"]).post(
        f"/api/campaigns/{campaign.pk}/exports/", {"systems": ["nope"], "min_consensus": 2}, format="json"
    )
    assert answer.status_code == 400
    answer = _client(users["researcher"]).post(
        f"/api/campaigns/{campaign.pk}/exports/", {"systems": ["nope"]}, format="json"
    )
    assert answer.status_code == 400 and "has no system 'nope'" in answer.content.decode()
    assert not ExportJob.objects.exists()


def test_export_page_starts_a_job(people, client):
    campaign, users = people
    client.force_login(users["researcher"])
    page = client.get(f"/campaigns/{campaign.pk}/")
    assert f'href="/campaigns/{campaign.pk}/export/"' in page.content.decode()
    answer = client.post(
        f"/campaigns/{campaign.pk}/export/", {"format": "hf", "systems": ["A", "B"], "included_only": "on"}
    )
    job = ExportJob.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/exports/{job.pk}/"
    assert job.options["systems"] == ["A", "B"] and job.options["included_only"] is True
    assert client.get(f"/exports/{job.pk}/").status_code == 200
    assert client.get(f"/exports/{job.pk}/download/").status_code == 404  # not written yet


def test_an_mtme_export_job_zips_the_test_sets_folder_tree(people):
    campaign, users = people
    client = _client(users["researcher"])
    answer = client.post(f"/api/campaigns/{campaign.pk}/exports/", {"format": "mtme"}, format="json")
    assert answer.status_code == 202, answer.content
    assert export_job_run(job_id=answer.json()["id"]).status == "succeeded"
    detail = client.get(f"/api/exports/{answer.json()['id']}/").json()
    archive = zipfile.ZipFile(io.BytesIO(b"".join(client.get(detail["download_url"]).streaming_content)))
    names = set(archive.namelist())
    # mt-metrics-eval's layout under <campaign>/, the campaign's name made file-safe (toy_likert).
    assert {
        "toy-likert/toy_likert/meta_info.json",
        "toy-likert/toy_likert/sources/src-tgt.txt",
        "toy-likert/toy_likert/references/src-tgt.refB.txt",
        "toy-likert/toy_likert/system-outputs/src-tgt/A.txt",
        "toy-likert/toy_likert/human-scores/src-tgt.toy_likert.seg.score",
    } <= names


def test_a_queued_export_says_what_it_waits_for(people, client):
    """The export waits for a worker of the default queue behind what was sent before it: earlier
    exports and metric runs of that queue (a queued run's prepare task counts one); once a worker
    writes it, no reason is left."""
    from metrics.models import MetricRun

    campaign, users = people
    api = _client(users["researcher"])
    first = api.post(f"/api/campaigns/{campaign.pk}/exports/", {"format": "csv"}, format="json").json()
    assert first["waiting"] == (
        "queued: waiting for a worker of the cpu queue; 0 tasks of earlier exports, imports and metric runs ahead"
    )
    MetricRun.objects.create(dataset=campaign.dataset, metric="chrf", total=12, chunk_size=100)
    second = api.post(f"/api/campaigns/{campaign.pk}/exports/", {"format": "csv"}, format="json").json()
    assert second["waiting"].endswith("; 2 tasks of earlier exports, imports and metric runs ahead")

    client.force_login(users["researcher"])
    page = client.get(second["page_url"]).content.decode()
    assert "2 tasks of earlier exports, imports and metric runs ahead" in page

    assert export_job_run(job_id=second["id"]).status == "succeeded"
    assert api.get(second["url"]).json()["waiting"] is None
    page = client.get(second["page_url"]).content.decode()
    assert 'data-field="waiting" hidden' in page
