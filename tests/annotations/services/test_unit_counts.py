"""The progress counters (`UnitCount`, kept by the triggers of migration 0027) equal a recount of the
units after planning, submits, a release, a change of n_done by hand, deletions and a campaign's
deletion; the progress page and the annotator's bar read them."""

import random
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.db.models import Count
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from annotations.models import Assignment, Campaign, Membership, Output, RatingJudgement, Unit, UnitCount
from annotations.selectors.dashboards import unit_counts, unit_progress
from annotations.services import progress
from annotations.services.assignment_work import assignment_release
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import (
    AnnotatorFactory,
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)


def _recount(campaign) -> dict[int, int]:
    rows = Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR).values_list("n_done").annotate(n=Count("id"))
    return {done: n for done, n in rows}


def _campaign(n_items=6, k=3):
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"s{i}") for i in range(3)]
    for i in range(n_items):
        item = ItemFactory(dataset=dataset, position=i)
        for system in systems:
            OutputFactory(item=item, system=system, text=f"output {i} {system.name}")
    campaign = campaign_create(
        dataset=dataset, name="counted", protocol="likert", criteria=["q"], scale_min=0, scale_max=100, redundancy=k
    )
    return dataset, campaign


def _submit(assignment, annotator):
    unit_submit(
        annotator=annotator,
        assignment_id=assignment.pk,
        judgements=[{"criterion": "q", "output": o, "score": 50} for o in assignment.shown_order],
        shown_order=assignment.shown_order,
    )


@pytest.mark.django_db
def test_counters_follow_planning_submits_releases_and_deletions():
    dataset, campaign = _campaign()
    assert unit_counts(campaign=campaign) == _recount(campaign) == {0: 18}
    annotators = [AnnotatorFactory(project=dataset.project) for _ in range(4)]
    rng = random.Random(7)
    released = 0
    for step in range(30):
        annotator = rng.choice(annotators)
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        if assignment is None:
            continue
        if step % 7 == 3:
            assignment_release(assignment_id=assignment.pk, annotator=annotator)
            released += 1
            continue
        _submit(assignment, annotator)
        assert unit_counts(campaign=campaign) == _recount(campaign)
    assert released and sum(d * n for d, n in unit_counts(campaign=campaign).items()) > 10
    # Any statement that changes n_done or kind moves its units; deletions take them away.
    unit = Unit.objects.filter(campaign=campaign).order_by("position").first()
    Unit.objects.filter(pk=unit.pk).update(n_done=0, n_taken=0)
    assert unit_counts(campaign=campaign) == _recount(campaign)
    Unit.objects.filter(campaign=campaign, position__lt=4).update(kind=Unit.Kind.DEGRADED)
    assert unit_counts(campaign=campaign) == _recount(campaign)
    Unit.objects.filter(campaign=campaign, position__gte=15).delete()
    assert unit_counts(campaign=campaign) == _recount(campaign)
    progress = unit_progress(campaign=campaign)
    recount = _recount(campaign)
    assert progress["units"] == sum(recount.values())
    assert progress["complete"] == progress["agreement_units"] == recount.get(3, 0)
    assert progress["unit_judgements"] == {
        "done": sum(d * n for d, n in recount.items()),
        "planned": 3 * sum(recount.values()),
    }
    # A campaign's deletion deletes its counters (the delete trigger never inserts).
    campaign_id = campaign.pk
    Campaign.objects.filter(pk=campaign_id).delete()
    assert not UnitCount.objects.filter(campaign_id=campaign_id).exists()


@pytest.mark.django_db
def test_progress_reads_the_counters_not_the_units(client):
    """The page's progress JSON follows a counter changed alone: it reads the counters (a recount of
    the units would still say 0 complete)."""
    dataset, campaign = _campaign(n_items=2, k=2)
    staff = UserFactory()
    MembershipFactory(project=dataset.project, user=staff, role=Membership.Role.RESEARCHER)
    client.force_login(staff)
    assert client.get(f"/campaigns/{campaign.pk}/progress.json").json()["complete"] == 0
    UnitCount.objects.filter(campaign=campaign, n_done=0, units__gt=0).update(n_done=2)
    body = client.get(f"/campaigns/{campaign.pk}/progress.json").json()
    assert body["complete"] == body["agreement_units"] == 6 and body["percent"] == 100
    assert [r["units"] for r in body["by_judgements"]] == [0, 0, 6]
    assert Output.objects.filter(item__dataset=dataset).count() == 6


