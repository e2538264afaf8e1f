"""The importers on hostile input: one `line N: reason` each, nothing written, no crash;
and how ids with surrounding whitespace are read (stripped: `" n1 "` is `n1`)."""

import json

import pytest

from annotations.models import Annotator, Item, Output, RatingJudgement, System
from annotations.services.campaigns import campaign_create
from annotations.services.imports import ImportFailed, dataset_import, judgements_import
from tests.annotations.hostile import CSV_META_1E999, DATASET_LINES, GOOD_LINE, JUDGEMENT_LINES
from tests.annotations.services.dbstate import table_counts


@pytest.fixture
def existing(db):
    dataset_import(stream=GOOD_LINE + b"\n", dataset_name="d")
    return table_counts()


@pytest.mark.parametrize("case", DATASET_LINES)
@pytest.mark.parametrize("dataset_name", ["d", "new"])
def test_hostile_dataset_line_is_a_line_error(existing, case, dataset_name):
    line, reason = DATASET_LINES[case]
    with pytest.raises(ImportFailed) as exc:
        dataset_import(stream=GOOD_LINE + b"\n" + line + b"\n", dataset_name=dataset_name)
    assert [str(e).split(":")[0] for e in exc.value.errors] == ["line 2"], exc.value.errors
    assert reason in exc.value.errors[0].reason
    assert table_counts() == existing


def test_csv_meta_out_of_range_is_a_line_error(existing):
    with pytest.raises(ImportFailed) as exc:
        dataset_import(stream=CSV_META_1E999, dataset_name="new", fmt="csv")
    assert (
        str(exc.value.errors[0])
        == "line 2: column meta: invalid JSON: number 1e999 is out of range (larger than a 64-bit float)"
    )
    assert table_counts() == existing


def test_lone_surrogate_in_a_name_from_the_command_line(existing):
    # sys.argv decodes undecodable bytes to lone surrogates ("surrogateescape").
    for kwargs in ({"dataset_name": "d\udcff"}, {"dataset_name": "new", "project_name": "p\udcff"}):
        with pytest.raises(ImportFailed, match="lone surrogate"):
            dataset_import(stream=GOOD_LINE, **kwargs)
    with pytest.raises(ImportFailed, match="lone surrogate"):
        judgements_import(stream=b"{}", campaign_name="c\udcff")
    assert table_counts() == existing


def test_ids_and_names_are_stripped_of_surrounding_whitespace(db):
    lines = [
        {"item": " n1 ", "source": "s", "outputs": {" A ": "a", "B": "b"}},
        {"item": "n2\t", "outputs": {"A": "a2"}},
    ]
    dataset_import(stream="\n".join(json.dumps(x) for x in lines).encode(), dataset_name="  spaced  ")
    assert list(Item.objects.values_list("external_id", flat=True).order_by("position")) == ["n1", "n2"]
    assert sorted(System.objects.values_list("name", flat=True)) == ["A", "B"]
    assert Item.objects.get(external_id="n1").dataset.name == "spaced"
    # The padded and the bare id name the same item: re-importing either changes nothing.
    before = table_counts()
    again = dataset_import(stream=b'{"item": "n1", "source": "s", "outputs": {"A": "a"}}', dataset_name="spaced")
    assert again.unchanged and table_counts() == before
    # Inside one file they are one id twice.
    with pytest.raises(ImportFailed) as exc:
        dataset_import(stream=b'{"item": "n3"}\n{"item": " n3"}\n', dataset_name="spaced")
    assert str(exc.value.errors[0]) == "line 2: duplicate item id 'n3' (first on line 1)"
    with pytest.raises(ImportFailed, match="outputs name system 'A' twice"):
        dataset_import(stream=b'{"item": "n4", "outputs": {"A": "x", "A ": "y"}}', dataset_name="spaced")
    with pytest.raises(ImportFailed, match="several columns name system 'A'"):
        dataset_import(stream=b"item,output:A,output: A\nn5,x,y\n", dataset_name="spaced", fmt="csv")
    assert table_counts() == before


@pytest.fixture
def campaign(db):
    dataset_import(stream=b'{"item": "i1", "outputs": {"A": "a", "B": "b"}}', dataset_name="jd")
    from annotations.models import Dataset

    return campaign_create(
        dataset=Dataset.objects.get(name="jd"),
        name="c",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
    )


@pytest.mark.parametrize("case", JUDGEMENT_LINES)
def test_hostile_judgement_line_is_a_line_error(campaign, case):
    line, reason = JUDGEMENT_LINES[case]
    good = b'{"item": "i1", "system": "B", "annotator": "w", "criterion": "fluency", "score": 3}'
    before = table_counts()
    with pytest.raises(ImportFailed) as exc:
        judgements_import(stream=good + b"\n" + line + b"\n", campaign_name="c")
    assert [str(e).split(":")[0] for e in exc.value.errors] == ["line 2"], exc.value.errors
    assert reason in exc.value.errors[0].reason
    assert table_counts() == before


def test_judgement_ids_and_annotators_are_stripped(campaign):
    line = b'{"item": " i1", "system": "A ", "annotator": " w1 ", "criterion": "fluency", "score": 4}'
    assert judgements_import(stream=line, campaign_name=" c ").created == 1
    judgement = RatingJudgement.objects.get()
    assert judgement.output == Output.objects.get(item__external_id="i1", system__name="A")
    assert list(Annotator.objects.values_list("name", flat=True)) == ["w1"]
    again = b'{"item": "i1", "system": "A", "annotator": "w1", "criterion": "fluency", "score": 4}'
    assert judgements_import(stream=again, campaign_name="c").unchanged
