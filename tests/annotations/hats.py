"""HATS (Bañeras-Roux et al. 2023, ../shared/data/hats) as the tests import it: through the public
commands, into a pairwise campaign `hats-votes` (tests/annotations/test_real_data.py checks what it stores).

One item per row of `hats.tsv` (id `hats-<row>`, 1-based), the reference transcript as reference, `hypA`
and `hypB` as the outputs of systems `hypA` and `hypB`. The file only holds vote counts, so each vote
becomes one pairwise judgement by a synthetic annotator named `vote-1`, `vote-2`, ... within the item: the
first `nbrA` votes prefer A, the next `nbrB` prefer B (the real voters are not identified per row).
"""

import csv
from collections.abc import Iterator
from pathlib import Path

from tests.annotations.asset import run, write_jsonl


def hats_rows(folder: Path) -> list[dict]:
    with (folder / "hats.tsv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def _votes(rows: list[dict]) -> Iterator[dict]:
    for n, r in enumerate(rows, start=1):
        winners = ["a"] * int(r["nbrA"]) + ["b"] * int(r["nbrB"])
        for k, winner in enumerate(winners, start=1):
            yield {
                "item": f"hats-{n}",
                "annotator": f"vote-{k}",
                "criterion": "preference",
                "a": "hypA",
                "b": "hypB",
                "winner": winner,
            }


def hats_import(folder: Path, tmp_path: Path, *, project: str = "hats") -> tuple[list[dict], dict, dict]:
    """The rows of hats.tsv, and the summaries of import_dataset and import_judgements."""
    rows = hats_rows(folder)
    dataset_file = write_jsonl(
        tmp_path / "hats.jsonl",
        (
            {"item": f"hats-{n}", "references": [r["reference"]], "outputs": {"hypA": r["hypA"], "hypB": r["hypB"]}}
            for n, r in enumerate(rows, start=1)
        ),
    )
    judgement_file = write_jsonl(tmp_path / "hats-votes.jsonl", _votes(rows))
    dataset = run("import_dataset", str(dataset_file), "--dataset", "hats", "--project", project)
    run(
        "create_campaign",
        "--dataset",
        "hats",
        "--name",
        "hats-votes",
        "--protocol",
        "pairwise",
        "--criteria",
        "preference",
    )
    return rows, dataset, run("import_judgements", str(judgement_file), "--campaign", "hats-votes")
