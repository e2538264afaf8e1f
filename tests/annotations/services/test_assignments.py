"""The assignment engine: seeded order, counterbalanced positions, timeouts, release."""

from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone
from scipy.stats import chi2_contingency

from annotations.models import Assignment, Campaign, Enrolment, RatingJudgement, Unit
from annotations.services.assignment_work import assignment_release
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.judgements import rating_judgement_create
from annotations.services.submissions import unit_submit
from annotations.services.walk import walk_position
from tests.annotations.factories import AnnotatorFactory, DatasetFactory, ItemFactory, OutputFactory, SystemFactory

pytestmark = pytest.mark.django_db


def _dataset(n_items, n_systems):
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"sys-{chr(97 + i)}") for i in range(n_systems)]
    for i in range(n_items):
        item = ItemFactory(dataset=dataset, position=i)
        for system in systems:
            OutputFactory(item=item, system=system)
    return dataset, systems


def _drain(campaign, annotator):
    """Take every unit the annotator can get, marking each done; returns the assignments in order."""
    got = []
    while True:
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        if assignment is None:
            return got
        Assignment.objects.filter(pk=assignment.pk).update(status="done")
        got.append(assignment)


def test_each_annotator_walks_the_pool_in_the_order_of_their_recorded_seed():
    dataset, _ = _dataset(6, 2)
    campaign = campaign_create(
        dataset=dataset,
        name="c",
        protocol="likert",
        criteria=["q"],
        scale_min=1,
        scale_max=5,
        redundancy=3,
        seed=1,
        allocation="spread",
    )
    a, b = AnnotatorFactory(project=dataset.project), AnnotatorFactory(project=dataset.project)
    orders = {}
    for annotator in (a, b):
        got = [x.unit_id for x in _drain(campaign, annotator)]
        enrolment = Enrolment.objects.get(campaign=campaign, annotator=annotator)
        unit_at = dict(Unit.objects.filter(campaign=campaign).values_list("position", "id"))
        # Reproducible from the seed stored on the enrolment: the documented walk, step by step.
        expected = [unit_at[walk_position(enrolment.seed, 12, step)] for step in range(12)]
        assert got == expected
        assert enrolment.walk_step == 12
        assert [x.seq for x in Assignment.objects.filter(annotator=annotator).order_by("id")] == list(range(12))
        orders[annotator.pk] = got
    assert orders[a.pk] != orders[b.pk]  # shuffled per annotator
    assert orders[a.pk] != sorted(orders[a.pk])


@pytest.mark.parametrize("allocation", ["overlap-first", "spread", "adaptive"])
@pytest.mark.parametrize(
    "protocol,n_systems,tuple_size",
    [("pairwise", 4, None), ("bws", 4, 3), ("rankme", 3, 3), ("cesa", 3, 3), ("cesa", 4, 2), ("cesa", 5, 5)],
)
def test_output_positions_are_counterbalanced(protocol, n_systems, tuple_size, allocation):
    """Each system appears about equally often in each position: per annotator within 2
    (each unit's order is chosen greedily as it is handed out, so for pairs the counts can
    drift by 2 before they are evened out; a simulation of 300 annotators never saw more),
    and across the campaign a chi-square test of independence (system x position) does not
    reject balance; the same test does reject a fixed, alphabetical order."""
    dataset, systems = _dataset(8, n_systems)
    kwargs = {"tuple_size": tuple_size} if tuple_size else {}
    campaign = campaign_create(
        dataset=dataset,
        name="cb",
        protocol=protocol,
        criteria=["q"],
        redundancy=6,
        seed=3,
        allocation=allocation,
        **kwargs,
    )
    annotators = [AnnotatorFactory(project=dataset.project) for _ in range(6)]
    system_of = dict(OutputFactory._meta.model.objects.filter(item__dataset=dataset).values_list("id", "system_id"))
    table, naive = defaultdict(Counter), defaultdict(Counter)
    for annotator in annotators:
        mine = defaultdict(Counter)
        for assignment in _drain(campaign, annotator):
            order = assignment.shown_order
            assert sorted(order) == sorted(Unit.objects.get(pk=assignment.unit_id).outputs)
            for position, output_id in enumerate(order):
                mine[system_of[output_id]][position] += 1
                table[system_of[output_id]][position] += 1
            by_name = sorted(order, key=lambda o: system_of[o])  # what an alphabetical page would show
            for position, output_id in enumerate(by_name):
                naive[system_of[output_id]][position] += 1
        width = max(len(c) for c in mine.values())
        for counts in mine.values():
            spread = [counts[p] for p in range(width)]
            assert max(spread) - min(spread) <= 2, dict(counts)
    positions = max(len(c) for c in table.values())
    observed = [[table[s.pk][p] for p in range(positions)] for s in systems]
    assert chi2_contingency(observed).pvalue > 0.5
    fixed = [[naive[s.pk][p] for p in range(positions)] for s in systems]
    assert chi2_contingency([[v + 1 for v in row] for row in fixed]).pvalue < 1e-6


