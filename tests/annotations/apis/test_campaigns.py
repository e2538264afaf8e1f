"""Campaign creation and handing out work."""
from annotations.models import Annotator, Assignment, Campaign


def test_researcher_creates_campaign(world):
    body = {"dataset": world.mine.dataset.pk, "name": "da", "protocol": "likert", "criteria": ["fluency", "adequacy"],
            "scale_min": 0, "scale_max": 100, "instructions": "<b>rate</b>", "redundancy": 3}
    response = world.client("researcher").post("/api/campaigns/", body, format="json")
    assert response.status_code == 201, response.content
    campaign = Campaign.objects.get(pk=response.json()["id"])
    assert (campaign.dataset, campaign.criteria, campaign.scale_max, campaign.redundancy) == (
        world.mine.dataset, ["fluency", "adequacy"], 100, 3)
    assert response.json()["instructions"] == "<b>rate</b>"  # JSON carries it verbatim; pages escape it


def test_campaign_create_rejects_bad_input_with_400(world):
    client = world.client("owner")
    base = {"dataset": world.mine.dataset.pk, "name": "x", "protocol": "likert", "criteria": ["f"],
            "scale_min": 1, "scale_max": 5}
    for change in ({"protocol": "stars"}, {"criteria": []}, {"scale_min": 5, "scale_max": 1},
                   {"scale_min": None, "scale_max": None}, {"redundancy": 0}, {"name": "mine-likert"},
                   {"scale_min": "NaN"}, {"criteria": ["f", "f"]}):
        response = client.post("/api/campaigns/", {**base, **change}, format="json")
        assert response.status_code == 400, (change, response.content)
    assert not Campaign.objects.filter(name="x").exists()


def _next(client, campaign):
    return client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")


def test_next_assignment_hands_out_each_item_up_to_redundancy(world):
    campaign = world.mine.campaign  # redundancy 2; item 0 is taken by both annotators already
    researcher = world.client("researcher")
    first = _next(researcher, campaign)
    assert first.status_code == 201
    body = first.json()
    # Item 0 is full, so the researcher gets item 1, with its content but blind to system names.
    assert body["item"]["external_id"] == "mine-item-1"
    assert body["status"] == "pending"
    assert [o["text"] for o in body["item"]["outputs"]] == ["mine-sys0 says mine-item-1", "mine-sys1 says mine-item-1"]
    assert set(body["item"]["outputs"][0]) == {"id", "text"}
    assert body["item"]["references"] == [{"position": 0, "text": "reference of mine-item-1"}]
    # Asking again returns the same pending assignment.
    again = _next(researcher, campaign)
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert Annotator.objects.get(project=world.mine.project, user=world.users["researcher"]).name == "researcher"

    Assignment.objects.filter(pk=body["id"]).update(status="done")
    assert _next(researcher, campaign).json()["item"]["external_id"] == "mine-item-2"
    Assignment.objects.filter(annotator__user=world.users["researcher"]).update(status="done")
    # Items 1 and 2 are the researcher's already, item 0 is full: nothing left.
    assert _next(researcher, campaign).status_code == 204

    owner = world.client("owner")
    got = []
    while (response := _next(owner, campaign)).status_code != 204:
        got.append(response.json()["item"]["external_id"])
        Assignment.objects.filter(pk=response.json()["id"]).update(status="done")
    assert got == ["mine-item-1", "mine-item-2"]
    counts = {i.external_id: i.assignments.filter(campaign=campaign).count() for i in world.mine.items}
    assert counts == {"mine-item-0": 2, "mine-item-1": 2, "mine-item-2": 2}


def test_annotator_profile_does_not_merge_with_imported_worker_of_same_name(world):
    Annotator.objects.create(project=world.mine.project, name="researcher")  # an imported worker id
    response = _next(world.client("researcher"), world.mine.campaign)
    assert response.status_code == 201
    mine = Annotator.objects.get(project=world.mine.project, user=world.users["researcher"])
    assert mine.name != "researcher" and response.json()["annotator"] == mine.pk
