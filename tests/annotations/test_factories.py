"""The factories build rows the database accepts and that hang together (what the
tests relying on them assume): one campaign's dataset, project and scale throughout."""

import pytest
from django.db import IntegrityError, transaction

from annotations.models import Assignment, Unit
from tests.annotations.factories import (
    AssignmentFactory,
    BestWorstJudgementFactory,
    CampaignFactory,
    ErrorSpanFactory,
    ItemFactory,
    OutputFactory,
    PairwiseJudgementFactory,
    RatingJudgementFactory,
    SpanJudgementFactory,
    SystemFactory,
    UnitFactory,
)

pytestmark = pytest.mark.django_db


def test_unit_holds_its_items_outputs_and_assignments_are_counted():
    campaign = CampaignFactory(redundancy=2)
    item = ItemFactory(dataset=campaign.dataset)
    outputs = [OutputFactory(item=item, system=SystemFactory(dataset=campaign.dataset)) for _ in range(3)]
    unit = UnitFactory(campaign=campaign, item=item)
    assert unit.outputs == sorted(o.pk for o in outputs)
    assert unit.systems == [o.system_id for o in sorted(outputs, key=lambda o: o.pk)]
    assert unit.redundancy == 2

    first = AssignmentFactory(unit=unit, status=Assignment.Status.DONE)
    second = AssignmentFactory(unit=unit)
    assert first.campaign == second.campaign == campaign and first.item == item
    assert first.annotator != second.annotator
    assert first.annotator.project == second.annotator.project == campaign.dataset.project
    assert first.shown_order == unit.outputs
    unit.refresh_from_db()
    assert (unit.n_taken, unit.n_done) == (2, 1)
    # A third live assignment is one more than k: the database refuses it.
    with pytest.raises(IntegrityError, match="unit_at_most_k_assignments"), transaction.atomic():
        AssignmentFactory(unit=unit)
    AssignmentFactory(unit=unit, status=Assignment.Status.RELEASED)  # not live: not counted
    assert Unit.objects.get(pk=unit.pk).n_taken == 2


def test_judgements_are_of_their_campaigns_dataset_and_scale():
    rating = RatingJudgementFactory(campaign=CampaignFactory(scale_min=0, scale_max=100, criteria=["meaning"]))
    assert rating.output.item.dataset == rating.campaign.dataset == rating.item.dataset
    assert (rating.scale_min, rating.scale_max, rating.score, rating.criterion) == (0, 100, 100, "meaning")
    assert rating.annotator.project == rating.campaign.dataset.project

    pair = PairwiseJudgementFactory()
    assert pair.campaign.protocol == "pairwise"
    assert pair.output_a.item == pair.output_b.item == pair.item and pair.output_a.pk < pair.output_b.pk
    assert pair.output_a.system != pair.output_b.system

    bws = BestWorstJudgementFactory()
    assert bws.outputs == sorted([bws.best.pk, bws.worst.pk]) and bws.tuple_key == "-".join(map(str, bws.outputs))

    span = ErrorSpanFactory(judgement=SpanJudgementFactory(score=30))
    marker = ErrorSpanFactory(judgement=span.judgement, missing_content=True, severity="major")
    assert span.judgement.campaign.protocol == "esa"
    assert list(span.judgement.spans.order_by("id").values_list("start", "end", "severity", "missing")) == [
        (0, 1, "minor", False),
        (None, None, "major", True),
    ]
    assert marker.judgement.scale_max == 100


def test_a_score_off_the_campaigns_scale_is_refused_by_the_database():
    campaign = CampaignFactory(scale_min=1, scale_max=5)
    with pytest.raises(IntegrityError, match="rating_score_below_max"), transaction.atomic():
        RatingJudgementFactory(campaign=campaign, score=6)
