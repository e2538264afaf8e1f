import json

import pytest

from annotations.models import Annotator, BestWorstJudgement, Output, PairwiseJudgement, RatingJudgement
from annotations.services.campaigns import campaign_create
from annotations.services.imports import ImportFailed, dataset_import, judgements_import
from annotations.services.judgements import rating_judgement_create
from tests.annotations.services.dbstate import table_counts


def jsonl(*objects) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode("utf-8")


@pytest.fixture
def dataset(db):
    content = jsonl(
        {"item": "i1", "outputs": {"A": "a1", "B": "b1", "C": "c1"}},
        {"item": "i2", "outputs": {"A": "a2", "B": "b2", "C": "c2"}},
        {"item": "i3", "outputs": {"A": "a3"}},
    )
    return dataset_import(stream=content, dataset_name="d").dataset


@pytest.fixture
def likert(dataset):
    return campaign_create(
        dataset=dataset, name="lik", protocol="likert", criteria=["fluency", "adequacy"], scale_min=1, scale_max=5
    )


def out(item: str, system: str) -> Output:
    return Output.objects.get(item__external_id=item, system__name=system)


def rating(item="i1", system="A", annotator="w1", criterion="fluency", score=3, **extra):
    return {"item": item, "system": system, "annotator": annotator, "criterion": criterion, "score": score, **extra}


def test_rating_import_creates_annotators_and_copies_scale(likert):
    result = judgements_import(
        stream=jsonl(
            rating(), rating(annotator="w2", score=5, rank=1), rating(item="i2", criterion="adequacy", score=1.5)
        ),
        campaign_name="lik",
    )
    assert (result.judgements, result.created, result.annotators_created, result.unchanged) == (3, 3, 2, False)
    j = RatingJudgement.objects.get(annotator__name="w2")
    assert (j.score, j.rank, j.scale_min, j.scale_max, j.origin) == (5, 1, 1, 5, "import")
    assert j.output == out("i1", "A") and j.item == j.output.item and j.shown_order == [j.output_id]
    assert set(Annotator.objects.values_list("name", flat=True)) == {"w1", "w2"}


def test_reimporting_judgements_is_a_no_op(likert):
    content = jsonl(rating(), rating(annotator="w2"))
    judgements_import(stream=content, campaign_name="lik")
    before = table_counts()
    result = judgements_import(stream=content, campaign_name="lik")
    assert result.unchanged and result.created == 0 and result.judgements == 2
    assert table_counts() == before


def test_import_skips_identical_browser_judgement_but_refuses_a_different_one(likert):
    w1 = Annotator.objects.create(project=likert.dataset.project, name="w1")
    rating_judgement_create(campaign=likert, annotator=w1, output=out("i1", "A"), criterion="fluency", score=3)
    assert judgements_import(stream=jsonl(rating(score=3)), campaign_name="lik").unchanged
    before = table_counts()
    with pytest.raises(ImportFailed) as exc:
        judgements_import(stream=jsonl(rating(item="i2"), rating(score=4)), campaign_name="lik")
    assert [e.line for e in exc.value.errors] == [2]
    assert "already has a different judgement" in exc.value.errors[0].reason
    assert table_counts() == before


BAD_RATING_LINES = [
    ("unknown item", rating(item="i9"), "unknown item 'i9'"),
    ("unknown system", rating(system="Z"), "unknown system 'Z'"),
    ("no output for item", rating(item="i3", system="B"), "system 'B' has no output for item 'i3'"),
    ("unknown criterion", rating(criterion="grammar"), "unknown criterion 'grammar'"),
    ("above scale", rating(score=6), "score 6 is outside the scale 1 to 5"),
    ("below scale", rating(score=0.5), "outside the scale"),
    ("score not a number", rating(score="3"), "score must be a number"),
    ("missing score", {k: v for k, v in rating().items() if k != "score"}, "missing field 'score'"),
    (
        "pairwise line",
        {"item": "i1", "annotator": "w", "criterion": "fluency", "a": "A", "b": "B", "winner": "a"},
        "this is a pairwise judgement but campaign 'lik' uses the likert protocol",
    ),
    ("bad rank", rating(rank=0), "rank must be"),
    ("bad time", rating(time_spent_ms=-3), "time_spent_ms"),
    ("empty annotator", rating(annotator=""), "annotator must be a non-empty string"),
    ("unknown field", rating(comment="x"), "unknown field 'comment'"),
]


@pytest.mark.parametrize("case, line, reason", BAD_RATING_LINES, ids=[c[0] for c in BAD_RATING_LINES])
def test_bad_rating_line_is_reported_and_nothing_written(likert, case, line, reason):
    judgements_import(stream=jsonl(rating(annotator="earlier")), campaign_name="lik")
    before = table_counts()
    with pytest.raises(ImportFailed) as exc:
        judgements_import(stream=jsonl(rating(annotator="new"), line), campaign_name="lik")
    assert [e.line for e in exc.value.errors] == [2], exc.value.errors
    assert reason in exc.value.errors[0].reason
    assert table_counts() == before


