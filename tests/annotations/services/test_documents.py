"""Items in documents (issue 41): `doc` and `doc_pos` read from JSONL, CSV and WMT's MQM TSV,
checked line by line, and carried by the campaign export so that it imports back unchanged."""

import csv
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.models import Item
from tests.annotations.export.conftest import read_jsonl, run, write_jsonl

pytestmark = pytest.mark.django_db


def fails(*args) -> str:
    err = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command(*args, stderr=err)
    return f"{exc.value}\n{err.getvalue()}"


def _places(dataset: str) -> dict[str, tuple[str, int | None]]:
    return {
        ext: (doc, pos)
        for ext, doc, pos in Item.objects.filter(dataset__name=dataset).values_list("external_id", "doc", "doc_pos")
    }


ROWS = [
    {"item": "s1", "source": "Erster Satz.", "doc": "news-1", "doc_pos": 0, "outputs": {"a": "First.", "b": "One."}},
    {"item": "s2", "source": "Zweiter Satz.", "doc": "news-1", "doc_pos": 1, "outputs": {"a": "Second.", "b": "Two."}},
    {"item": "s3", "source": "Anderes.", "doc": "news-2", "doc_pos": 0, "outputs": {"a": "Other.", "b": "Else."}},
    {"item": "s4", "source": "Ohne Dokument.", "outputs": {"a": "No doc.", "b": "None."}},
]
EXPECTED = {"s1": ("news-1", 0), "s2": ("news-1", 1), "s3": ("news-2", 0), "s4": ("", None)}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_documents_survive_import_export_and_import_again(tmp_path, fmt):
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", ROWS)), "--dataset", "docs")
    assert _places("docs") == EXPECTED
    run("create_campaign", "--dataset", "docs", "--name", "c", "--protocol", "esa", "--criteria", "quality")
    out = tmp_path / "out"
    run("export_dataset", "--campaign", "c", "--format", fmt, "--out", str(out))
    if fmt == "jsonl":
        rows = read_jsonl(out / "dataset.jsonl")
        assert {r["item"]: (r["doc"], r["doc_pos"]) for r in rows} == EXPECTED
        outputs = read_jsonl(out / "outputs.jsonl")
        assert {(r["item"], r["system"]): (r["doc"], r["doc_pos"]) for r in outputs}[("s2", "b")] == ("news-1", 1)
    else:
        with (out / "dataset.csv").open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        assert {r["item"]: (r["doc"], r["doc_pos"]) for r in rows}["s2"] == ("news-1", "1")
    croissant = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    dataset_fields = next(r for r in croissant["recordSet"] if r["@id"] == "dataset")["field"]
    assert {"doc", "doc_pos"} <= {f["name"] for f in dataset_fields}
    run("import_dataset", str(out / f"dataset.{fmt}"), "--dataset", "again")
    assert _places("again") == EXPECTED


def test_a_dataset_without_documents_exports_as_before(tmp_path):
    rows = [{"item": r["item"], "source": r["source"], "outputs": r["outputs"]} for r in ROWS]
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "plain")
    run("create_campaign", "--dataset", "plain", "--name", "c", "--protocol", "esa", "--criteria", "quality")
    run("export_dataset", "--campaign", "c", "--format", "csv", "--out", str(tmp_path / "out"))
    header = (tmp_path / "out" / "dataset.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "doc" not in header.split(",")


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"item": "x", "doc": "d", "doc_pos": -1}, "doc_pos must be a non-negative integer, got -1"),
        ({"item": "x", "doc": "d", "doc_pos": "3"}, "doc_pos must be a non-negative integer, got '3'"),
        ({"item": "x", "doc": "d", "doc_pos": True}, "doc_pos must be a non-negative integer, got True"),
        ({"item": "x", "doc": "d", "doc_pos": 1.5}, "doc_pos must be a non-negative integer, got 1.5"),
        ({"item": "x", "doc_pos": 2}, "doc_pos needs a doc"),
        ({"item": "x", "doc": ["d"]}, "doc must be a non-empty string"),
    ],
)
def test_bad_document_fields_are_line_errors_and_nothing_is_imported(tmp_path, row, reason):
    path = write_jsonl(tmp_path / "d.jsonl", [{"item": "ok", "doc": "d", "doc_pos": 0}, row])
    message = fails("import_dataset", str(path), "--dataset", "bad")
    assert f"line 2: {reason}" in message
    assert not Item.objects.filter(dataset__name="bad").exists()


