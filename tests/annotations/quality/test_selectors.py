"""Figures computed from stored rows (judgements and control answers written directly)."""

import random

import pytest
from scipy import stats

from annotations.models import RatingJudgement
from annotations.models.quality import ControlJudgement, ControlUnit
from annotations.quality.selectors import annotator_filter, campaign_quality, included_annotators
from annotations.quality.services import annotator_decide, quality_settings_update
from tests.annotations.factories import (
    AnnotatorFactory,
    CampaignFactory,
    ItemFactory,
    OutputFactory,
    RatingJudgementFactory,
    SystemFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    campaign = CampaignFactory(scale_min=0, scale_max=100, criteria=["quality"])
    dataset = campaign.dataset
    systems = [SystemFactory(dataset=dataset) for _ in range(3)]
    outputs = [OutputFactory(item=ItemFactory(dataset=dataset), system=s) for _ in range(12) for s in systems]
    rng = random.Random(1)
    truth = {o.pk: rng.uniform(20, 90) for o in outputs}
    people = {"careful-1": "careful", "careful-2": "careful", "careful-3": "careful", "careless": "careless"}
    annotators = {}
    scores = {}
    for name, style in people.items():
        annotator = AnnotatorFactory(project=dataset.project, name=name)
        annotators[name] = annotator
        for o in outputs:
            score = (truth[o.pk] + rng.gauss(0, 5)) if style == "careful" else rng.uniform(0, 100)
            score = round(min(100, max(0, score)))
            scores[(name, o.pk)] = score
            RatingJudgementFactory(
                campaign=campaign, annotator=annotator, output=o, score=score, time_spent_ms=rng.randint(4000, 9000)
            )
        # Degraded copies of 12 outputs and repeats of 4, as an import would store them.
        for o in outputs[:12]:
            damaged = (truth[o.pk] - 40 + rng.gauss(0, 5)) if style == "careful" else rng.uniform(0, 100)
            ControlJudgement.objects.create(
                campaign=campaign,
                annotator=annotator,
                kind="degraded",
                item=o.item,
                output=o,
                criterion="quality",
                answer={"score": round(max(0, damaged))},
                origin="import",
            )
        for o in outputs[12:16]:
            again = (truth[o.pk] + rng.gauss(0, 5)) if style == "careful" else rng.uniform(0, 100)
            ControlJudgement.objects.create(
                campaign=campaign,
                annotator=annotator,
                kind="repeat",
                item=o.item,
                output=o,
                criterion="quality",
                answer={"score": round(again)},
                origin="import",
            )
    return campaign, annotators, outputs, scores


def test_mann_whitney_of_each_annotator_equals_scipy(study):
    campaign, annotators, outputs, scores = study
    quality = campaign_quality(campaign=campaign)
    for name, annotator in annotators.items():
        damaged = list(
            ControlJudgement.objects.filter(annotator=annotator, kind="degraded")
            .order_by("output_id")
            .values_list("answer__score", flat=True)
        )
        originals = [scores[(name, o.pk)] for o in sorted(outputs[:12], key=lambda o: o.pk)]
        expected = stats.mannwhitneyu(damaged, originals, alternative="less").pvalue
        assert quality[annotator.pk].figures.mann_whitney_p == pytest.approx(expected, rel=1e-12)


def test_careless_annotator_is_told_apart_and_excluded(study):
    campaign, annotators, _, _ = study
    quality = campaign_quality(campaign=campaign)
    careless = quality[annotators["careless"].pk]
    for name in ("careful-1", "careful-2", "careful-3"):
        careful = quality[annotators[name].pk]
        assert careful.figures.mann_whitney_p < 0.01 < careless.figures.mann_whitney_p
        assert careful.figures.agreement_with_others > careless.figures.agreement_with_others + 0.4
        assert careful.figures.self_consistency > careless.figures.self_consistency
        assert careful.figures.controls_passed > careless.figures.controls_passed
        assert careful.included
    assert not careless.included
    assert set(included_annotators(campaign=campaign)) == {
        annotators[n] for n in ("careful-1", "careful-2", "careful-3")
    }


def test_hand_decisions_override_the_rules_and_keep_every_row(study):
    campaign, annotators, _, _ = study
    before = RatingJudgement.objects.count(), ControlJudgement.objects.count()
    annotator_decide(campaign=campaign, annotator=annotators["careless"], included=True, reason="known expert")
    annotator_decide(campaign=campaign, annotator=annotators["careful-1"], included=False, reason="did not read")
    included = set(included_annotators(campaign=campaign))
    assert annotators["careless"] in included and annotators["careful-1"] not in included
    _, label = annotator_filter(campaign=campaign)
    assert label == "included annotators only (3 of 4; excluded: careful-1)"
    annotator_decide(campaign=campaign, annotator=annotators["careful-1"], included=None, reason="back to rules")
    assert annotators["careful-1"] in set(included_annotators(campaign=campaign))
    assert (RatingJudgement.objects.count(), ControlJudgement.objects.count()) == before


def test_rules_are_the_campaigns(study):
    campaign, annotators, _, _ = study
    quality_settings_update(campaign=campaign, rules={"max_p": None, "exclude_straight_lining": False})
    assert len(included_annotators(campaign=campaign)) == 4
    quality_settings_update(campaign=campaign, rules={"min_agreement": 0.5})
    assert set(included_annotators(campaign=campaign)) == {
        annotators[n] for n in ("careful-1", "careful-2", "careful-3")
    }


def test_unknown_kind_of_control_is_refused_by_the_database(study):
    from django.db import IntegrityError

    campaign, annotators, outputs, _ = study
    with pytest.raises(IntegrityError):
        ControlJudgement.objects.create(
            campaign=campaign,
            annotator=annotators["careless"],
            kind="bogus",
            item=outputs[0].item,
            criterion="quality",
            answer={},
        )
    assert ControlUnit.Kind.values == ["degraded", "repeat", "gold", "relative"]


def test_included_annotator_ids_for_the_analysis_readers(study):
    from annotations.quality.selectors import included_annotator_ids

    campaign, annotators, _, _ = study
    # Control answers exist (imported), so quality control is in use: the careless one is left out.
    assert included_annotator_ids(campaign=campaign) == {
        annotators[n].pk for n in ("careful-1", "careful-2", "careful-3")
    }
    ControlJudgement.objects.all().delete()
    assert included_annotator_ids(campaign=campaign) is None  # nothing to judge annotators by
    annotator_decide(campaign=campaign, annotator=annotators["careful-2"], included=False, reason="asked to leave")
    assert annotators["careful-2"].pk not in included_annotator_ids(campaign=campaign)


def test_every_surface_counts_the_same_annotators(study, client):
    """Issue 38: the dashboard said "3 of 3" included annotators where the quality page said "4 of 4":
    the reader counted annotators with a complete judgement, the quality page everyone quality
    control has figures for. One count (quality.selectors.Inclusion) now serves both."""
    from annotations.models import Membership
    from annotations.selectors.judgements import campaign_judgements
    from tests.annotations.factories import MembershipFactory

    campaign, annotators, outputs, _ = study
    starter = AnnotatorFactory(project=campaign.dataset.project, name="starter")  # one partial answer only
    RatingJudgementFactory(campaign=campaign, annotator=starter, output=outputs[0], score=50, status="partial")
    _, label = annotator_filter(campaign=campaign)
    used = campaign_judgements(campaign=campaign).used
    assert label.startswith("included annotators only (4 of 5;")  # careless excluded by the rules
    assert used == "included annotators only (4 of 5)"
    client.force_login(MembershipFactory(project=campaign.dataset.project, role=Membership.Role.OWNER).user)
    quality = client.get(f"/campaigns/{campaign.pk}/quality/").content.decode()
    assert '<span class="stat-value">4 / 5</span>' in quality