def test_syntax_encoding_and_duplicate_problems_are_all_reported(likert):
    before = table_counts()
    content = (
        jsonl(rating()) + b"{oops\n" + '{"item": "i1", "annotator": "é"}\n'.encode("latin-1") + jsonl(rating(score=4))
    )
    with pytest.raises(ImportFailed) as exc:
        judgements_import(stream=content, campaign_name="lik")
    lines = {e.line: e.reason for e in exc.value.errors}
    assert sorted(lines) == [2, 3, 4]
    assert "invalid JSON" in lines[2] and "UTF-8" in lines[3]
    assert "duplicate judgement" in lines[4] and "line 1" in lines[4]
    assert table_counts() == before


def test_unknown_campaign_and_empty_file(likert):
    with pytest.raises(ImportFailed, match="no campaign called 'nope'"):
        judgements_import(stream=jsonl(rating()), campaign_name="nope")
    with pytest.raises(ImportFailed, match="holds no judgements"):
        judgements_import(stream=b"", campaign_name="lik")


def test_rankme_magnitudes_must_be_positive(dataset):
    campaign_create(dataset=dataset, name="rk", protocol="rankme", criteria=["naturalness"])
    with pytest.raises(ImportFailed, match="line 2: RankME magnitudes must be above 0"):
        judgements_import(
            stream=jsonl(
                rating(criterion="naturalness", score=250), rating(system="B", criterion="naturalness", score=0)
            ),
            campaign_name="rk",
        )
    assert RatingJudgement.objects.count() == 0
    judgements_import(stream=jsonl(rating(criterion="naturalness", score=250)), campaign_name="rk")
    assert RatingJudgement.objects.get().scale_max is None


def pair(a="A", b="B", winner="a", annotator="w1", item="i1"):
    return {"item": item, "annotator": annotator, "criterion": "quality", "a": a, "b": b, "winner": winner}


def test_pairwise_import_is_canonical_and_keeps_shown_order(dataset):
    campaign_create(dataset=dataset, name="pw", protocol="pairwise", criteria=["quality"])
    a, b = out("i1", "A"), out("i1", "B")
    assert a.id < b.id
    judgements_import(
        stream=jsonl(pair("B", "A", "a"), pair("A", "B", "b", annotator="w2"), pair("B", "A", "tie", annotator="w3")),
        campaign_name="pw",
    )
    stored = {j.annotator.name: j for j in PairwiseJudgement.objects.all()}
    for j in stored.values():
        assert (j.output_a_id, j.output_b_id) == (a.id, b.id)
    # w1 saw B on the left and preferred it: stored as "b" (B is output_b).
    assert stored["w1"].winner == "b" and stored["w1"].shown_order == [b.id, a.id]
    assert stored["w2"].winner == "b" and stored["w2"].shown_order == [a.id, b.id]
    assert stored["w3"].winner == "tie"


def test_pairwise_duplicates_in_either_order_and_bad_lines(dataset):
    campaign_create(dataset=dataset, name="pw", protocol="pairwise", criteria=["quality"])
    with pytest.raises(ImportFailed) as exc:
        judgements_import(
            stream=jsonl(
                pair("A", "B"), pair("B", "A", "b"), pair("A", "A"), pair(winner="left"), pair(item="i3", b="C")
            ),
            campaign_name="pw",
        )
    reasons = {e.line: e.reason for e in exc.value.errors}
    assert "duplicate judgement" in reasons[2]
    assert reasons[3] == "a and b must be two different outputs"
    assert "winner must be" in reasons[4]
    assert "has no output for item 'i3'" in reasons[5]
    assert PairwiseJudgement.objects.count() == 0


def bws(outputs=("A", "B", "C"), best="A", worst="C", annotator="w1", item="i1"):
    return {
        "item": item,
        "annotator": annotator,
        "criterion": "quality",
        "outputs": list(outputs),
        "best": best,
        "worst": worst,
    }


def test_bestworst_import(dataset):
    campaign_create(dataset=dataset, name="bw", protocol="bws", criteria=["quality"], tuple_size=3)
    result = judgements_import(stream=jsonl(bws(), bws(("C", "B", "A"), "B", "A", annotator="w2")), campaign_name="bw")
    assert result.created == 2
    j = BestWorstJudgement.objects.get(annotator__name="w2")
    ids = [out("i1", s).id for s in "CBA"]
    assert j.shown_order == ids and j.outputs == sorted(ids)
    assert (j.best, j.worst) == (out("i1", "B"), out("i1", "A"))
    with pytest.raises(ImportFailed) as exc:
        judgements_import(
            stream=jsonl(
                bws(annotator="w3", best="B", worst="B"),
                bws(("A", "B"), "C", "A"),
                bws(("A", "A", "B")),
                bws(("C", "A", "B"), "A", "C"),
            ),
            campaign_name="bw",
        )
    reasons = {e.line: e.reason for e in exc.value.errors}
    assert reasons[1] == "best and worst must be different outputs"
    assert reasons[2] == "best and worst must be outputs of the tuple"
    assert "twice" in reasons[3]
    assert 4 not in reasons  # the stored judgement of w1 again, the tuple shown in another order
    assert BestWorstJudgement.objects.count() == 2
    with pytest.raises(ImportFailed, match="line 1: annotator 'w1' already has a different judgement"):
        judgements_import(stream=jsonl(bws(("B", "C", "A"), "B", "C")), campaign_name="bw")
