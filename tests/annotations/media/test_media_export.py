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