def _scans(queries) -> list[str]:
    """Statements reading the campaign's units, assignments or judgements, but the state probes
    (`MAX(updated_at)`) and the bounded size check (`LIMIT`)."""
    found = []
    for q in queries:
        sql = q["sql"]
        if not re.search(r"\bannotations_(unit|assignment|ratingjudgement)\b", sql):
            continue
        if "MAX(" in sql.upper() and "UPDATED_AT" in sql.upper() or " LIMIT " in sql:
            continue
        found.append(sql[:300])
    return found


@pytest.mark.django_db
@override_settings(WORKBENCH_FIGURES_INLINE_MAX=3)
def test_a_large_campaigns_progress_tables_come_from_a_worker(client, monkeypatch):
    """Above WORKBENCH_FIGURES_INLINE_MAX judgements the progress page scans none of the campaign's
    units, assignments or judgements (7.7-8.8 s at a million, on every change of the campaign): the
    counters are current, the tables per annotator and system come from a worker, shown with their age
    while the next are computed."""
    cache.clear()
    dataset, campaign = _campaign(n_items=4, k=2)
    staff = UserFactory()
    MembershipFactory(project=dataset.project, user=staff, role=Membership.Role.RESEARCHER)
    client.force_login(staff)
    annotators = [AnnotatorFactory(project=dataset.project) for _ in range(3)]
    for step in range(6):
        assignment, _ = assignment_next(campaign=campaign, annotator=annotators[step % 3])
        _submit(assignment, annotators[step % 3])
    sent = []
    monkeypatch.setattr(progress.celery_app, "send_task", lambda name, args, **kw: sent.append((name, args)))
    url = f"/campaigns/{campaign.pk}/progress.json"

    def done_by_annotator():
        rows = Assignment.objects.filter(campaign=campaign, status="done").values_list("annotator__name")
        return dict(rows.annotate(n=Count("id")))

    with CaptureQueriesContext(connection) as queries:
        body = client.get(url).json()
    assert _scans(queries.captured_queries) == []
    assert body["detail"]["pending"] and body["annotators"] == [] and body["judgements"]["complete"] is None
    assert body["unit_judgements"]["done"] == 6  # the counters (units x judgements done): current without the worker
    assert sent == [(progress.PROGRESS_TASK, [campaign.pk])]
    with CaptureQueriesContext(connection) as queries:
        page = client.get(f"/campaigns/{campaign.pk}/")
    assert _scans(queries.captured_queries) == [] and "progress-detail-state" in page.content.decode()
    assert len(sent) == 1, "one computation per campaign at a time"

    assert progress.progress_compute(campaign_id=campaign.pk)
    body = client.get(url).json()
    assert not body["detail"]["pending"] and not body["detail"]["stale"]
    assert (
        {r["annotator"]: r["done"] for r in body["annotators"]}
        == done_by_annotator()
        == {a.name: 2 for a in annotators}
    )
    assert body["judgements"]["complete"] == RatingJudgement.objects.filter(campaign=campaign).count() == 6

    # A submit: the last tables with their age, and the next computation asked for.
    assignment, _ = assignment_next(campaign=campaign, annotator=annotators[0])
    _submit(assignment, annotators[0])
    with CaptureQueriesContext(connection) as queries:
        body = client.get(url).json()
    assert _scans(queries.captured_queries) == []
    assert body["detail"]["stale"] and body["detail"]["computed_at"]
    assert body["unit_judgements"]["done"] == 7
    assert {r["annotator"]: r["done"] for r in body["annotators"]}[annotators[0].name] == 2
    assert len(sent) == 2
    progress.progress_compute(campaign_id=campaign.pk)
    body = client.get(url).json()
    assert not body["detail"]["stale"]
    assert {r["annotator"]: r["done"] for r in body["annotators"]} == done_by_annotator()


@pytest.mark.django_db
def test_a_small_campaigns_progress_is_computed_in_the_request(client, monkeypatch):
    cache.clear()
    dataset, campaign = _campaign(n_items=2, k=2)
    staff = UserFactory()
    MembershipFactory(project=dataset.project, user=staff, role=Membership.Role.RESEARCHER)
    client.force_login(staff)
    sent = []
    monkeypatch.setattr(progress.celery_app, "send_task", lambda name, args, **kw: sent.append((name, args)))
    body = client.get(f"/campaigns/{campaign.pk}/progress.json").json()
    assert not body["detail"]["pending"] and not sent
    assert body["judgements"] == {"complete": 0, "partial": 0, "abandoned": 0}
    assert [r["units"] for r in body["systems"]] == [2, 2, 2]
