"""Adaptive allocation ranks by the criterion a campaign chooses (issue 41 part 6, Pearmut #339):
option `adaptive_criterion`, default the first. Two criteria that order the systems oppositely:
the verdict follows the chosen one, for every registered protocol."""

import random

import pytest
from django.core.exceptions import ValidationError

from annotations import protocols
from annotations.allocation.state import verdict_from_json
from annotations.models import Campaign, Output
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from tests.annotations.allocation.test_every_protocol import MEANS, PARAMS, _dataset
from tests.annotations.factories import AnnotatorFactory
from tests.protocol_plugin import campaign_settings, every_protocol

# The second criterion sees the systems the other way round.
REVERSED = {"zq-top": 10, "zq-mid": 50, "zq-low": 90}


def _campaign(protocol, **options):
    return campaign_create(
        dataset=_dataset(24),
        name=f"crit-{protocol}",
        protocol=protocol,
        criteria=["fluency", "adequacy"],
        redundancy=1,
        allocation="adaptive",
        allocation_params=PARAMS,
        seed=1,
        options=options,
        **campaign_settings(protocol),
    )


def _answers(campaign, assignment, rng):
    outputs = Output.objects.filter(pk__in=assignment.shown_order).select_related("system")
    by_id = {o.pk: o for o in outputs}
    shown = [{"id": pk, "text": by_id[pk].text} for pk in assignment.shown_order]
    answers = []
    for criterion, means in (("fluency", MEANS), ("adequacy", REVERSED)):

        def impression(output, means=means):
            return min(100.0, max(0.0, means[by_id[output["id"]].system.name] + rng.gauss(0, 8)))

        answers += protocols.of(campaign).simulated_answers(campaign, criterion, shown, impression, rng)
    return answers


def _run(campaign, commit):
    annotators = [AnnotatorFactory(project=campaign.dataset.project) for _ in range(2)]
    rng, turn, idle = random.Random(4), 0, 0
    while idle < len(annotators):
        annotator = annotators[turn % len(annotators)]
        turn += 1
        campaign.refresh_from_db()
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        if assignment is None:
            idle += 1
            continue
        idle = 0
        with commit(execute=True):
            unit_submit(
                annotator=annotator,
                assignment_id=assignment.pk,
                judgements=_answers(campaign, assignment, rng),
                shown_order=assignment.shown_order,
            )
    campaign.refresh_from_db()
    ids = {str(pk): name for pk, name in campaign.dataset.systems.values_list("pk", "name")}
    verdict = verdict_from_json(campaign.allocation_state["verdict"])
    return [ids[s] for s in verdict.ranking]


@pytest.mark.django_db
@pytest.mark.parametrize("protocol", every_protocol())
def test_adaptive_ranks_by_the_chosen_criterion(protocol, registered, django_capture_on_commit_callbacks):
    campaign = _campaign(protocol, adaptive_criterion="adequacy")
    ranking = _run(campaign, django_capture_on_commit_callbacks)
    assert campaign.stopped_by == Campaign.StoppedBy.ADAPTIVE
    # Adequacy puts zq-low first; fluency (the first criterion) would have put zq-top first.
    assert ranking[0] == "zq-low" and ranking[-1] == "zq-top"


@pytest.mark.django_db
def test_adaptive_ranks_by_the_first_criterion_by_default(django_capture_on_commit_callbacks):
    campaign = _campaign("esa")
    ranking = _run(campaign, django_capture_on_commit_callbacks)
    assert ranking[0] == "zq-top" and ranking[-1] == "zq-low"


@pytest.mark.django_db
def test_an_unknown_adaptive_criterion_is_refused_by_name():
    with pytest.raises(ValidationError) as caught:
        _campaign("esa", adaptive_criterion="style")
    assert "options.adaptive_criterion: 'style' is not among the criteria (fluency, adequacy)" in str(caught.value)
