"""Whole units through the REST API: next-assignment, submit, release, spans; blindness."""

import random

import pytest
from rest_framework.test import APIClient
from scipy.stats import rankdata

from annotations import protocols
from annotations.models import (
    Assignment,
    Membership,
    RatingJudgement,
)
from annotations.protocols.esa import span_record
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ReferenceFactory,
    SystemFactory,
    UserFactory,
)
from tests.annotations.server_time import about, worked
from tests.protocol_plugin import campaign_settings, every_protocol

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=name) for name in ("alpha", "beta", "gamma", "delta")]
    for i in range(3):
        item = ItemFactory(dataset=dataset, position=i, source=f"source {i}")
        ReferenceFactory(item=item, position=0, text=f"reference {i}")
        for system in systems:
            OutputFactory(item=item, system=system, text=f"{system.name} output of item {i}: some words here")
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    client = APIClient()
    client.force_authenticate(user)
    return dataset, client, user


def _campaign(dataset, protocol, **kwargs):
    defaults = {"criteria": ["quality", "fluency"], "redundancy": 2}
    if protocol == "likert":
        defaults.update(scale_min=1, scale_max=5)
    return campaign_create(dataset=dataset, name=protocol, protocol=protocol, **{**defaults, **kwargs})


# Impressions of the outputs by position: two tie (RankME ranks them both first).
IMPRESSIONS = [50, 80, 80, 20]


def _answers(campaign, body):
    """The protocol's own answers (its simulated annotator) for fixed impressions by position."""
    outputs = body["item"]["outputs"]
    position = {o["id"]: i for i, o in enumerate(outputs)}
    rng = random.Random(0)
    return [
        answer
        for criterion in ("quality", "fluency")
        for answer in protocols.of(campaign).simulated_answers(
            campaign, criterion, outputs, lambda output: IMPRESSIONS[position[output["id"]]], rng
        )
    ]


@pytest.mark.parametrize("protocol", every_protocol())
def test_a_whole_unit_in_one_request(setup, protocol, registered):
    dataset, client, user = setup
    campaign = _campaign(dataset, protocol, **campaign_settings(protocol))
    model = protocols.get(protocol).model
    response = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
    assert response.status_code == 201
    body = response.json()
    # Blind: ids and texts only, in the server's order, which is also recorded.
    assert all(set(o) == {"id", "text"} for o in body["item"]["outputs"])
    assert "alpha" not in str({k: v for k, v in body.items() if k != "item"})
    assert [o["id"] for o in body["item"]["outputs"]] == body["shown_order"]
    answers = _answers(campaign, body)
    url = f"/api/assignments/{body['id']}/submit/"
    wrong_order = list(reversed(body["shown_order"]))
    if len(wrong_order) > 1:
        bad = client.post(url, {"judgements": answers, "shown_order": wrong_order}, format="json")
        assert bad.status_code == 400 and "shown_order" in bad.json()
    incomplete = client.post(url, {"judgements": answers[:-1]}, format="json")
    assert incomplete.status_code == 400
    assert not model.objects.exists()
    worked(body["id"], 4200)  # the unit was handed out 4.2 s (plus this test's requests) ago
    done = client.post(
        url, {"judgements": answers, "shown_order": body["shown_order"], "time_spent_ms": 4200}, format="json"
    )
    assert done.status_code == 201, done.content
    # The annotator saw handles of this assignment; the judgements store the real output ids.
    real_order = list(Assignment.objects.get(pk=body["id"]).shown_order)
    assert body["shown_order"] == [output_handle(body["id"], i) for i in real_order]
    stored = model.objects.filter(campaign=campaign)
    assert stored.count() == len(answers)
    assignment = Assignment.objects.get(pk=body["id"])
    # Every judgement of the unit carries the unit's time as the server measured it.
    assert {(j.origin, j.status, j.time_spent_ms, tuple(j.shown_order)) for j in stored} == {
        ("api", "complete", assignment.time_spent_ms, tuple(real_order))
    }
    assert about(assignment.time_spent_ms, 4200)
    # The client's 4200 ms is no more than that: kept as its own figure.
    assert assignment.status == "done" and assignment.client_time_ms == 4200
    again = client.post(url, {"judgements": answers}, format="json")
    assert again.status_code == 400  # stored once
    if protocols.get(protocol).magnitudes_ranked:
        # The implied ranking (per criterion): ties share the best rank, as scipy's rankdata "min".
        scores, ranks = zip(*stored.filter(criterion="quality").values_list("score", "rank"))
        assert list(ranks) == [int(r) for r in rankdata([-x for x in scores], method="min")]
        assert sorted(ranks) == ([1, 1, 3] if len(scores) == 3 else [1, 1, 3, 4])
    if protocol == "pairwise":
        # "a" means the output shown first, "b" the second, whatever their ids.
        j = stored.get(criterion="quality")
        sent = next(a["winner"] for a in answers if a["criterion"] == "quality")
        assert sent in ("a", "b")
        winner = j.output_a_id if j.winner == "a" else j.output_b_id
        assert winner == real_order[0 if sent == "a" else 1]
    if protocols.get(protocol).has_spans:
        # The spans sent are the spans stored, each with every key (MQM: its category).
        sent = {(a["criterion"], a["output"]): a["spans"] for a in answers}
        handle = dict(zip(real_order, body["shown_order"]))
        for j in stored:
            assert protocols.get(protocol).spans_of(j) == [
                span_record(x) for x in sent[(j.criterion, handle[j.output_id])]
            ]
        assert any(sent.values())


