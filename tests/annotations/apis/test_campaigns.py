"""Campaign creation and handing out work."""

from annotations.models import Annotator, Assignment, Campaign


def test_researcher_creates_campaign(world):
    body = {
        "dataset": world.mine.dataset.pk,
        "name": "da",
        "protocol": "likert",
        "criteria": ["fluency", "adequacy"],
        "scale_min": 0,
        "scale_max": 100,
        "instructions": "<b>rate</b>",
        "redundancy": 3,
    }
    response = world.client("researcher").post("/api/campaigns/", body, format="json")
    assert response.status_code == 201, response.content
    campaign = Campaign.objects.get(pk=response.json()["id"])
    assert (campaign.dataset, campaign.criteria, campaign.scale_max, campaign.redundancy) == (
        world.mine.dataset,
        ["fluency", "adequacy"],
        100,
        3,
    )
    assert response.json()["instructions"] == "<b>rate</b>"  # JSON carries it verbatim; pages escape it


def test_campaign_create_rejects_bad_input_with_400(world):
    client = world.client("owner")
    base = {
        "dataset": world.mine.dataset.pk,
        "name": "x",
        "protocol": "likert",
        "criteria": ["f"],
        "scale_min": 1,
        "scale_max": 5,
    }
    for change in (
        {"protocol": "stars"},
        {"criteria": []},
        {"scale_min": 5, "scale_max": 1},
        {"scale_min": None, "scale_max": None},
        {"redundancy": 0},
        {"name": "mine-likert"},
        {"scale_min": "NaN"},
        {"criteria": ["f", "f"]},
    ):
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


def _own(options: dict) -> dict:
    """A protocol's own options: those of every protocol (issue 41) at their defaults left out."""
    from annotations.protocols.common_options import COMMON, RELATIVE, SPAN_TEXT

    common = {o.name: o.default for o in (*COMMON, SPAN_TEXT, *RELATIVE)}
    assert all(options[name] == common[name] for name in options if name in common)
    return {k: v for k, v in options.items() if k not in common}


def test_campaign_options_in_the_api(world):
    client = world.client("researcher")
    base = {"dataset": world.mine.dataset.pk, "protocol": "bws", "criteria": ["overall"]}
    made = client.post("/api/campaigns/", {**base, "name": "b1", "options": {"tuple_size": 2}}, format="json")
    assert made.status_code == 201, made.content
    assert _own(made.json()["options"]) == {"tuple_size": 2} and made.json()["tuple_size"] == 2
    # The option at the top level, as before `options`, is the same.
    made = client.post("/api/campaigns/", {**base, "name": "b2", "tuple_size": 2}, format="json")
    assert made.status_code == 201 and _own(made.json()["options"]) == {"tuple_size": 2}
    refused = client.post(
        "/api/campaigns/", {**base, "name": "b3", "options": {"tuple_size": 1, "anchor": 5}}, format="json"
    )
    assert refused.status_code == 400
    assert sorted(refused.json()["options"]) == [
        "options.anchor: not a setting of bws campaigns (it has tuple_size, relative_checks, relative_damage and "
        "the options of every protocol)",
        "options.tuple_size: must be between 2 and 20",
    ]
    esa = client.post("/api/campaigns/", {**base, "protocol": "esa", "name": "e"}, format="json")
    assert (esa.json()["scale_min"], esa.json()["scale_max"]) == (0, 100)  # ESA's default scale
    assert _own(esa.json()["options"]) == {"severities": ["minor", "major"]}


def test_a_campaign_file_posted_to_the_api(world):
    config = {
        "name": "from-file",
        "dataset": world.mine.dataset.name,
        "protocol": "pairwise",
        "criteria": ["overall"],
        "scale": [None, None],
        "systems": [],
        "redundancy": 2,
        "options": {"pair_rounds": 1},
        "seed": 9,
        "counterbalancing": "recorded, ignored",
        "quality_control": {"repeat_share": 0.1, "gold_units": 0},
    }
    made = world.client("researcher").post("/api/campaigns/", config, format="json")
    assert made.status_code == 201, made.content
    assert (_own(made.json()["options"]), made.json()["seed"], made.json()["redundancy"]) == ({"pair_rounds": 1}, 9, 2)
    assert Campaign.objects.get(name="from-file").quality_settings.repeat_share == 0.1
    # Someone who may not set up campaigns there (an annotator does not see datasets), and a dataset
    # of another project: refused, as with a dataset id.
    assert world.client("annotator").post("/api/campaigns/", {**config, "name": "x"}, format="json").status_code == 404
    other = {**config, "name": "y", "dataset": world.other.dataset.name}
    assert world.client("researcher").post("/api/campaigns/", other, format="json").status_code == 404
    bad = world.client("researcher").post(
        "/api/campaigns/", {**config, "name": "z", "options": {"pair_rounds": -1}}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["options"] == ["options.pair_rounds: must be between 0 and 1000"]
    assert not Campaign.objects.filter(name__in=["x", "y", "z"]).exists()


def test_the_campaign_file_schema_for_those_who_set_up_campaigns(world):
    from annotations.services.campaign_files import campaign_file_schema

    assert world.client("researcher").get("/api/campaigns/schema/").json() == campaign_file_schema()
    assert world.client("annotator").get("/api/campaigns/schema/").status_code == 404
