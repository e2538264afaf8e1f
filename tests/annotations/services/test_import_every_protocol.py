"""Every registered protocol's judgement import: the same file twice is a no-op, and a changed
answer to a stored judgement is a line error that writes nothing."""

import json

import pytest

from annotations.protocols import registry as protocols
from annotations.services.campaigns import campaign_create
from annotations.services.imports import ImportFailed, dataset_import, judgements_import
from tests.annotations.services.dbstate import table_counts

TEXT = "The cat sat on the mat."


def rating(system="A", score=3, annotator="w1", **extra):
    return {"item": "i1", "system": system, "annotator": annotator, "criterion": "q", "score": score, **extra}


def pair(a="A", b="B", winner="a", annotator="w1", **extra):
    return {"item": "i1", "annotator": annotator, "criterion": "q", "a": a, "b": b, "winner": winner, **extra}


def tuple_(outputs=("A", "B", "C"), best="A", worst="C", annotator="w1", **extra):
    return {
        "item": "i1",
        "annotator": annotator,
        "criterion": "q",
        "outputs": list(outputs),
        "best": best,
        "worst": worst,
        **extra,
    }


SPANS = [{"start": 0, "end": 3, "severity": "minor"}, {"missing": True, "severity": "major"}]
MQM_SPANS = [
    {"start": 0, "end": 3, "severity": "minor", "category": "Other"},
    {"missing": True, "severity": "major", "category": "Accuracy/Omission"},
]

# Per protocol: campaign settings, the file, lines that restate a stored judgement in other words
# (skipped), and lines that change a stored answer (each refused). A new protocol fails here until
# it is given its lines.
CASES = {
    "likert": dict(
        settings={"scale_min": 1, "scale_max": 5},
        file=[rating(), rating(system="B", score=5, rank=1), rating(annotator="w2", score=2.5)],
        same=[rating(time_spent_ms=1200), rating(system="B", score=5.0, rank=1, shown_order=["B", "A"])],
        changed=[rating(score=4), rating(system="B", score=5, rank=2)],
    ),
    "rankme": dict(
        settings={},
        file=[rating(score=120, rank=1), rating(system="B", score=80, rank=2), rating(system="C", score=50)],
        same=[rating(score=120, rank=1, shown_order=["C", "A", "B"])],
        changed=[rating(score=121, rank=1), rating(score=120, rank=3), rating(system="C", score=51)],
    ),
    "esa": dict(
        settings={},
        file=[rating(score=70, spans=SPANS), rating(system="B", score=100)],
        # The same spans in another order, and "no spans" written out as an empty list.
        same=[rating(score=70, spans=SPANS[::-1]), rating(system="B", score=100, spans=[])],
        changed=[
            rating(score=71, spans=SPANS),
            rating(score=70, spans=SPANS[:1]),
            rating(score=70, spans=[{**SPANS[0], "severity": "major"}, SPANS[1]]),
            rating(system="B", score=100, spans=SPANS[:1]),
        ],
    ),
    # cESA: ESA's lines, the outputs of one screen named in shown_order.
    "cesa": dict(
        settings={},
        file=[
            rating(score=70, spans=SPANS, shown_order=["A", "B", "C"]),
            rating(system="B", score=100, shown_order=["A", "B", "C"]),
            rating(system="C", score=40, spans=SPANS[:1], shown_order=["A", "B", "C"]),
        ],
        same=[rating(score=70, spans=SPANS[::-1], shown_order=["A", "B", "C"]), rating(system="B", score=100)],
        changed=[
            rating(score=71, spans=SPANS),
            rating(system="C", score=40, spans=SPANS),
            rating(system="B", score=100, spans=SPANS[:1]),
        ],
    ),
    "mqm": dict(
        settings={},
        file=[rating(spans=MQM_SPANS), rating(system="B", spans=[])],
        # The same spans in another order, the category in another case, a score (recomputed, not
        # imported), and "no error" as absent spans.
        same=[rating(score=99, spans=[MQM_SPANS[1], {**MQM_SPANS[0], "category": "OTHER"}]), rating(system="B")],
        changed=[
            rating(spans=MQM_SPANS[:1]),
            rating(spans=[{**MQM_SPANS[0], "category": "Style/Awkward"}, MQM_SPANS[1]]),
            rating(spans=[{**MQM_SPANS[0], "severity": "neutral"}, MQM_SPANS[1]]),
            rating(system="B", spans=MQM_SPANS[:1]),
        ],
    ),
    "pairwise": dict(
        settings={},
        file=[pair(), pair("C", "B", "tie"), pair("A", "C", "b", annotator="w2")],
        # The same pair with B shown first: the winner is the same output.
        same=[pair("B", "A", "b"), pair("B", "C", "tie")],
        changed=[pair(winner="b"), pair(winner="tie"), pair("B", "A", "a"), pair("C", "B", "a")],
    ),
    # Post-editing, rated on a 1-5 scale: the HTER in a line (an exported one) is recomputed, not imported.
    "post-edit": dict(
        settings={"scale_min": 1, "scale_max": 5},
        file=[
            rating(post_edit="The cat sat on a mat.", score=None, rating=4),
            rating(system="B", post_edit="A cat sat.", rating=5, score=None),
        ],
        same=[rating(post_edit="The cat sat on a mat.", score=99, rating=4.0, shown_order=["A"])],
        changed=[
            rating(post_edit="The cat sat on the mat.", rating=4, score=None),
            rating(post_edit="The cat sat on a mat.", rating=3, score=None),
        ],
    ),
    "bws": dict(
        settings={"tuple_size": 3},
        file=[tuple_(), tuple_(("B", "C", "A"), "B", "A", annotator="w2")],
        # The same tuple shown in another order.
        same=[tuple_(("C", "A", "B")), tuple_(("A", "B", "C"), "B", "A", annotator="w2")],
        changed=[tuple_(best="B"), tuple_(worst="B"), tuple_(best="C", worst="A")],
    ),
}