def test_esa_spans_are_checked_against_the_output(setup):
    dataset, client, _ = setup
    campaign = _campaign(dataset, "esa", criteria=["quality"])
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    output = body["item"]["outputs"][0]
    url = f"/api/assignments/{body['id']}/submit/"
    for spans in (
        [{"start": 5, "end": 5, "severity": "minor"}],
        [{"start": 0, "end": 10_000, "severity": "minor"}],
        [{"start": 0, "end": 3, "severity": "critical"}],
        [{"missing": True, "start": 1, "severity": "minor"}],
    ):
        answer = {"criterion": "quality", "output": output["id"], "score": 40, "spans": spans}
        assert client.post(url, {"judgements": [answer]}, format="json").status_code == 400, spans
    assert (
        client.post(
            url, {"judgements": [{"criterion": "quality", "output": output["id"], "score": 101}]}, format="json"
        ).status_code
        == 400
    )
    # One judgement at a time through /api/judgements/spans/ works too (origin "api").
    single = client.post(
        "/api/judgements/spans/",
        {
            "campaign": campaign.pk,
            "output": output["id"],
            "criterion": "quality",
            "score": 30,
            "spans": [{"start": 0, "end": 3, "severity": "minor"}],
        },
        format="json",
    )
    assert single.status_code == 201, single.content
    assert single.json()["status"] == "complete" and single.json()["origin"] == "api"


def test_single_judgements_are_partial_until_the_unit_is_covered(setup):
    dataset, client, _ = setup
    campaign = _campaign(dataset, "likert")
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    output = body["item"]["outputs"][0]["id"]
    first = client.post(
        "/api/judgements/ratings/",
        {"campaign": campaign.pk, "output": output, "criterion": "quality", "score": 3},
        format="json",
    )
    assert first.status_code == 201 and first.json()["status"] == "partial"
    assert first.json()["output"] == output  # told back as the handle sent
    complete = RatingJudgement.objects.filter(campaign=campaign, status="complete")
    assert complete.count() == 0
    second = client.post(
        "/api/judgements/ratings/",
        {"campaign": campaign.pk, "output": output, "criterion": "fluency", "score": 4},
        format="json",
    )
    assert second.json()["status"] == "complete"
    assert complete.count() == 2


def test_release_and_other_peoples_assignments(setup):
    dataset, client, _ = setup
    campaign = _campaign(dataset, "likert")
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    stranger = APIClient()
    stranger.force_authenticate(UserFactory(username="mallory"))
    assert stranger.post(f"/api/assignments/{body['id']}/release/").status_code == 404
    assert (
        stranger.post(f"/api/assignments/{body['id']}/submit/", {"judgements": [{}]}, format="json").status_code == 404
    )
    released = client.post(f"/api/assignments/{body['id']}/release/")
    assert released.status_code == 200 and released.json()["status"] == "released"
    nxt = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    # (annotators are not shown unit ids: quality control's units would stand out)
    assert nxt["shown_order"] != body["shown_order"]


