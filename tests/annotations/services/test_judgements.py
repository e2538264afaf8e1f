import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, close_old_connections, connection, transaction

from annotations.models import BestWorstJudgement, PairwiseJudgement, RatingJudgement
from annotations.services.judgements import (
    DuplicateJudgement,
    bestworst_judgement_create,
    pairwise_judgement_create,
    rating_judgement_create,
)
from tests.annotations.factories import (
    AnnotatorFactory,
    CampaignFactory,
    DatasetFactory,
    ItemFactory,
    OutputFactory,
    RatingJudgementFactory,
    SystemFactory,
)


def _setup(protocol="likert", n_systems=2, **campaign_kwargs):
    dataset = DatasetFactory()
    item = ItemFactory(dataset=dataset)
    outputs = [OutputFactory(item=item, system=SystemFactory(dataset=dataset)) for _ in range(n_systems)]
    defaults = {"criteria": ["fluency", "adequacy"]}
    if protocol in ("pairwise", "bws"):
        defaults.update(scale_min=None, scale_max=None)
    if protocol == "rankme":
        defaults.update(scale_min=None, scale_max=None)
    defaults.update(campaign_kwargs)
    campaign = CampaignFactory(dataset=dataset, protocol=protocol, **defaults)
    annotator = AnnotatorFactory(project=dataset.project)
    return campaign, annotator, outputs


@pytest.mark.django_db
def test_rating_create_copies_scale_and_defaults_shown_order():
    campaign, annotator, (out, _) = _setup()
    j = rating_judgement_create(
        campaign=campaign, annotator=annotator, output=out, criterion="fluency", score=4, time_spent_ms=1200
    )
    j.refresh_from_db()
    assert (j.score, j.scale_min, j.scale_max, j.item_id) == (4.0, 1.0, 5.0, out.item_id)
    assert j.shown_order == [out.id]
    assert j.origin == "browser"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"score": 6}, "score"),
        ({"score": 0.5}, "score"),
        ({"score": float("nan")}, "score"),
        ({"score": "4"}, "score"),
        ({"score": True}, "score"),
        ({"criterion": "grammar"}, "criterion"),
        ({"rank": 0}, "rank"),
        ({"time_spent_ms": -1}, "time_spent_ms"),
    ],
)
def test_rating_create_rejects_invalid_values(kwargs, field):
    campaign, annotator, (out, _) = _setup()
    args = {"campaign": campaign, "annotator": annotator, "output": out, "criterion": "fluency", "score": 3}
    args.update(kwargs)
    with pytest.raises(ValidationError) as exc:
        rating_judgement_create(**args)
    assert field in exc.value.message_dict
    assert RatingJudgement.objects.count() == 0


@pytest.mark.django_db
def test_rating_create_rejects_output_of_other_dataset_and_foreign_annotator():
    campaign, annotator, _ = _setup()
    other_output = OutputFactory()
    with pytest.raises(ValidationError, match="dataset"):
        rating_judgement_create(
            campaign=campaign, annotator=annotator, output=other_output, criterion="fluency", score=3
        )
    campaign2, _, (out, _) = _setup()
    with pytest.raises(ValidationError, match="project"):
        rating_judgement_create(campaign=campaign2, annotator=annotator, output=out, criterion="fluency", score=3)
    assert RatingJudgement.objects.count() == 0


@pytest.mark.django_db
def test_rating_create_rejects_wrong_protocol():
    campaign, annotator, (out, _) = _setup(protocol="pairwise")
    with pytest.raises(ValidationError, match="pairwise protocol"):
        rating_judgement_create(campaign=campaign, annotator=annotator, output=out, criterion="fluency", score=3)


@pytest.mark.django_db
def test_rankme_magnitudes_must_be_positive_but_are_unbounded():
    campaign, annotator, (out, out2) = _setup(protocol="rankme")
    j = rating_judgement_create(campaign=campaign, annotator=annotator, output=out, criterion="fluency", score=1e6)
    assert j.scale_min is None and j.scale_max is None
    for bad in (0, -5):
        with pytest.raises(ValidationError, match="above 0"):
            rating_judgement_create(campaign=campaign, annotator=annotator, output=out2, criterion="fluency", score=bad)


@pytest.mark.django_db
def test_rating_duplicate_is_a_clean_domain_error():
    campaign, annotator, (out, _) = _setup()
    rating_judgement_create(campaign=campaign, annotator=annotator, output=out, criterion="fluency", score=3)
    with pytest.raises(DuplicateJudgement):
        rating_judgement_create(campaign=campaign, annotator=annotator, output=out, criterion="fluency", score=4)
    # Another criterion is another unit.
    rating_judgement_create(campaign=campaign, annotator=annotator, output=out, criterion="adequacy", score=4)
    assert RatingJudgement.objects.count() == 2


