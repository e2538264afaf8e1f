"""Submitting judgements through the API.

Annotators name outputs by the handles their assignment showed them
(`annotations.services.handles`); the judgements store real ids."""

from annotations.models import Assignment, PairwiseJudgement, RatingJudgement
from annotations.services.handles import output_handle
from tests.annotations.server_time import about, worked


def _h(world, campaign, output, user=None):
    """The handle the annotator's assignment in `campaign` shows for `output`."""
    assignment = Assignment.objects.get(
        campaign=campaign, annotator__user=user or world.users["annotator"], item=world.mine.items[0]
    )
    return output_handle(assignment.pk, output.pk)


def _rate(client, world, output, criterion, score=3):
    c = world.mine.campaign
    body = {
        "campaign": c.pk,
        "output": _h(world, c, output),
        "criterion": criterion,
        "score": score,
        "time_spent_ms": 1200,
        "shown_order": [_h(world, c, world.mine.outputs[1]), _h(world, c, world.mine.outputs[0])],
    }
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
    c = world.mine.campaign
    assert (body["score"], body["output"], body["annotator_name"]) == (5.0, _h(world, c, out1), "annotator")
    # The time since the unit was handed out, measured on the server; not the client's 1200 ms.
    assert about(body["time_spent_ms"], 5000)
    mine.refresh_from_db()
    assert about(mine.time_spent_ms, 5000) and mine.time_spent_ms >= body["time_spent_ms"]
    assert body["shown_order"] == [_h(world, c, out1), _h(world, c, out0)]
    assert RatingJudgement.objects.get(pk=body["id"]).shown_order == [out1.pk, out0.pk]
    assert _status(world, world.mine.campaign, user) == "done"
    # The other annotator's assignment on the same item is untouched.
    assert _status(world, world.mine.campaign, world.other_annotator) == "pending"
    # Staff see the new judgements; annotators list none (real ids): 404.
    assert world.client("researcher").get("/api/judgements/ratings/").json()["count"] == 5
    assert world.client("annotator").get("/api/judgements/ratings/").status_code == 404


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
    # Item 1 was never assigned to the annotator: its outputs have no handle for them, and real ids
    # are not accepted from annotators (they would confirm which output is which).
    response = _rate(client, world, world.mine.outputs[2], "fluency")
    assert response.status_code == 400 and "is not part of this unit" in response.json()["output"][0]
    real_id = {
        "campaign": world.mine.campaign.pk,
        "output": world.mine.outputs[1].pk,
        "criterion": "adequacy",
        "score": 3,
    }
    assert client.post("/api/judgements/ratings/", real_id, format="json").status_code == 400
    # A campaign of another project is not found.
    body = {"campaign": world.other.campaign.pk, "output": "abcdefghijklmnop", "criterion": "fluency", "score": 3}
    assert client.post("/api/judgements/ratings/", body, format="json").status_code == 404
    assert RatingJudgement.objects.count() == before
    assert _status(world, world.mine.campaign, world.users["annotator"]) == "pending"


def test_pairwise_judgement_is_stored_canonically_and_completes_the_item(world):
    client = world.client("annotator")
    low, high = sorted([world.mine.outputs[0], world.mine.outputs[1]], key=lambda o: o.pk)
    h = lambda o: _h(world, world.mine.pairwise, o)  # noqa: E731
    body = {
        "campaign": world.mine.pairwise.pk,
        "output_a": h(high),
        "output_b": h(low),
        "criterion": "overall",
        "winner": "a",
    }
    response = client.post("/api/judgements/pairwise/", body, format="json")
    assert response.status_code == 201, response.content
    # Told back as sent: the stored (lower id first) order would rank the two ids.
    assert (response.json()["output_a"], response.json()["output_b"], response.json()["winner"]) == (
        h(high),
        h(low),
        "a",
    )
    stored = PairwiseJudgement.objects.get(pk=response.json()["id"])
    # Shown first was `high` and it won: stored with the lower id first, winner flipped.
    assert (stored.output_a, stored.output_b, stored.winner, stored.shown_order) == (low, high, "b", [high.pk, low.pk])
    assert _status(world, world.mine.pairwise, world.users["annotator"]) == "done"
    again = client.post("/api/judgements/pairwise/", body, format="json")
    assert again.status_code == 400
    wrong_protocol = {
        **body,
        "campaign": world.mine.campaign.pk,
        "criterion": "fluency",
        "output_a": _h(world, world.mine.campaign, high),
        "output_b": _h(world, world.mine.campaign, low),
    }
    assert client.post("/api/judgements/pairwise/", wrong_protocol, format="json").status_code == 400


def test_bestworst_judgement(world):
    client = world.client("annotator")
    out0, out1 = world.mine.outputs[0], world.mine.outputs[1]
    h = lambda o: _h(world, world.mine.bestworst, o)  # noqa: E731
    body = {
        "campaign": world.mine.bestworst.pk,
        "outputs": [h(out1), h(out0)],
        "best": h(out1),
        "worst": h(out0),
        "criterion": "overall",
    }
    bad = client.post("/api/judgements/bestworst/", {**body, "worst": h(out1)}, format="json")
    assert bad.status_code == 400
    mixed = {**body, "outputs": [h(out0), "zzzzzzzzzzzzzzzz"]}  # not an output of the unit
    assert client.post("/api/judgements/bestworst/", mixed, format="json").status_code == 400
    response = client.post("/api/judgements/bestworst/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["outputs"] == [h(out1), h(out0)]  # as sent, not sorted by id
    assert (response.json()["best"], response.json()["worst"]) == (h(out1), h(out0))
    stored = response.json()["id"]
    from annotations.models import BestWorstJudgement

    assert BestWorstJudgement.objects.get(pk=stored).best_id == out1.pk
    assert _status(world, world.mine.bestworst, world.users["annotator"]) == "done"
