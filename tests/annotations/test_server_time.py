"""The time an annotator spent on a unit is measured on the server (issue 20, part 4).

No test sleeps or trusts a quiet wall clock: the moment a unit was handed out is moved back by a
known amount (`tests.annotations.server_time.worked`), and a measure must be at least that amount
and no more than it plus the test's own requests (`about`).
"""

import importlib
import json
from datetime import datetime, timedelta, timezone

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Assignment, Item, Membership, RatingJudgement
from annotations.models.quality import QualitySettings
from annotations.quality.selectors import campaign_quality
from annotations.services.assignment_work import assignment_time_ms
from annotations.services.assignments import assignments_expire
from annotations.services.campaigns import campaign_create
from tests.annotations.export.conftest import read_jsonl, run
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.annotations.server_time import SLACK_MS, about, worked

pytestmark = pytest.mark.django_db

AN_HOUR_MS = 3_600_000


@pytest.fixture
def study():
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=name) for name in ("alpha", "beta")]
    for i in range(4):
        item = ItemFactory(dataset=dataset, position=i, source=f"source {i}")
        for system in systems:
            OutputFactory(item=item, system=system, text=f"{system.name} says {i}")
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    campaign = campaign_create(
        dataset=dataset,
        name="timed",
        protocol="likert",
        criteria=["fluency", "adequacy"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
    )
    api = APIClient()
    api.force_authenticate(user)
    page = Client()
    page.force_login(user)
    return campaign, api, page


def _hand_out(api, campaign) -> dict:
    got = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
    assert got.status_code in (200, 201), got.content
    return got.json()


def _answers(body) -> list[dict]:
    return [
        {"criterion": c, "output": o["id"], "score": 4}
        for o in body["item"]["outputs"]
        for c in ("fluency", "adequacy")
    ]


def _submit(api, body, time_spent_ms=None):
    payload = {"judgements": _answers(body), "shown_order": body["shown_order"]}
    if time_spent_ms is not None:
        payload["time_spent_ms"] = time_spent_ms
    done = api.post(f"/api/assignments/{body['id']}/submit/", payload, format="json")
    assert done.status_code == 201, done.content
    return Assignment.objects.get(pk=body["id"])


def test_a_client_claiming_an_hour_is_measured_by_the_server_in_quality_control_and_the_export(study, tmp_path):
    """3,600,000 ms reported right after the hand-out: stored, exported and judged by quality control
    is the server's figure (a few seconds), and the client's figure is not kept."""
    campaign, api, _ = study
    # Quality control's time rule: a median under 20 s a unit excludes the annotator. An hour would pass it.
    QualitySettings.objects.create(campaign=campaign, rules={"max_p": None, "min_median_seconds": 20})
    measured = []
    for _ in range(4):
        body = _hand_out(api, campaign)
        worked(body["id"], 2500)
        assignment = _submit(api, body, time_spent_ms=AN_HOUR_MS)
        assert about(assignment.time_spent_ms, 2500)
        assert assignment.client_time_ms is None  # more than the server measured: not plausible, dropped
        judgements = RatingJudgement.objects.filter(assignment=assignment)
        assert judgements.exists() and {j.time_spent_ms for j in judgements} == {assignment.time_spent_ms}
        measured.append(assignment.time_spent_ms)

    (quality,) = campaign_quality(campaign=campaign).values()
    assert 2.5 <= quality.figures.median_seconds <= 2.5 + SLACK_MS / 1000
    assert not quality.included and "median seconds per unit" in str(quality.rule_verdict)

    out = tmp_path / "export"
    run("export_dataset", "--campaign", campaign.name, "--out", str(out))
    exported = read_jsonl(out / "judgements.jsonl")
    assert len(exported) == 2 * len(measured)  # two criteria a unit
    assert sorted(j["time_spent_ms"] for j in exported) == sorted(measured * 2)
    assert all(j["time_spent_ms"] < AN_HOUR_MS for j in exported)
    assert {j["provenance"]["time_measured_by"] for j in exported} == {"server"}
    assert "measured on the workbench's server" in (out / "README.md").read_text(encoding="utf-8")


def test_a_plausible_client_figure_is_kept_apart_and_never_replaces_the_servers(study):
    campaign, api, _ = study
    body = _hand_out(api, campaign)
    worked(body["id"], 3000)
    assignment = _submit(api, body, time_spent_ms=2000)
    assert about(assignment.time_spent_ms, 3000)
    assert assignment.client_time_ms == 2000
    assert set(RatingJudgement.objects.filter(assignment=assignment).values_list("time_spent_ms", flat=True)) == {
        assignment.time_spent_ms
    }


def test_the_measure_is_in_milliseconds_not_seconds():
    """The figure from hand-out to submit, to the millisecond (the old client figure came in one-second steps)."""
    start = datetime(2026, 1, 5, 9, 0, 0, tzinfo=timezone.utc)
    assignment = Assignment(active_since=start, server_time_ms=0, expires_at=start + timedelta(minutes=30))
    assert assignment_time_ms(assignment=assignment, now=start + timedelta(milliseconds=1234, microseconds=900)) == 1234
    assert assignment_time_ms(assignment=assignment, now=start + timedelta(milliseconds=7)) == 7
    # Closed stretches add up; a clock running backwards never subtracts.
    assignment.server_time_ms = 40_001
    assert assignment_time_ms(assignment=assignment, now=start + timedelta(milliseconds=999)) == 41_000
    assert assignment_time_ms(assignment=assignment, now=start - timedelta(seconds=1)) == 40_001
    # Not being worked on (released): only the closed stretches.
    assignment.active_since = None
    assert assignment_time_ms(assignment=assignment, now=start + timedelta(hours=1)) == 40_001
    # Past the deadline the unit was given up: that time never counts.
    assignment.active_since, assignment.server_time_ms = start, 0
    assert assignment_time_ms(assignment=assignment, now=start + timedelta(hours=5)) == 30 * 60 * 1000


def test_the_page_submit_stores_the_servers_milliseconds(study):
    """The annotate page's submit (annotate-submit): hand-out -> submit, measured on the server."""
    campaign, api, page = study
    body = _hand_out(api, campaign)
    worked(body["id"], 1234)
    ok = page.post(
        reverse("annotate-submit", args=[body["id"]]),
        json.dumps({"judgements": _answers(body), "shown_order": body["shown_order"], "time_spent_ms": AN_HOUR_MS}),
        content_type="application/json",
    )
    assert ok.status_code == 201, ok.content
    assignment = Assignment.objects.get(pk=body["id"])
    assert about(assignment.time_spent_ms, 1234) and assignment.client_time_ms is None
    judgements = RatingJudgement.objects.filter(assignment=assignment)
    assert {(j.origin, j.time_spent_ms) for j in judgements} == {("browser", assignment.time_spent_ms)}


def test_a_reload_resumes_the_clock(study):
    campaign, api, _ = study
    body = _hand_out(api, campaign)
    worked(body["id"], 1500)
    again = _hand_out(api, campaign)  # a reload: the same pending unit
    assert again["id"] == body["id"]
    resumed = Assignment.objects.get(pk=body["id"])
    assert about(resumed.server_time_ms, 1500) and resumed.active_since is not None
    worked(body["id"], 1000)
    assert about(_submit(api, body).time_spent_ms, 2500)


def test_a_released_unit_taken_back_counts_both_stretches_and_not_the_pause(study):
    """Released after 2 s, then taken back by a judgement sent for it one at a time
    (`/api/judgements/ratings/`), 3 s more: 5 s, whatever the client says."""
    campaign, api, _ = study
    body = _hand_out(api, campaign)
    worked(body["id"], 2000)
    assert api.post(f"/api/assignments/{body['id']}/release/").json()["status"] == "released"
    released = Assignment.objects.get(pk=body["id"])
    assert about(released.server_time_ms, 2000) and released.active_since is None

    (output,) = [o["id"] for o in body["item"]["outputs"]]

    def rate(criterion):
        sent = api.post(
            "/api/judgements/ratings/",
            {
                "campaign": campaign.pk,
                "output": output,
                "criterion": criterion,
                "score": 3,
                "time_spent_ms": AN_HOUR_MS,
            },
            format="json",
        )
        assert sent.status_code == 201, sent.content
        return sent.json()

    first = rate("fluency")  # takes the unit back: its clock starts again
    assert about(first["time_spent_ms"], 2000) and first["status"] == "partial"
    worked(body["id"], 3000)
    last = rate("adequacy")
    assert about(last["time_spent_ms"], 5000) and last["status"] == "complete"
    done = Assignment.objects.get(pk=body["id"])
    assert done.status == "done" and about(done.time_spent_ms, 5000) and done.time_spent_ms < AN_HOUR_MS


def test_an_expired_unit_counts_up_to_its_deadline_then_from_when_it_is_taken_back(study):
    campaign, api, _ = study
    body = _hand_out(api, campaign)
    # Handed out 10 minutes ago with a deadline 4 s after the hand-out: it timed out long ago.
    handed = Assignment.objects.get(pk=body["id"]).active_since - timedelta(minutes=10)
    Assignment.objects.filter(pk=body["id"]).update(active_since=handed, expires_at=handed + timedelta(seconds=4))
    assert assignments_expire(campaign=campaign) == 1
    assignment = _submit(api, body)  # taken back at the submit: the 10 minutes past the deadline do not count
    assert about(assignment.time_spent_ms, 4000)


def test_imported_judgements_keep_the_imported_time(study, tmp_path):
    campaign, _, _ = study
    dataset_item = Item.objects.filter(dataset=campaign.dataset).order_by("position").first()
    line = {
        "item": dataset_item.external_id,
        "system": "alpha",
        "annotator": "worker-1",
        "criterion": "fluency",
        "score": 4,
        "time_spent_ms": 987_654,
    }
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    run("import_judgements", str(path), "--campaign", campaign.name)
    assert RatingJudgement.objects.get(origin="import").time_spent_ms == 987_654
    out = tmp_path / "export"
    run("export_dataset", "--campaign", campaign.name, "--out", str(out))
    (row,) = read_jsonl(out / "judgements.jsonl")
    assert row["time_spent_ms"] == 987_654 and row["provenance"]["time_measured_by"] == "import"


def test_the_migration_starts_the_clock_of_units_open_at_the_upgrade_at_their_hand_out():
    from django.apps import apps

    from tests.annotations.factories import AssignmentFactory

    pending = AssignmentFactory(active_since=None)
    done = AssignmentFactory(status=Assignment.Status.DONE, time_spent_ms=4000)
    importlib.import_module("annotations.migrations.0008_server_time").pending_active(apps, None)
    pending.refresh_from_db()
    done.refresh_from_db()
    assert pending.active_since == pending.created_at
    assert done.active_since is None and done.time_spent_ms == 4000
