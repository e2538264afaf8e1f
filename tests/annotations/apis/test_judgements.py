"""Submitting judgements through the API."""
from annotations.models import Assignment, PairwiseJudgement, RatingJudgement
from tests.annotations.server_time import about, worked


def _rate(client, world, output, criterion, score=3):
    body = {"campaign": world.mine.campaign.pk, "output": output.pk, "criterion": criterion, "score": score,
            "time_spent_ms": 1200, "shown_order": [world.mine.outputs[1].pk, world.mine.outputs[0].pk]}
    return client.post("/api/judgements/ratings/", body, format="json")


def _status(world, campaign, user):
    return Assignment.objects.get(campaign=campaign, annotator__user=user, item=world.mine.items[0]).status


def test_ratings_complete_the_assignment_when_every_output_and_criterion_is_judged(world):
    client = world.client("annotator")
    user = world.users["annotator"]
    out0, out1 = world.mine.outputs[0], world.mine.outputs[1]
    # The fixture holds fluency of output 0 already.
    for output, criterion in ((out1, "fluency"), (out0, "adequacy")):
        response = _rate(client, world, output, criterion)
        assert response.status_code == 201, response.content
        assert _status(world, world.mine.campaign, user) == "pending"
    mine = Assignment.objects.get(campaign=world.mine.campaign, annotator__user=user, item=world.mine.items[0])
    worked(mine.pk, 5000)
    response = _rate(client, world, out1, "adequacy", score=5)
    assert response.status_code == 201
    body = response.json()
    assert (body["score"], body["output"], body["annotator_name"]) == (5.0, out1.pk, "annotator")
    # The time since the unit was handed out, measured on the server; not the client's 1200 ms.
    assert about(body["time_spent_ms"], 5000)
    mine.refresh_from_db()
    assert about(mine.time_spent_ms, 5000) and mine.time_spent_ms >= body["time_spent_ms"]
    assert body["shown_order"] == [out1.pk, out0.pk]
    assert _status(world, world.mine.campaign, user) == "done"
    # The other annotator's assignment on the same item is untouched.
    assert _status(world, world.mine.campaign, world.other_annotator) == "pending"
    # Staff see the new judgements; the other annotator still only their own.
    assert world.client("researcher").get("/api/judgements/ratings/").json()["count"] == 5
    assert world.client("annotator").get("/api/judgements/ratings/").json()["count"] == 4
    other = world.client("annotator")
    other.force_authenticate(world.other_annotator)
    assert other.get("/api/judgements/ratings/").json()["count"] == 1


def test_rejected_ratings_write_nothing(world):
    client = world.client("annotator")
    before = RatingJudgement.objects.count()
    out0, out1 = world.mine.outputs[0], world.mine.outputs[1]
    assert _rate(client, world, out0, "fluency").status_code == 400  # judged already
    assert _rate(client, world, out1, "fluency", score=6).status_code == 400  # outside 1-5
    assert _rate(client, world, out1, "style").status_code == 400  # not a criterion
    foreign = world.other.outputs[0]
    response = _rate(client, world, foreign, "fluency")
    assert response.status_code == 400 and "output" in response.json()
    # Item 1 was never assigned to the annotator.
    assert _rate(client, world, world.mine.outputs[2], "fluency").status_code == 403
    # A campaign of another project is not found.
    body = {"campaign": world.other.campaign.pk, "output": foreign.pk, "criterion": "fluency", "score": 3}
    assert client.post("/api/judgements/ratings/", body, format="json").status_code == 404
    assert RatingJudgement.objects.count() == before
    assert _status(world, world.mine.campaign, world.users["annotator"]) == "pending"


def test_pairwise_judgement_is_stored_canonically_and_completes_the_item(world):
    client = world.client("annotator")
    low, high = sorted([world.mine.outputs[0], world.mine.outputs[1]], key=lambda o: o.pk)
    body = {"campaign": world.mine.pairwise.pk, "output_a": high.pk, "output_b": low.pk, "criterion": "overall",
            "winner": "a"}
    response = client.post("/api/judgements/pairwise/", body, format="json")
    assert response.status_code == 201, response.content
    stored = PairwiseJudgement.objects.get(pk=response.json()["id"])
    # Shown first was `high` and it won: stored with the lower id first, winner flipped.
    assert (stored.output_a, stored.output_b, stored.winner, stored.shown_order) == (low, high, "b", [high.pk, low.pk])
    assert _status(world, world.mine.pairwise, world.users["annotator"]) == "done"
    again = client.post("/api/judgements/pairwise/", body, format="json")
    assert again.status_code == 400
    wrong_protocol = {**body, "campaign": world.mine.campaign.pk, "criterion": "fluency"}
    assert client.post("/api/judgements/pairwise/", wrong_protocol, format="json").status_code == 400


def test_bestworst_judgement(world):
    client = world.client("annotator")
    out0, out1 = world.mine.outputs[0], world.mine.outputs[1]
    body = {"campaign": world.mine.bestworst.pk, "outputs": [out1.pk, out0.pk], "best": out1.pk, "worst": out0.pk,
            "criterion": "overall"}
    bad = client.post("/api/judgements/bestworst/", {**body, "worst": out1.pk}, format="json")
    assert bad.status_code == 400
    mixed = {**body, "outputs": [out0.pk, world.mine.outputs[2].pk]}  # outputs of two items
    assert client.post("/api/judgements/bestworst/", mixed, format="json").status_code == 400
    response = client.post("/api/judgements/bestworst/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["outputs"] == sorted([out0.pk, out1.pk])
    assert (response.json()["best"], response.json()["worst"]) == (out1.pk, out0.pk)
    assert _status(world, world.mine.bestworst, world.users["annotator"]) == "done"