def test_a_timed_out_assignment_returns_to_the_pool_and_its_partial_work_is_abandoned():
    dataset, _ = _dataset(1, 1)
    campaign = campaign_create(
        dataset=dataset,
        name="t",
        protocol="likert",
        criteria=["f", "a"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        assignment_timeout_minutes=5,
    )
    late, other = AnnotatorFactory(project=dataset.project), AnnotatorFactory(project=dataset.project)
    assignment, created = assignment_next(campaign=campaign, annotator=late)
    output = dataset.items.get().outputs.get()
    rating_judgement_create(
        campaign=campaign,
        annotator=late,
        output=output,
        criterion="f",
        score=3,
        assignment=assignment,
        status="partial",
    )
    assert assignment_next(campaign=campaign, annotator=other) == (None, False)  # the only slot is taken
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    taken, created = assignment_next(campaign=campaign, annotator=other)
    assert created and taken.unit_id == assignment.unit_id
    assignment.refresh_from_db()
    assert assignment.status == "expired"
    partial = RatingJudgement.objects.get(annotator=late)
    assert partial.status == "abandoned"  # kept, never counted
    # Coming back too late: the slot is someone else's now.
    with pytest.raises(ValidationError, match="handed to another annotator"):
        unit_submit(
            annotator=late,
            assignment_id=assignment.pk,
            judgements=[
                {"criterion": "f", "output": output.pk, "score": 3},
                {"criterion": "a", "output": output.pk, "score": 4},
            ],
        )
    unit_submit(
        annotator=other,
        assignment_id=taken.pk,
        judgements=[
            {"criterion": "f", "output": output.pk, "score": 5},
            {"criterion": "a", "output": output.pk, "score": 5},
        ],
    )
    unit = Unit.objects.get(pk=taken.unit_id)
    assert (unit.n_taken, unit.n_done) == (1, 1)
    counted = RatingJudgement.objects.filter(status="complete")
    assert set(counted.values_list("annotator_id", flat=True)) == {other.pk} and counted.count() == 2


def test_coming_back_after_the_timeout_still_counts_when_the_slot_is_free():
    dataset, _ = _dataset(1, 1)
    campaign = campaign_create(
        dataset=dataset, name="t", protocol="likert", criteria=["f"], scale_min=1, scale_max=5, redundancy=1
    )
    annotator = AnnotatorFactory(project=dataset.project)
    assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    AnnotatorFactory(project=dataset.project)  # nobody else asks
    from annotations.services.assignments import assignments_expire

    assert assignments_expire(campaign=campaign) == 1
    output = dataset.items.get().outputs.get()
    result = unit_submit(
        annotator=annotator,
        assignment_id=assignment.pk,
        judgements=[{"criterion": "f", "output": output.pk, "score": 2}],
    )
    assert result.assignment.status == "done"
    unit = Unit.objects.get(pk=assignment.unit_id)
    assert (unit.n_taken, unit.n_done) == (1, 1)


def test_release_gives_the_unit_back_and_never_again_to_the_same_annotator():
    dataset, _ = _dataset(2, 1)
    campaign = campaign_create(
        dataset=dataset, name="r", protocol="likert", criteria=["f"], scale_min=1, scale_max=5, redundancy=1
    )
    annotator, other = AnnotatorFactory(project=dataset.project), AnnotatorFactory(project=dataset.project)
    first, _ = assignment_next(campaign=campaign, annotator=annotator)
    assignment_release(assignment_id=first.pk, annotator=annotator)
    first.refresh_from_db()
    assert first.status == "released" and Unit.objects.get(pk=first.unit_id).n_taken == 0
    second, _ = assignment_next(campaign=campaign, annotator=annotator)
    assert second.unit_id != first.unit_id
    Assignment.objects.filter(pk=second.pk).update(status="done")
    assert assignment_next(campaign=campaign, annotator=annotator) == (None, False)
    taken, _ = assignment_next(campaign=campaign, annotator=other)
    assert taken.unit_id == first.unit_id


def test_units_taken_when_the_walk_reaches_them_are_passed_and_the_rest_found_by_the_full_scan():
    """An annotator arriving late: most of the campaign is taken, so the windows of
    their walk hold nothing and the full scan hands out what is left, exactly once."""
    dataset, _ = _dataset(50, 2)
    campaign = campaign_create(
        dataset=dataset,
        name="late",
        protocol="likert",
        criteria=["f"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        allocation="spread",
    )
    assert campaign.n_units == 100
    early, late = AnnotatorFactory(project=dataset.project), AnnotatorFactory(project=dataset.project)
    for _ in range(95):
        assignment, created = assignment_next(campaign=campaign, annotator=early)
        assert created
        Assignment.objects.filter(pk=assignment.pk).update(status="done")
    left = set(Unit.objects.filter(campaign=campaign, n_taken=0).values_list("id", flat=True))
    assert len(left) == 5
    got = [a.unit_id for a in _drain(campaign, late)]
    assert sorted(got) == sorted(left)
    assert Enrolment.objects.get(campaign=campaign, annotator=late).walk_step > 0
    assert not Unit.objects.filter(campaign=campaign, n_taken=0).exists()
    assert Assignment.objects.filter(campaign=campaign).count() == 100  # nothing handed out twice


@pytest.mark.parametrize("allocation", ["overlap-first", "spread", "adaptive"])
def test_a_walk_over_units_planned_some_other_way_falls_back_to_the_full_scan(allocation):
    """Campaigns whose regular units do not hold positions 0..n-1 (n_units unknown) still work."""
    dataset, _ = _dataset(3, 2)
    campaign = campaign_create(
        dataset=dataset,
        name="old",
        protocol="likert",
        criteria=["f"],
        scale_min=1,
        scale_max=5,
        redundancy=2,
        allocation=allocation,
    )
    Campaign.objects.filter(pk=campaign.pk).update(n_units=None)
    campaign.refresh_from_db()
    annotators = [AnnotatorFactory(project=dataset.project) for _ in range(3)]
    got = {a.pk: [x.unit_id for x in _drain(campaign, a)] for a in annotators}
    assert all(len(set(units)) == len(units) for units in got.values())
    assert sum(len(units) for units in got.values()) == 12  # 6 units x k = 2
