"""The progress counters (`UnitCount`, kept by the triggers of migration 0027) equal a recount of the
units after planning, submits, a release, a change of n_done by hand, deletions and a campaign's
deletion; the progress page and the annotator's bar read them."""

import random

import pytest
from django.db.models import Count

from annotations.models import Campaign, Membership, Output, Unit, UnitCount
from annotations.selectors.dashboards import unit_counts, unit_progress
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