def test_annotators_never_see_system_names_in_items_outputs_or_campaigns(setup):
    dataset, client, _ = setup
    campaign = _campaign(dataset, "pairwise", criteria=["quality"], systems=["alpha", "beta"])
    texts = []
    for url in (f"/api/campaigns/{campaign.pk}/", "/api/campaigns/"):
        response = client.get(url)
        assert response.status_code == 200
        texts.append(response.content.decode())
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
    texts.append(body.content.decode())
    blob = "\n".join(texts)
    for name in ("alpha", "beta", "gamma", "delta"):
        # Output texts contain the names here; the fields never do.
        assert f'"{name}"' not in blob and '"system_name"' not in blob and '"system"' not in blob
    # Items and outputs (even filtered by system) are not theirs to list: 404, as for a missing page.
    system = dataset.systems.first()
    for url in (
        "/api/items/",
        f"/api/items/{dataset.items.first().pk}/",
        "/api/outputs/",
        f"/api/outputs/?system={system.pk}",
        f"/api/items/?system={system.pk}",
    ):
        assert client.get(url).status_code == 404, url


def test_members_api_does_not_tell_which_usernames_exist(setup):
    dataset, _, _ = setup
    owner = UserFactory(username="olga")
    MembershipFactory(project=dataset.project, user=owner, role=Membership.Role.OWNER)
    client = APIClient()
    client.force_authenticate(owner)
    url = f"/api/projects/{dataset.project.pk}/members/"
    UserFactory(username="sleeper", is_active=False)
    unknown = client.post(url, {"username": "nobody-here", "role": "annotator"}, format="json")
    inactive = client.post(url, {"username": "sleeper", "role": "annotator"}, format="json")
    assert unknown.status_code == inactive.status_code == 400
    assert unknown.json() == inactive.json()
    # A project keeps one owner: the last one can neither step down nor be removed.
    mine = Membership.objects.get(project=dataset.project, user=owner)
    assert client.patch(f"{url}{mine.pk}/", {"role": "researcher"}, format="json").status_code == 400
    assert client.delete(f"{url}{mine.pk}/").status_code == 400
    annotator = Membership.objects.get(project=dataset.project, user__username="ann")
    assert client.patch(f"{url}{annotator.pk}/", {"role": "researcher"}, format="json").json()["role"] == "researcher"
    assert client.delete(f"{url}{annotator.pk}/").status_code == 204


def test_submit_with_next_hands_out_the_next_unit_in_the_same_answer(setup):
    """One request per unit: the answer's `next` is the unit next-assignment would give,
    blind like it, and null once nothing is left; without `next` there is no such key."""
    dataset, client, user = setup
    campaign = _campaign(dataset, "likert", redundancy=1)  # 12 units of one output each
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    seen = []
    while True:
        seen.append(body["id"])
        response = client.post(
            f"/api/assignments/{body['id']}/submit/",
            {"judgements": _answers(campaign, body), "shown_order": body["shown_order"], "next": True},
            format="json",
        )
        assert response.status_code == 201, response.content
        following = response.json()["next"]
        if following is None:
            break
        assert following["id"] not in seen and following["status"] == "pending"
        assert set(following) == set(body) and all(set(o) == {"id", "text"} for o in following["item"]["outputs"])
        assert "alpha" not in str({k: v for k, v in following.items() if k != "item"})
        # It is the caller's pending unit: next-assignment now answers it again, unchanged.
        again = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
        assert again.status_code == 200 and again.json()["id"] == following["id"]
        body = following
    assert len(seen) == 12 == RatingJudgement.objects.filter(assignment__campaign=campaign).count() / 2
    assert client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").status_code == 204
    pairwise = _campaign(dataset, "pairwise")
    plain = client.post(f"/api/campaigns/{pairwise.pk}/next-assignment/").json()
    response = client.post(
        f"/api/assignments/{plain['id']}/submit/",
        {"judgements": _answers(pairwise, plain), "shown_order": plain["shown_order"]},
        format="json",
    )
    assert response.status_code == 201 and "next" not in response.json()