def jsonl(*objects) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode("utf-8")


@pytest.fixture
def dataset(db):
    content = jsonl({"item": "i1", "outputs": {"A": TEXT, "B": "A cat sat.", "C": "On the mat, a cat."}})
    return dataset_import(stream=content, dataset_name="d").dataset


@pytest.mark.parametrize("name", protocols.names())
def test_reimport_is_a_no_op_and_a_changed_answer_is_a_line_error(dataset, name):
    case = CASES[name]
    campaign_create(dataset=dataset, name="c", protocol=name, criteria=["q"], **case["settings"])
    model = protocols.get(name).model
    file = jsonl(*case["file"])

    first = judgements_import(stream=file, campaign_name="c")
    assert (first.created, first.unchanged) == (len(case["file"]), False)
    assert model.objects.count() == len(case["file"])
    stored = table_counts()
    ids = sorted(model.objects.values_list("id", flat=True))

    again = judgements_import(stream=file, campaign_name="c")
    assert (again.created, again.unchanged, again.judgements) == (0, True, len(case["file"]))
    reworded = judgements_import(stream=jsonl(*case["same"]), campaign_name="c")
    assert (reworded.created, reworded.unchanged) == (0, True)
    assert table_counts() == stored and sorted(model.objects.values_list("id", flat=True)) == ids

    for changed in case["changed"]:
        # Line 1 is a new judgement: the changed line 2 alone fails the file, and nothing is written.
        content = jsonl({**case["file"][0], "annotator": "w-new"}, changed)
        with pytest.raises(ImportFailed) as exc:
            judgements_import(stream=content, campaign_name="c")
        assert [str(e) for e in exc.value.errors] == [
            "line 2: annotator 'w1' already has a different judgement of this unit for 'q' in campaign 'c'"
        ], changed
        assert table_counts() == stored
