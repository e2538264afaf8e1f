"""Metric run API: researchers start, follow, cancel and read runs; annotators
never see scores (403); non-members see nothing (404)."""

import pytest
from rest_framework.test import APIClient

from annotations.models import Membership, Project
from metrics.models import MetricRun, RunStatus
from metrics.services import run_execute_sync
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.metrics.conftest import build_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(db):
    project = Project.objects.create(name="Metrics")
    dataset = build_dataset(name="api-ds", items=6, systems=2, project=project)
    users = {}
    for role in ("owner", "researcher", "annotator"):
        users[role] = MembershipFactory(project=project, user=UserFactory(username=f"m-{role}"), role=role).user
    other = Project.objects.create(name="Elsewhere")
    users["outsider"] = MembershipFactory(
        project=other, user=UserFactory(username="m-out"), role=Membership.Role.OWNER
    ).user
    return dataset, users


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_researcher_starts_follows_and_reads_a_run(setup):
    dataset, users = setup
    api = client_for(users["researcher"])
    resp = api.post(
        f"/api/datasets/{dataset.pk}/metric-runs/", {"metric": "chrf", "options": {"word_order": 2}}, format="json"
    )
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["status"] == "queued" and body["total"] == 12 and body["done"] == 0 and body["percent"] == 0
    assert body["options"]["word_order"] == 2 and body["created_by"] == "m-researcher"
    run = run_execute_sync(run=MetricRun.objects.get(pk=body["id"]))  # what a worker would do

    detail = api.get(f"/api/metric-runs/{run.pk}/").json()
    assert detail["status"] == "done" and detail["percent"] == 100.0
    assert detail["corpus"]["score"] == run.corpus["score"] and detail["signature"].startswith("chrf|")
    listing = api.get(f"/api/datasets/{dataset.pk}/metric-runs/").json()
    assert [r["id"] for r in listing["results"]] == [run.pk]
    scores = api.get(f"/api/metric-runs/{run.pk}/scores/").json()
    assert scores["count"] == 12 and {s["system"] for s in scores["results"]} == {"sys-0", "sys-1"}
    assert all(isinstance(s["score"], float) for s in scores["results"])
    # Same request again: the done run is reused (200); rerun makes a new one.
    again = api.post(
        f"/api/datasets/{dataset.pk}/metric-runs/", {"metric": "chrf", "options": {"word_order": "2"}}, format="json"
    )
    assert again.status_code == 200 and again.json()["id"] == run.pk
    rerun = api.post(f"/api/metric-runs/{run.pk}/rerun/")
    assert rerun.status_code == 201 and rerun.json()["id"] != run.pk


def test_bad_metric_or_option_is_400(setup):
    dataset, users = setup
    api = client_for(users["owner"])
    resp = api.post(f"/api/datasets/{dataset.pk}/metric-runs/", {"metric": "chrf", "options": {"x": 1}}, format="json")
    assert resp.status_code == 400 and "unknown option" in resp.json()["detail"]
    resp = api.post(f"/api/datasets/{dataset.pk}/metric-runs/", {"metric": "bogus"}, format="json")
    assert resp.status_code == 400 and "unknown metric" in resp.json()["detail"]


def test_cancel_and_failed_run_message(setup):
    dataset, users = setup
    api = client_for(users["owner"])
    run_id = api.post(f"/api/datasets/{dataset.pk}/metric-runs/", {"metric": "chrf"}, format="json").json()["id"]
    resp = api.post(f"/api/metric-runs/{run_id}/cancel/")
    assert resp.status_code == 200 and resp.json()["status"] == "cancelled"
    assert api.post(f"/api/metric-runs/{run_id}/cancel/").status_code == 409

    body = api.post(
        f"/api/datasets/{dataset.pk}/metric-runs/",
        {"metric": "bertscore", "options": {"model": "missing-model"}},
        format="json",
    ).json()
    run_execute_sync(run=MetricRun.objects.get(pk=body["id"]))
    detail = api.get(f"/api/metric-runs/{body['id']}/").json()
    assert detail["status"] == RunStatus.FAILED
    assert "model 'missing-model': not allowed or not found" in detail["error"]


def test_annotators_and_outsiders_404_everywhere(setup):
    dataset, users = setup
    run = run_execute_sync(
        run=MetricRun.objects.create(dataset=dataset, metric="chrf", total=12, chunk_size=100, sync=True)
    )
    assert run.status == RunStatus.DONE
    urls = [
        ("get", f"/api/datasets/{dataset.pk}/metric-runs/"),
        ("post", f"/api/datasets/{dataset.pk}/metric-runs/"),
        ("get", f"/api/metric-runs/{run.pk}/"),
        ("post", f"/api/metric-runs/{run.pk}/cancel/"),
        ("post", f"/api/metric-runs/{run.pk}/rerun/"),
        ("get", f"/api/metric-runs/{run.pk}/scores/"),
    ]
    for role, code in (("annotator", 404), ("outsider", 404)):  # annotators are confined to their units
        api = client_for(users[role])
        for method, url in urls:
            resp = getattr(api, method)(url, {"metric": "chrf"}, format="json") if method == "post" else api.get(url)
            assert resp.status_code == code, (role, url, resp.status_code)
            assert b"score" not in resp.content.lower() or code == 404
    # Anonymous: 401.
    assert APIClient().get(f"/api/metric-runs/{run.pk}/scores/").status_code == 401
    assert MetricRun.objects.count() == 1
