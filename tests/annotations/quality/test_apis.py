"""Quality control through the REST API: controls look like any unit, tutorials send
wrong answers back, codes come at the end of a batch, figures are for researchers only."""

import random

import pytest
from rest_framework.test import APIClient

from annotations.models import Assignment, Membership, Output
from annotations.models.quality import CompletionCode, ControlJudgement, ControlUnit, GoldUnit
from annotations.quality.services import gold_unit_create, quality_settings_update
from annotations.services.handles import HANDLE_LENGTH, output_handle
from tests.annotations.factories import (
    CampaignFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ProjectFactory,
    SystemFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def shape(value):
    """The structure of a JSON value: keys and types, not values."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


@pytest.fixture
def setup():
    project = ProjectFactory()
    users = {role: UserFactory(username=f"{role}-user") for role in ("researcher", "annotator", "outsider")}
    MembershipFactory(project=project, user=users["researcher"], role=Membership.Role.RESEARCHER)
    MembershipFactory(project=project, user=users["annotator"], role=Membership.Role.ANNOTATOR)
    campaign = CampaignFactory(
        dataset__project=project,
        protocol="likert",
        scale_min=0,
        scale_max=100,
        criteria=["quality"],
        redundancy=1,
        units_per_batch=6,
    )
    systems = [SystemFactory(dataset=campaign.dataset) for _ in range(2)]
    rng = random.Random(2)
    words = "the pub serves cheap food near the river and has a high customer rating today".split()
    for _ in range(9):
        item = ItemFactory(dataset=campaign.dataset)
        for system in systems:
            OutputFactory(item=item, system=system, text=" ".join(rng.sample(words, 10)).capitalize() + ".")
    quality_settings_update(
        campaign=campaign,
        degraded_share=0.34,
        repeat_share=0.17,
        completion_codes=True,
        degrade_kinds=["drop", "invert"],
    )
    outputs = list(Output.objects.filter(item__dataset=campaign.dataset).order_by("id"))
    gold_unit_create(
        campaign=campaign,
        item=outputs[0].item,
        outputs=[outputs[0]],
        expected={"*": {"min": 0, "max": 20}},
        mode=GoldUnit.Mode.LOUD,
        explanation="This output contradicts the input: it deserves a very low score.",
    )
    gold_unit_create(
        campaign=campaign,
        item=outputs[2].item,
        outputs=[outputs[2]],
        expected={"*": {"min": 60}},
        mode=GoldUnit.Mode.SILENT,
    )
    clients = {}
    for role, user in users.items():
        clients[role] = APIClient()
        clients[role].force_authenticate(user)
    return campaign, clients


def test_controls_look_like_any_unit_and_tutorials_send_wrong_answers_back(setup):
    campaign, clients = setup
    client = clients["annotator"]
    payloads, responses, codes = [], [], []
    tutorial_retry = None
    while True:
        got = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
        if got.status_code == 204:
            break
        assert got.status_code in (200, 201), got.content
        payload = got.json()
        output = payload["item"]["outputs"][0]
        score = 10 if tutorial_retry is not None and payload["id"] == tutorial_retry else 50
        sent = client.post(
            f"/api/assignments/{payload['id']}/submit/",
            {
                "judgements": [{"criterion": "quality", "output": output["id"], "score": score}],
                "shown_order": payload["shown_order"],
                "time_spent_ms": 4000,
            },
            format="json",
        )
        assert sent.status_code in (200, 201), sent.content
        body = sent.json()
        if body["retry"]:
            # The loud gold unit: the answer is refused with the explanation, and the same unit comes back.
            assert tutorial_retry is None
            assert body["explanation"] == "This output contradicts the input: it deserves a very low score."
            assert body["assignment"]["status"] == "pending"
            tutorial_retry = payload["id"]
            again = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
            assert again.status_code == 200 and again.json()["id"] == payload["id"]
            continue
        payloads.append(payload)
        responses.append(body)
        if body["completion_code"]:
            codes.append(body["completion_code"])
    assert tutorial_retry is not None

    controls = {c.unit_id: c for c in ControlUnit.objects.filter(campaign=campaign)}
    kinds = {c.kind for c in controls.values()}
    assert kinds == {"degraded", "repeat", "gold"}
    # Annotators see handles (annotations.services.handles): a control's are those of its alias ids.
    control_payloads = [
        p
        for p in payloads
        if any(p["shown_order"] == [output_handle(p["id"], int(a)) for a in c.aliases] for c in controls.values())
    ]
    regular_payloads = [p for p in payloads if p not in control_payloads]
    assert len(control_payloads) == len(controls) and regular_payloads
    # Same structure, same types, for every unit and every submission response.
    assert {repr(shape(p)) for p in payloads} == {repr(shape(payloads[0]))}
    # (completion_code is a string at the end of a batch, whatever the unit was)
    assert {repr(shape({**r, "completion_code": None})) for r in responses} == {
        repr(shape({**responses[0], "completion_code": None}))
    }
    assert all(p["unit"] is None for p in payloads)
    # Every output shown is a handle of the same shape, never one the annotator saw before; behind a
    # control's handles are fresh (alias) ids, never a real output's.
    shown_ids = [o["id"] for p in payloads for o in p["item"]["outputs"]]
    assert len(shown_ids) == len(set(shown_ids))
    assert all(isinstance(i, str) and len(i) == HANDLE_LENGTH for i in shown_ids)
    real = set(Output.objects.values_list("id", flat=True))
    for p in control_payloads:
        assert not set(Assignment.objects.get(pk=p["id"]).shown_order) & real
    # Degraded copies differ from their originals, carry no mark, and keep the item shown.
    for control in controls.values():
        for alias, entry in control.aliases.items():
            original = Output.objects.get(pk=entry["output"]).text
            if control.kind == "degraded" and "degraded" in entry:
                assert entry["text"] != original and "BAD" not in entry["text"]
                assert entry["degraded"]["kind"] in ("drop", "invert")
            else:
                assert entry["text"] == original

    # One code at the end of every full batch (and none in between).
    done = len(payloads)
    assert len(codes) == done // campaign.units_per_batch
    # With nothing left to do, the last (partial) batch gets its code too: the next-assignment call that
    # answered 204 issued it, and reading it writes nothing.
    mine = client.get(f"/api/campaigns/{campaign.pk}/completion-code/").json()
    if done % campaign.units_per_batch:
        assert mine["code"] not in codes and mine["batch"] == len(codes) + 1
        codes.append(mine["code"])
    else:
        assert mine["code"] == codes[-1]
    stored = list(CompletionCode.objects.filter(campaign=campaign).order_by("batch").values_list("code", flat=True))
    assert stored == codes

    researcher = clients["researcher"]
    listed = researcher.get(f"/api/campaigns/{campaign.pk}/quality/codes/").json()
    assert [row["code"] for row in listed] == codes
    checked = researcher.post(
        f"/api/campaigns/{campaign.pk}/quality/codes/verify/", {"code": codes[0].lower()}, format="json"
    ).json()
    assert checked["annotator"] == "annotator-user" and checked["verdict"] in ("pass", "fail")
    bogus = researcher.post(
        f"/api/campaigns/{campaign.pk}/quality/codes/verify/", {"code": "AAAAA-AAAAA"}, format="json"
    ).json()
    assert bogus["valid"] is False and bogus["verdict"] is None


def test_quality_endpoints_are_for_researchers(setup):
    campaign, clients = setup
    url = f"/api/campaigns/{campaign.pk}/quality/"
    assert clients["researcher"].get(url).status_code == 200
    # Annotators are confined to their units: 404, as for outsiders.
    assert clients["annotator"].get(url).status_code == 404
    assert clients["outsider"].get(url).status_code == 404
    assert APIClient().get(url).status_code == 401
    for path in ("settings/", "gold/", "codes/"):
        assert clients["annotator"].get(url + path).status_code == 404
    denied = clients["annotator"].post(
        url + "decisions/", {"annotator": 1, "included": False, "reason": "x"}, format="json"
    )
    assert denied.status_code == 404


def test_settings_and_decisions_through_the_api(setup):
    campaign, clients = setup
    researcher = clients["researcher"]
    url = f"/api/campaigns/{campaign.pk}/quality/"
    bad = researcher.patch(url + "settings/", {"degraded_share": 2}, format="json")
    assert bad.status_code == 400 and "degraded_share" in bad.content.decode()
    bad = researcher.patch(url + "settings/", {"rules": {"max_q": 1}}, format="json")
    assert bad.status_code == 400 and "unknown rule" in bad.content.decode()
    ok = researcher.patch(url + "settings/", {"rules": {"min_median_seconds": 2.5}}, format="json")
    assert ok.status_code == 200 and ok.json()["rules"]["min_median_seconds"] == 2.5
    assert ok.json()["rules"]["max_p"] == 0.01  # the others keep their values

    clients["annotator"].post(f"/api/campaigns/{campaign.pk}/next-assignment/")
    report = researcher.get(url).json()
    (entry,) = report["annotators"]
    no_reason = researcher.post(
        url + "decisions/", {"annotator": entry["annotator"], "included": False, "reason": " "}, format="json"
    )
    assert no_reason.status_code == 400
    decided = researcher.post(
        url + "decisions/",
        {"annotator": entry["annotator"], "included": False, "reason": "copied answers"},
        format="json",
    )
    assert decided.status_code == 201
    (entry,) = researcher.get(url).json()["annotators"]
    assert entry["included"] is False and entry["decision"]["reason"] == "copied answers"
    assert entry["decision"]["by"] == "researcher-user"


def test_one_judgement_at_a_time_works_on_controls_and_looks_the_same(setup):
    campaign, clients = setup
    campaign.criteria = ["quality", "fluency"]
    campaign.save(update_fields=["criteria"])
    GoldUnit.objects.filter(campaign=campaign).delete()
    client = clients["annotator"]
    responses = []
    while True:
        got = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
        if got.status_code == 204:
            break
        payload = got.json()
        output = payload["item"]["outputs"][0]["id"]
        for criterion, score in (("quality", 40), ("fluency", 60)):
            sent = client.post(
                "/api/judgements/ratings/",
                {
                    "campaign": campaign.pk,
                    "output": output,
                    "criterion": criterion,
                    "score": score,
                    "shown_order": payload["shown_order"],
                    "time_spent_ms": 1500,
                },
                format="json",
            )
            assert sent.status_code == 201, sent.content
            responses.append((output, sent.json()))
        again = client.post(
            "/api/judgements/ratings/",
            {"campaign": campaign.pk, "output": output, "criterion": "quality", "score": 40},
            format="json",
        )
        assert again.status_code == 400  # the same answer twice: refused, for every kind of unit
    controls = ControlUnit.objects.filter(campaign=campaign)
    aliases = {int(a) for c in controls for a in c.aliases}

    control_handles = {
        output_handle(a.pk, i)
        for a in Assignment.objects.filter(campaign=campaign, unit_id__in=controls.values("unit_id"))
        for i in a.shown_order
    }
    assert controls.exists() and control_handles & {o for o, _ in responses}
    shapes = {repr(shape({**r, "status": None})) for _, r in responses}
    assert len(shapes) == 1
    # The second criterion completes every unit, control or not.
    assert {r["status"] for _, r in responses[1::2]} == {"complete"}
    assert {r["status"] for _, r in responses[0::2]} == {"partial"}
    from annotations.models import RatingJudgement

    assert not Assignment.objects.filter(campaign=campaign).exclude(status="done").exists()
    assert not RatingJudgement.objects.filter(output_id__in=aliases).exists()
    stored = ControlJudgement.objects.filter(campaign=campaign)
    assert stored.count() == 2 * controls.count()
    assert all(set(cj.answer["scores"]) == {a for a in cj.control.aliases} for cj in stored)
