"""Fifty annotators at once, each with their own account and database connection,
drain one campaign of every registered protocol (the built-in ones and the test-only
plugin, tests/protocol_plugin.py) through the REST API on PostgreSQL.

Every unit must end with exactly k complete judgement sets from k different
annotators: nothing lost, nothing duplicated, whatever the interleaving. The
annotators also skip some units, send a bad submission first or submit twice,
as real clients do.
"""

import random
import threading
from collections import Counter, defaultdict

import pytest
from django.db import connection
from rest_framework.test import APIClient

from annotations import protocols
from annotations.models import Assignment, Membership, Unit
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.protocol_plugin import campaign_settings, every_protocol

N_ANNOTATORS = 50
K = 3


def _answers(protocol: str, campaign, body: dict, rng: random.Random) -> list[dict]:
    """Random answers in the protocol's own shape (its simulated annotator, any opinion)."""
    outputs = body["item"]["outputs"]
    return [
        answer
        for criterion in ("quality", "fluency")
        for answer in protocols.get(protocol).simulated_answers(
            campaign, criterion, outputs, lambda output: rng.uniform(0, 100), rng
        )
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("allocation", ["overlap-first", "spread", "adaptive"])
def test_fifty_annotators_complete_a_campaign_of_each_protocol(allocation, registered):
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"system-{i}") for i in range(4)]
    # Small: a campaign of every registered protocol shares the two cores.
    for i in range(4):
        item = ItemFactory(dataset=dataset, position=i)
        for system in systems:
            OutputFactory(item=item, system=system, text=f"output {i} of {system.name} with a few words")
    common = {"criteria": ["quality", "fluency"], "redundancy": K, "allocation": allocation}
    if allocation == "adaptive":
        # Checks run during the race (every 5 units), but the cold start (each system in 1000 units)
        # never ends here, so every unit stays open and the campaign completes.
        common["allocation_params"] = {"check_every": 5, "min_per_system": 1000}
    campaigns = {
        name: campaign_create(dataset=dataset, name=name, protocol=name, **campaign_settings(name), **common)
        for name in every_protocol()
    }
    users = [UserFactory(username=f"crowd-{i:02d}") for i in range(N_ANNOTATORS)]
    for user in users:
        MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    start = threading.Barrier(N_ANNOTATORS)
    errors: list[BaseException] = []
    unexpected: list[str] = []

    def work(index: int, user) -> None:
        rng = random.Random(index)
        client = APIClient()
        client.force_authenticate(user)
        try:
            start.wait(60)
            order = list(campaigns.items())
            rng.shuffle(order)
            for protocol, campaign in order:
                while True:
                    response = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
                    if response.status_code == 204:
                        break
                    if response.status_code not in (200, 201):
                        unexpected.append(f"next {response.status_code} {response.content[:200]}")
                        return
                    body = response.json()
                    url = f"/api/assignments/{body['id']}/submit/"
                    roll = rng.random()
                    if roll < 0.08:
                        client.post(f"/api/assignments/{body['id']}/release/")
                        continue
                    if roll < 0.16:
                        bad = client.post(url, {"judgements": [{"criterion": "nope"}]}, format="json")
                        if bad.status_code != 400:
                            unexpected.append(f"bad submission answered {bad.status_code}")
                    answers = _answers(protocol, campaign, body, rng)
                    done = client.post(
                        url,
                        {
                            "judgements": answers,
                            "shown_order": body["shown_order"],
                            "time_spent_ms": rng.randint(500, 9000),
                        },
                        format="json",
                    )
                    if done.status_code != 201:
                        unexpected.append(f"submit {done.status_code} {done.content[:200]}")
                        return
                    if roll > 0.95:
                        twice = client.post(url, {"judgements": answers}, format="json")
                        if twice.status_code != 400:
                            unexpected.append(f"double submission answered {twice.status_code}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i, user), daemon=True) for i, user in enumerate(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(t.is_alive() for t in threads), "annotators still working after 5 minutes"
    assert not errors, errors[:3]
    assert not unexpected, unexpected[:5]

    for protocol, campaign in campaigns.items():
        units = list(Unit.objects.filter(campaign=campaign))
        assert units, protocol
        model = protocols.get(protocol).model
        per_output = protocols.get(protocol).per_output
        complete = defaultdict(list)
        for unit_id, annotator_id in model.objects.filter(campaign=campaign, status="complete").values_list(
            "assignment__unit_id", "annotator_id"
        ):
            complete[unit_id].append(annotator_id)
        for unit in units:
            assert (unit.n_taken, unit.n_done) == (K, K), (protocol, unit.pk, unit.n_taken, unit.n_done)
            done = list(Assignment.objects.filter(unit=unit, status="done").values_list("annotator_id", flat=True))
            assert len(done) == len(set(done)) == K, (protocol, unit.pk, done)
            rows_per_set = 2 * (len(unit.outputs) if per_output else 1)
            counts = Counter(complete[unit.pk])
            assert set(counts) == set(done), (protocol, unit.pk)  # exactly the k annotators, nobody else
            assert set(counts.values()) == {rows_per_set}, (protocol, unit.pk, counts)
        # Nothing else counts: released units left no complete rows behind.
        assert (
            model.objects.filter(campaign=campaign).exclude(status="complete").filter(assignment__status="done").count()
            == 0
        )
        assert Assignment.objects.filter(campaign=campaign, status="pending").count() == 0
