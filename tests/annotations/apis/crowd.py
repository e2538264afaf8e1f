"""Fifty annotators draining one campaign of every registered protocol: the campaigns, one annotator's
client loop and the exactness check, shared by the in-process race (test_campaign_concurrency.py) and
the same race over HTTP through a proxy to several web hosts (tests/deploy/test_multihost.py).

A client is anything with `post(path, data=None, format=None)` answering `status_code`, `json()` and
`content`: DRF's APIClient, or `HttpAnnotator` below over real sockets.
"""

import random
from collections import Counter, defaultdict

import requests

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


def crowd_campaigns(allocation: str) -> tuple[dict, list]:
    """A small campaign of every registered protocol on one dataset, and N_ANNOTATORS annotators of its
    project: ({protocol: campaign}, users)."""
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
    return campaigns, users


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


def annotate(client, campaigns: dict, rng: random.Random, unexpected: list[str]) -> None:
    """One annotator: every campaign in a random order until nothing is left; skips some units, sends a
    bad submission first or submits twice, as real clients do. What answers unexpectedly goes to
    `unexpected` (and ends this annotator's work)."""
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
                {"judgements": answers, "shown_order": body["shown_order"], "time_spent_ms": rng.randint(500, 9000)},
                format="json",
            )
            if done.status_code != 201:
                unexpected.append(f"submit {done.status_code} {done.content[:200]}")
                return
            if roll > 0.95:
                twice = client.post(url, {"judgements": answers}, format="json")
                if twice.status_code != 400:
                    unexpected.append(f"double submission answered {twice.status_code}")


def assert_exactly_k(campaigns: dict) -> int:
    """Every unit ended with exactly K complete judgement sets from K different annotators: nothing
    lost, nothing duplicated, no pending assignment left. Answers how many judgement sets were stored."""
    sets = 0
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
            sets += K
        # Nothing else counts: released units left no complete rows behind.
        assert (
            model.objects.filter(campaign=campaign).exclude(status="complete").filter(assignment__status="done").count()
            == 0
        )
        assert Assignment.objects.filter(campaign=campaign, status="pending").count() == 0
    return sets


class HttpAnnotator:
    """An API client over HTTP (token authentication, one kept-alive connection), shaped like APIClient's
    `post` for `annotate`."""

    def __init__(self, base_url: str, token: str):
        self.base_url = base_url
        self.session = requests.Session()
        self.session.trust_env = False  # no proxy from the environment
        self.session.headers["Authorization"] = f"Token {token}"
        self.requests = 0

    def post(self, path: str, data: dict | None = None, format: str | None = None) -> requests.Response:
        self.requests += 1
        return self.session.post(f"{self.base_url}{path}", json=data, timeout=120)

    def close(self) -> None:
        self.session.close()
