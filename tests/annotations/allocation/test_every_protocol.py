"""Adaptive allocation over every registered protocol: each protocol's judgements are the
observations adaptive counts (`Protocol.allocation_observations`), so an adaptive campaign leaves
its cold start, decides its pairs and stops by the rule whatever the protocol, whether the
judgements come from annotators through the engine or from `import_judgements`.

Regression (issue 37): adaptive read `SpanJudgement` for "esa" and `RatingJudgement` for every
other scored protocol by name, so cESA and MQM campaigns had 0 observations and never stopped.
"""

import io
import json
import random

import pytest
from django.core.management import call_command
from django.test import Client

from annotations import protocols
from annotations.allocation.services import allocation_check
from annotations.allocation.state import verdict_from_json
from annotations.models import Campaign, Membership, Output, Unit
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.imports import judgements_import
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
from tests.protocol_plugin import campaign_settings, every_protocol

# Each system's true quality (the simulated annotators' mean impression, 0-100): three systems far
# apart, so every pair is decided once the cold start is over.
MEANS = {"zq-top": 90, "zq-mid": 50, "zq-low": 10}
PARAMS = {"min_per_system": 5, "check_every": 3, "stable_checks": 2}


def _dataset(n_items):
    dataset = DatasetFactory()
    systems = {name: SystemFactory(dataset=dataset, name=name) for name in MEANS}
    for i in range(n_items):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"i{i}")
        for system in systems.values():
            OutputFactory(item=item, system=system, text=f"Output {i} of {system.name} says something here.")
    return dataset


def _adaptive(dataset, protocol, name, **extra):
    return campaign_create(
        dataset=dataset,
        name=name,
        protocol=protocol,
        criteria=["q"],
        redundancy=1,
        allocation="adaptive",
        allocation_params=PARAMS,
        seed=1,
        **campaign_settings(protocol),
        **extra,
    )


def _answers(campaign, assignment, rng):
    """A simulated annotator's answers to the unit (the protocol's own simulator), from impressions
    around each system's mean."""
    outputs = Output.objects.filter(pk__in=assignment.shown_order).select_related("system")
    by_id = {o.pk: o for o in outputs}
    shown = [{"id": pk, "text": by_id[pk].text} for pk in assignment.shown_order]

    def impression(output):
        return min(100.0, max(0.0, MEANS[by_id[output["id"]].system.name] + rng.gauss(0, 8)))

    return protocols.of(campaign).simulated_answers(campaign, "q", shown, impression, rng)


def _work_until_stopped(campaign, commit, n_annotators=2, seed=4):
    """Annotators take turns through the engine until nothing is handed out; units submitted.
    `commit`: pytest-django's django_capture_on_commit_callbacks, so the checks a submit schedules
    after its commit run as they would after a real one."""
    annotators = [AnnotatorFactory(project=campaign.dataset.project) for _ in range(n_annotators)]
    rng, handed, idle = random.Random(seed), 0, 0
    while idle < n_annotators:
        annotator = annotators[handed % n_annotators]
        campaign.refresh_from_db()
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        if assignment is None:
            idle += 1
            handed += 1
            continue
        idle = 0
        with commit(execute=True):
            unit_submit(
                annotator=annotator,
                assignment_id=assignment.pk,
                judgements=_answers(campaign, assignment, rng),
                shown_order=assignment.shown_order,
            )
        handed += 1
    return Unit.objects.filter(campaign=campaign, n_done__gt=0).count()


def _progress(campaign):
    staff = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=staff, role=Membership.Role.RESEARCHER)
    client = Client()
    client.force_login(staff)
    return client.get(f"/campaigns/{campaign.pk}/progress.json").json()["allocation"]


def _assert_decided_and_stopped(campaign, expected_observations):
    campaign.refresh_from_db()
    state = campaign.allocation_state
    assert expected_observations > 0
    assert state["observations"] == expected_observations
    v = verdict_from_json(state["verdict"])
    assert not v.cold and not v.undecided
    ids = {name: str(pk) for pk, name in campaign.dataset.systems.values_list("pk", "name")}
    assert frozenset((ids["zq-top"], ids["zq-low"])) in v.decided
    assert v.ranking[0] == ids["zq-top"] and v.ranking[-1] == ids["zq-low"]
    assert campaign.stopped_by == Campaign.StoppedBy.ADAPTIVE
    assert "every pair of systems is decided" in campaign.stop_reason
    # The researcher's progress page reports the same observations and the verdict, with names.
    progress = _progress(campaign)
    assert progress["observations"] == expected_observations
    assert progress["verdict"]["stop"] is True and progress["verdict"]["ranking"][0] == "zq-top"


@pytest.mark.django_db
@pytest.mark.parametrize("protocol", every_protocol())
def test_adaptive_sees_every_protocols_judgements_and_stops(protocol, registered, django_capture_on_commit_callbacks):
    campaign = _adaptive(_dataset(24), protocol, f"adaptive-{protocol}")
    n_units = Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR).count()
    judged = _work_until_stopped(campaign, django_capture_on_commit_callbacks)
    seen = protocols.get(protocol).allocation_observations(campaign, "q")
    _assert_decided_and_stopped(campaign, len(seen))
    assert judged < n_units  # it stopped before judging everything
    assert Unit.objects.filter(campaign=campaign, n_taken=0, wanted=True).count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("protocol", every_protocol())
def test_adaptive_counts_imported_judgements(protocol, registered, tmp_path, django_capture_on_commit_callbacks):
    """Judgements of one campaign exported (judgements.jsonl) and imported into an adaptive one:
    its check counts them all, decides and stops, as for judgements given on the page."""
    dataset = _dataset(12)
    source = campaign_create(
        dataset=dataset,
        name=f"source-{protocol}",
        protocol=protocol,
        criteria=["q"],
        redundancy=1,
        seed=1,
        **campaign_settings(protocol),
    )
    _work_until_stopped(source, django_capture_on_commit_callbacks)
    call_command(
        "export_dataset",
        "--campaign",
        source.name,
        "--format",
        "jsonl",
        "--out",
        str(tmp_path),
        "--json",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    lines = (tmp_path / "judgements.jsonl").read_text(encoding="utf-8").splitlines()
    expected = len(protocols.get(protocol).allocation_observations(source, "q"))

    target = _adaptive(dataset, protocol, f"imported-{protocol}")
    judgements_import(stream=io.BytesIO("\n".join(lines).encode()), campaign_name=target.name)
    for _ in range(PARAMS["stable_checks"] + 1):
        allocation_check(campaign_id=target.pk)
    _assert_decided_and_stopped(target, expected)
    assert len(lines) == len({json.dumps(json.loads(line), sort_keys=True) for line in lines})
