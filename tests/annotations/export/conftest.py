"""ASSET (../shared/data/asset) imported through the public commands, as in tests/annotations/test_real_data.py."""

import csv
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def write_jsonl(path: Path, rows) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


@pytest.fixture
def asset_ratings(shared_data):
    """The 4,500 ASSET ratings as read from the CSV (the reference for every expected figure)."""
    with (shared_data / "asset" / "human_ratings.csv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def asset_campaign(shared_data, asset_ratings, tmp_path):
    folder = shared_data / "asset"
    originals = _lines(folder / "asset.test.orig")
    references = [_lines(folder / f"asset.test.simp.{k}") for k in range(10)]
    rated = {int(r["original_sentence_id"]): r["simplification"] for r in asset_ratings}
    dataset_file = write_jsonl(
        tmp_path / "asset.jsonl",
        (
            {
                "item": f"asset-{i}",
                "source": src,
                "references": [refs[i] for refs in references],
                "outputs": {"rated": rated[i]} if i in rated else {},
            }
            for i, src in enumerate(originals)
        ),
    )
    judgement_file = write_jsonl(
        tmp_path / "asset-ratings.jsonl",
        (
            {
                "item": f"asset-{r['original_sentence_id']}",
                "system": "rated",
                "annotator": r["worker_id"],
                "criterion": r["aspect"],
                "score": float(r["rating"]),
            }
            for r in asset_ratings
        ),
    )
    run("import_dataset", str(dataset_file), "--dataset", "asset", "--project", "asset")
    run(
        "create_campaign",
        "--dataset",
        "asset",
        "--name",
        "asset-ratings",
        "--protocol",
        "likert",
        "--criteria",
        "meaning,fluency,simplicity",
        "--scale",
        "0-100",
        "--redundancy",
        "15",
    )
    run("import_judgements", str(judgement_file), "--campaign", "asset-ratings")
    from annotations.models import Campaign

    return Campaign.objects.get(name="asset-ratings")
