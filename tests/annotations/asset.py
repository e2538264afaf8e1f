"""ASSET (Alva-Manchego et al. 2020, ../shared/data/asset) as the tests import it: through the public
commands, into a Likert campaign, the way a user would (one set-up for the import, analysis and export
tests; tests/annotations/test_real_data.py checks what it stores).

Items are the 359 lines of `asset.test.orig` (id `asset-<0-based line>`, the `original_sentence_id` of
`human_ratings.csv`), with the 10 references of `asset.test.simp.0..9`; the 100 rated system
simplifications are the outputs of one system `rated`; the 4,500 ratings (0-100, criteria meaning /
fluency / simplicity, annotator = `worker_id`, 15 per output) go into the campaign. The rated sentences
are matched to their line by `original_sentence_id` (their casing differs slightly from the test files).
"""

import csv
import json
from collections.abc import Iterable
from io import StringIO
from pathlib import Path

from django.core.management import call_command

CRITERIA = ("meaning", "fluency", "simplicity")
# The campaign the ratings go into, in campaign.json's terms (what export_dataset writes).
CAMPAIGN = {
    "dataset": "asset",
    "name": "asset-ratings",
    "protocol": "likert",
    "criteria": list(CRITERIA),
    "scale": [0, 100],
    "redundancy": 15,
}


def run(*args) -> dict:
    """A management command with --json, its answer parsed."""
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def write_jsonl(path: Path, rows: Iterable[dict]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def read_lines(path: Path) -> list[str]:
    # The ASSET files have no final newline: split, do not drop the last line.
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def asset_ratings(folder: Path) -> list[dict]:
    """The 4,500 ratings as read from the CSV (the reference for every expected figure)."""
    with (folder / "human_ratings.csv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def asset_lines(folder: Path, ratings: list[dict], items: Iterable[int] | None = None) -> tuple[list, list]:
    """The dataset's lines (every line of the test set, or those of `items` in that order) and the
    judgements' lines of `ratings`, in import_dataset's and import_judgements' formats."""
    originals = read_lines(folder / "asset.test.orig")
    references = [read_lines(folder / f"asset.test.simp.{k}") for k in range(10)]
    rated = {int(r["original_sentence_id"]): r["simplification"] for r in ratings}
    dataset = [
        {
            "item": f"asset-{i}",
            "source": originals[i],
            "references": [refs[i] for refs in references],
            "outputs": {"rated": rated[i]} if i in rated else {},
        }
        for i in (range(len(originals)) if items is None else items)
    ]
    judgements = [
        {
            "item": f"asset-{r['original_sentence_id']}",
            "system": "rated",
            "annotator": r["worker_id"],
            "criterion": r["aspect"],
            "score": float(r["rating"]),
        }
        for r in ratings
    ]
    return dataset, judgements


def campaign_import(dataset_file: Path, judgement_file: Path, *, project: str, config: dict = CAMPAIGN) -> tuple:
    """import_dataset, create_campaign (with `config`: campaign.json's keys), import_judgements; their
    summaries (the dataset's, the judgements')."""
    dataset = run("import_dataset", str(dataset_file), "--dataset", config["dataset"], "--project", project)
    run(
        "create_campaign",
        "--dataset",
        config["dataset"],
        "--name",
        config["name"],
        "--protocol",
        config["protocol"],
        "--criteria",
        ",".join(config["criteria"]),
        "--scale",
        "-".join(f"{x:g}" for x in config["scale"]),
        "--redundancy",
        str(config["redundancy"]),
    )
    return dataset, run("import_judgements", str(judgement_file), "--campaign", config["name"])


def campaign_reimport(folder: Path, *, project: str) -> dict:
    """An export_dataset folder imported back as a user would: its campaign.json's settings, its dataset.jsonl
    and judgements.jsonl; the judgements' import summary."""
    config = json.loads((folder / "campaign.json").read_text(encoding="utf-8"))
    return campaign_import(folder / "dataset.jsonl", folder / "judgements.jsonl", project=project, config=config)[1]
