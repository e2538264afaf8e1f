"""Controls through the engine in every registered protocol (the test-only plugin included): a damaged copy placed among the units,
answered through the same submission, and scored against the original."""

import random

import pytest
from django.core.exceptions import ValidationError

from annotations import protocols
from annotations.models import Annotator, Enrolment
from annotations.models.quality import ControlJudgement, ControlUnit
from annotations.quality.selectors import annotator_quality, campaign_quality
from annotations.quality.services import quality_settings_update
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.annotations.quality.simulation import Annotator as Simulated
from tests.protocol_plugin import campaign_settings, every_protocol

pytestmark = pytest.mark.django_db

WORDS = "the pub serves cheap food near the river and has a high customer rating in the city centre".split()


@pytest.mark.parametrize("protocol", every_protocol())
def test_controls_in_every_protocol(protocol, registered):
    rng = random.Random(7)
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset) for _ in range(3)]
    # Enough items that degraded copies, made of items an annotator has not seen yet, keep coming.
    for _ in range(12):
        item = ItemFactory(dataset=dataset)
        for system in systems:
            OutputFactory(item=item, system=system, text=" ".join(rng.sample(WORDS, 11)).capitalize() + ".")
    campaign = campaign_create(
        dataset=dataset,
        name=f"sim-{protocol}",
        protocol=protocol,
        criteria=["quality"],
        redundancy=2,
        units_per_batch=6,
        seed=1,
        **campaign_settings(protocol),
    )
    refused = protocols.get(protocol).controls_refused
    if refused:  # a protocol that says it has no control units refuses them, with its reason
        with pytest.raises(ValidationError, match=refused[:20]):
            quality_settings_update(campaign=campaign, degraded_share=0.34, repeat_share=0.17)
        return
    quality_settings_update(
        campaign=campaign,
        degraded_share=0.34,
        repeat_share=0.17,
        degrade_kinds=["drop", "invert"],
        rules={"min_degraded": 3},
    )
    truth = {t: rng.uniform(40, 95) for t in dataset.items.values_list("outputs__text", flat=True)}
    people = [
        Simulated(
            Annotator.objects.create(project=dataset.project, name=name), careful=careful, truth_by_text=truth, seed=i
        )
        for i, (name, careful) in enumerate((("careful", True), ("careless", False)))
    ]
    for i, person in enumerate(people):
        Enrolment.objects.create(campaign=campaign, annotator=person.annotator, seed=100 + i)
    for _ in range(90):
        for person in people:
            person.work(campaign, limit=1)

    assert set(ControlUnit.objects.filter(campaign=campaign).values_list("kind", flat=True)) == {"degraded", "repeat"}
    assert ControlJudgement.objects.filter(campaign=campaign, kind="degraded").count() >= 6
    quality = campaign_quality(campaign=campaign)
    careful, careless = (quality[p.annotator.pk].figures for p in people)
    assert careful.degraded_judged >= 3 and careful.repeats_judged >= 1
    assert careful.controls_passed == 1.0 > careless.controls_passed
    assert careful.self_consistency >= careless.self_consistency
    assert careful.mann_whitney_p < careless.mann_whitney_p
    # A batch end reads one annotator's standing from their own items: the same standing.
    for person in people:
        one = annotator_quality(campaign=campaign, annotator_id=person.annotator.pk)
        assert (one.figures, one.rule_verdict) == (
            quality[person.annotator.pk].figures,
            quality[person.annotator.pk].rule_verdict,
        )
