"""Exports carry media references (issue 41): each item's files by role (type, path under the media
root, alt text; never the bytes) in dataset.jsonl / dataset.csv, read back by import_dataset, and
the unit's listening time with its judgements."""

import csv
import json

import pytest
from django.urls import reverse

from annotations.models import Item
from tests.annotations.export.conftest import read_jsonl, run
from tests.annotations.media.test_media_page import _config, _submit

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_exports_carry_media_and_listening_time(client, media_world, tmp_path, fmt):
    anna = media_world["assignments"]["anna"]
    client.force_login(media_world["users"]["anna"])
    config = _config(client.get(reverse("annotate-unit", args=[anna.campaign_id])).content.decode())
    assert _submit(client, config, listened_ms=900).status_code == 201
    out = tmp_path / "out"
    run("export_dataset", "--campaign", anna.campaign.name, "--format", fmt, "--out", str(out))
    expected = {"source": {"type": "audio", "path": "talk.wav"}}
    if fmt == "jsonl":
        (row,) = read_jsonl(out / "dataset.jsonl")
        assert row["media"] == expected
        (judgement,) = read_jsonl(out / "judgements.jsonl")
        assert judgement["provenance"]["listened_ms"] == 900
    else:
        with (out / "dataset.csv").open(encoding="utf-8", newline="") as f:
            (row,) = list(csv.DictReader(f))
        assert json.loads(row["media"]) == expected
    assert b"RIFF" not in b"".join(p.read_bytes() for p in out.iterdir() if p.is_file())  # no bytes of the file
    # The export imports back as a dataset of its own, its media found under the media root.
    run("import_dataset", str(out / f"dataset.{fmt}"), "--dataset", "again")
    assert Item.objects.get(dataset__name="again").media["source"]["path"] == "talk.wav"


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_croissant_describes_media_and_documents(media_root, tmp_path, fmt):
    """croissant.json names the dataset table's media (role: type, path, alt) and doc / doc_pos, and
    mlcroissant (the reference implementation) validates it and reads them back as entered."""
    mlc = pytest.importorskip("mlcroissant", reason="mlcroissant (requirements-dev.txt) validates croissant.json")
    from tests.annotations.export.conftest import write_jsonl
    from tests.annotations.media.conftest import PNG

    (media_root / "bus.png").write_bytes(PNG)
    rows = [
        {
            "item": "p1",
            "source": "Ein Bus.",
            "doc": "d1",
            "doc_pos": 0,
            "media": {"source": {"type": "image", "path": "bus.png", "alt": "A red bus"}},
            "outputs": {"a": "A bus."},
        },
        {"item": "p2", "source": "Er hält.", "doc": "d1", "doc_pos": 1, "outputs": {"a": "It stops."}},
    ]
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "pics")
    run("create_campaign", "--dataset", "pics", "--name", "pics-esa", "--protocol", "esa", "--criteria", "quality")
    out = tmp_path / "out"
    run("export_dataset", "--campaign", "pics-esa", "--format", fmt, "--out", str(out))
    document = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    fields = {f["name"]: f for f in next(r for r in document["recordSet"] if r["@id"] == "dataset")["field"]}
    assert {"doc", "doc_pos", "media"} <= set(fields)
    outputs = {f["name"] for f in next(r for r in document["recordSet"] if r["@id"] == "outputs")["field"]}
    assert {"doc", "doc_pos"} <= outputs
    dataset = mlc.Dataset(jsonld=str(out / "croissant.json"))
    assert not dataset.metadata.ctx.issues.errors, dataset.metadata.ctx.issues.report()
    records = {r["dataset/item"].decode(): r for r in dataset.records("dataset")}
    assert {k: (r["dataset/doc"].decode(), int(r["dataset/doc_pos"])) for k, r in records.items()} == {
        "p1": ("d1", 0),
        "p2": ("d1", 1),
    }
    if fmt == "jsonl":
        assert [f["name"] for f in fields["media"]["subField"]] == ["source"]  # no item has reference media
        source = {k.rsplit("/", 1)[1]: v for k, v in records["p1"]["dataset/media/source"].items()}
        assert source == {"type": b"image", "path": b"bus.png", "alt": b"A red bus"}
        assert set(records["p2"]["dataset/media/source"].values()) == {None}
    else:
        assert json.loads(records["p1"]["dataset/media"]) == rows[0]["media"]
        assert records["p2"]["dataset/media"] is None