@pytest.mark.django_db
def test_database_itself_refuses_out_of_scale_score():
    campaign, annotator, (out, _) = _setup()
    with pytest.raises(IntegrityError, match="rating_score_below_max"), transaction.atomic():
        RatingJudgementFactory(campaign=campaign, annotator=annotator, output=out, score=9)  # the campaign's 1-5
    with pytest.raises(IntegrityError, match="rating_score_above_min"), transaction.atomic():
        RatingJudgementFactory(campaign=campaign, annotator=annotator, output=out, score=0)
    assert RatingJudgement.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_ratings_give_one_row_and_one_clean_error():
    campaign, annotator, (out, _) = _setup()
    barrier = threading.Barrier(2)
    results: list[object] = []

    def submit(score):
        try:
            barrier.wait(timeout=10)
            results.append(
                rating_judgement_create(
                    campaign=campaign, annotator=annotator, output=out, criterion="fluency", score=score
                )
            )
        except Exception as exc:  # recorded and asserted below
            results.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=submit, args=(s,)) for s in (2, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    created = [r for r in results if isinstance(r, RatingJudgement)]
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(created) == 1 and len(errors) == 1, results
    assert isinstance(errors[0], DuplicateJudgement)
    assert RatingJudgement.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("winner, flipped", [("a", "b"), ("b", "a"), ("tie", "tie")])
def test_pairwise_canonical_order_flips_winner_and_keeps_shown_order(winner, flipped):
    campaign, annotator, outputs = _setup(protocol="pairwise")
    low, high = sorted(outputs, key=lambda o: o.id)
    # Shown with the higher id on the left: stored swapped, winner flipped.
    j = pairwise_judgement_create(
        campaign=campaign, annotator=annotator, output_a=high, output_b=low, criterion="fluency", winner=winner
    )
    j.refresh_from_db()
    assert (j.output_a_id, j.output_b_id) == (low.id, high.id)
    assert j.winner == flipped
    assert j.shown_order == [high.id, low.id]
    # The preferred output is the same one whatever the storage order.
    preferred = {"a": j.output_a_id, "b": j.output_b_id}.get(j.winner)
    assert preferred == {"a": high.id, "b": low.id}.get(winner)


@pytest.mark.django_db
def test_pairwise_in_canonical_order_is_stored_as_is_and_duplicates_either_way_refused():
    campaign, annotator, outputs = _setup(protocol="pairwise")
    low, high = sorted(outputs, key=lambda o: o.id)
    j = pairwise_judgement_create(
        campaign=campaign, annotator=annotator, output_a=low, output_b=high, criterion="fluency", winner="a"
    )
    assert (j.output_a_id, j.output_b_id, j.winner) == (low.id, high.id, "a")
    with pytest.raises(DuplicateJudgement):
        pairwise_judgement_create(
            campaign=campaign, annotator=annotator, output_a=high, output_b=low, criterion="fluency", winner="a"
        )
    assert PairwiseJudgement.objects.count() == 1


@pytest.mark.django_db
def test_pairwise_rejects_same_output_other_item_and_bad_winner():
    campaign, annotator, (o1, o2) = _setup(protocol="pairwise")
    other_item_output = OutputFactory(item=ItemFactory(dataset=campaign.dataset), system=o1.system)
    with pytest.raises(ValidationError, match="different outputs"):
        pairwise_judgement_create(
            campaign=campaign, annotator=annotator, output_a=o1, output_b=o1, criterion="fluency", winner="a"
        )
    with pytest.raises(ValidationError, match="same item"):
        pairwise_judgement_create(
            campaign=campaign,
            annotator=annotator,
            output_a=o1,
            output_b=other_item_output,
            criterion="fluency",
            winner="a",
        )
    with pytest.raises(ValidationError, match="winner"):
        pairwise_judgement_create(
            campaign=campaign, annotator=annotator, output_a=o1, output_b=o2, criterion="fluency", winner="left"
        )
    assert PairwiseJudgement.objects.count() == 0


@pytest.mark.django_db
def test_bestworst_create_and_validation():
    campaign, annotator, outputs = _setup(protocol="bws", n_systems=4)
    shown = list(reversed(outputs))
    j = bestworst_judgement_create(
        campaign=campaign, annotator=annotator, outputs=shown, best=outputs[0], worst=outputs[3], criterion="fluency"
    )
    ids = sorted(o.id for o in outputs)
    assert j.outputs == ids and j.tuple_key == "-".join(map(str, ids))
    assert j.shown_order == [o.id for o in shown]
    with pytest.raises(DuplicateJudgement):
        bestworst_judgement_create(
            campaign=campaign,
            annotator=annotator,
            outputs=outputs,
            best=outputs[1],
            worst=outputs[2],
            criterion="fluency",
        )
    with pytest.raises(ValidationError, match="different"):
        bestworst_judgement_create(
            campaign=campaign,
            annotator=annotator,
            outputs=outputs,
            best=outputs[1],
            worst=outputs[1],
            criterion="adequacy",
        )
    with pytest.raises(ValidationError, match="of the tuple"):
        bestworst_judgement_create(
            campaign=campaign,
            annotator=annotator,
            outputs=outputs[:3],
            best=outputs[3],
            worst=outputs[1],
            criterion="adequacy",
        )
    assert BestWorstJudgement.objects.count() == 1