def test_a_place_in_a_document_holds_one_segment(tmp_path):
    rows = [
        {"item": "a", "doc": "d", "doc_pos": 0},
        {"item": "b", "doc": "e", "doc_pos": 0},  # another document: the same place is free
        {"item": "c", "doc": "d", "doc_pos": 0},
    ]
    message = fails("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "dup")
    assert "line 3: doc 'd' already has a segment at doc_pos 0 (item 'a', line 1)" in message
    assert "line 2" not in message

    # Against what the dataset already holds, and an item may not move.
    run("import_dataset", str(write_jsonl(tmp_path / "one.jsonl", rows[:2])), "--dataset", "dup")
    message = fails("import_dataset", str(write_jsonl(tmp_path / "two.jsonl", [rows[2]])), "--dataset", "dup")
    assert "line 1: doc 'd' already has a segment at doc_pos 0 (item 'a')" in message
    moved = [{"item": "a", "doc": "d", "doc_pos": 5}]
    message = fails("import_dataset", str(write_jsonl(tmp_path / "moved.jsonl", moved)), "--dataset", "dup")
    assert "line 1: item 'a' already exists with a different doc/doc_pos" in message
    assert _places("dup") == {"a": ("d", 0), "b": ("e", 0)}


def test_csv_columns_doc_and_doc_pos(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("item,source,doc,doc_pos,output:a\ns1,Eins,talk,0,One\ns2,Zwei,talk,1,Two\ns3,Drei,,,Three\n")
    run("import_dataset", str(path), "--dataset", "csv")
    assert _places("csv") == {"s1": ("talk", 0), "s2": ("talk", 1), "s3": ("", None)}
    path.write_text("item,source,doc,doc_pos\ns1,Eins,talk,first\n")
    assert "line 2: doc_pos must be a non-negative integer, got 'first'" in fails(
        "import_dataset", str(path), "--dataset", "csv-bad"
    )


def test_wmt_mqm_tsv_maps_doc_and_doc_id(shared_data):
    tsv = shared_data / "wmt-mqm" / "mqm_ted_ende.tsv"
    if not tsv.is_file():
        pytest.skip(f"{tsv} is absent (see ../shared/data/SOURCES.md)")
    # The reference: the file itself as WMT's reader (score_mqm.py) reads it.
    expected = {}
    with tsv.open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            expected[row["seg_id"]] = (row["doc"], int(row["doc_id"]))
    run("import_dataset", str(tsv), "--dataset", "ted", "--format", "mqm-tsv")
    places = _places("ted")
    assert places == expected and len(places) == 529
    # talk.3 starts at seg_id 218, its first segment.
    assert places["218"] == ("talk.3", 1)
    assert len({p for p in places.values() if p[0] == "talk.1"}) == 140


def test_the_item_api_and_page_show_the_document(tmp_path, client):
    from annotations.models import Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", ROWS)), "--dataset", "docs")
    item = Item.objects.get(dataset__name="docs", external_id="s2")
    user = UserFactory(username="res")
    MembershipFactory(project=item.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    body = client.get(f"/api/items/{item.pk}/").json()
    assert (body["doc"], body["doc_pos"]) == ("news-1", 1)
    page = client.get(f"/items/{item.pk}/").content.decode()
    assert "Document <strong>news-1</strong>, segment at position 1" in page
