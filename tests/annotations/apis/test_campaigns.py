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


def test_next_assignment_hands_out_each_unit_up_to_redundancy(world):
    """Likert units are single outputs: 3 items x 2 systems = 6 units, k = 2."""
    campaign = world.mine.campaign
    researcher = world.client("researcher")
    first = _next(researcher, campaign)
    assert first.status_code == 201
    body = first.json()
    assert body["status"] == "pending" and body["unit"] is not None
    # One output, its text, blind to the system; the reference only when the campaign shows it.
    assert len(body["item"]["outputs"]) == 1 and set(body["item"]["outputs"][0]) == {"id", "text"}
    assert body["item"]["outputs"][0]["text"].endswith(f"says {body['item']['external_id']}")
    assert body["shown_order"] == [body["item"]["outputs"][0]["id"]]
    assert body["item"]["references"] == []
    # Asking again returns the same pending assignment.
    again = _next(researcher, campaign)
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert Annotator.objects.get(project=world.mine.project, user=world.users["researcher"]).name == "researcher"

    for role in ("researcher", "owner"):
        client, seen = world.client(role), set()
        while (response := _next(client, campaign)).status_code != 204:
            unit = response.json()["unit"]
            assert unit not in seen  # never the same unit twice
            seen.add(unit)
            Assignment.objects.filter(pk=response.json()["id"]).update(status="done")
        assert len(seen) == 6
    counts = {u.pk: u.assignments.count() for u in campaign.units.all()}
    assert len(counts) == 6 and set(counts.values()) == {2}
    # Full: a third annotator gets nothing.
    third = world.client("annotator")
    Assignment.objects.filter(annotator__user=world.users["annotator"]).update(status="done")
    assert _next(third, campaign).status_code == 204


def test_annotator_profile_does_not_merge_with_imported_worker_of_same_name(world):
    worker = Annotator.objects.create(project=world.mine.project, name="researcher")  # an imported worker id
    response = _next(world.client("researcher"), world.mine.campaign)
    assert response.status_code == 201
    mine = Annotator.objects.get(project=world.mine.project, user=world.users["researcher"])
    assert mine != worker and mine.namespace == "account" and response.json()["annotator"] == mine.pk
