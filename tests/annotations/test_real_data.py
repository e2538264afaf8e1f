"""Real public judgements (../shared/data) through the public import commands.

ASSET (Alva-Manchego et al. 2020): items are the 359 lines of
`asset.test.orig` (id `asset-<0-based line>`, the `original_sentence_id` of
`human_ratings.csv`), with the 10 references of `asset.test.simp.0..9`; the
100 rated system simplifications are the outputs of one system `rated`; the
4,500 ratings (0-100, criteria meaning / fluency / simplicity, annotator =
`worker_id`) go into a Likert campaign. The rated sentences are matched to
their line by `original_sentence_id` (their casing differs slightly from the
test files).

HATS (Bañeras-Roux et al. 2023): one item per row of `hats.tsv` (id
`hats-<row>`, 1-based), the reference transcript as reference, `hypA` and
`hypB` as the outputs of systems `hypA` and `hypB`. The file only holds vote
counts, so each vote becomes one pairwise judgement by a synthetic annotator
named `vote-1`, `vote-2`, ... within the item: the first `nbrA` votes prefer
A, the next `nbrB` prefer B (the real voters are not identified per row).
"""

import csv
import json
from collections import Counter, defaultdict
from io import StringIO
from pathlib import Path
from statistics import mean

import pytest
from django.core.management import call_command

from annotations.models import Annotator, Dataset, Item, Output, PairwiseJudgement, RatingJudgement, Reference

pytestmark = pytest.mark.django_db


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def write_jsonl(path: Path, rows) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def read_lines(path: Path) -> list[str]:
    # The ASSET files have no final newline: split, do not drop the last line.
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def test_asset_ratings_import(shared_data, tmp_path):
    folder = shared_data / "asset"
    originals = read_lines(folder / "asset.test.orig")
    references = [read_lines(folder / f"asset.test.simp.{k}") for k in range(10)]
    with (folder / "human_ratings.csv").open(encoding="utf-8", newline="") as f:
        ratings = list(csv.DictReader(f))
    rated = {int(r["original_sentence_id"]): r["simplification"] for r in ratings}

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
            for r in ratings
        ),
    )

    summary = run("import_dataset", str(dataset_file), "--dataset", "asset", "--project", "asset")
    assert (summary["items"], summary["outputs"], summary["references_created"]) == (359, 100, 3590)
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
    )
    assert run("import_judgements", str(judgement_file), "--campaign", "asset-ratings") == {
        "campaign": "asset-ratings",
        "judgements": 4500,
        "created": 4500,
        "unchanged": False,
        "annotators_created": len({r["worker_id"] for r in ratings}),
    }

    dataset = Dataset.objects.get(name="asset")
    assert Item.objects.filter(dataset=dataset).count() == len(originals) == 359
    assert Reference.objects.filter(item__dataset=dataset).count() == 3590
    item = Item.objects.get(dataset=dataset, external_id="asset-7")
    assert item.source == originals[7]
    assert list(item.references.order_by("position").values_list("text", flat=True)) == [r[7] for r in references]
    assert RatingJudgement.objects.filter(campaign__name="asset-ratings").count() == 4500
    assert Annotator.objects.filter(project=dataset.project).count() == 31

    # Mean rating per rated output and aspect, computed from the CSV independently.
    expected = defaultdict(list)
    for r in ratings:
        expected[(f"asset-{r['original_sentence_id']}", r["aspect"])].append(float(r["rating"]))
    stored = defaultdict(list)
    for ext, criterion, score in RatingJudgement.objects.values_list("item__external_id", "criterion", "score"):
        stored[(ext, criterion)].append(score)
    assert {k: mean(v) for k, v in stored.items()} == pytest.approx({k: mean(v) for k, v in expected.items()})
    assert Output.objects.get(item=item, system__name="rated").text == rated[7]

    # Idempotent: importing both files again changes nothing.
    assert run("import_dataset", str(dataset_file), "--dataset", "asset")["unchanged"] is True
    assert run("import_judgements", str(judgement_file), "--campaign", "asset-ratings")["unchanged"] is True
    assert RatingJudgement.objects.count() == 4500


def test_hats_pairwise_import(shared_data, tmp_path):
    with (shared_data / "hats" / "hats.tsv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert len(rows) == 1000

    dataset_file = write_jsonl(
        tmp_path / "hats.jsonl",
        (
            {"item": f"hats-{n}", "references": [r["reference"]], "outputs": {"hypA": r["hypA"], "hypB": r["hypB"]}}
            for n, r in enumerate(rows, start=1)
        ),
    )

    def votes():
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

    judgement_file = write_jsonl(tmp_path / "hats-votes.jsonl", votes())
    total_votes = sum(int(r["nbrA"]) + int(r["nbrB"]) for r in rows)
    assert total_votes == 7150

    assert run("import_dataset", str(dataset_file), "--dataset", "hats")["outputs"] == 2000
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
    assert run("import_judgements", str(judgement_file), "--campaign", "hats-votes")["created"] == total_votes

    # Count the votes per item and system from the database, whatever the stored (canonical) order.
    counts: dict[str, Counter] = defaultdict(Counter)
    for j in PairwiseJudgement.objects.select_related("item", "output_a__system", "output_b__system"):
        preferred = {"a": j.output_a.system.name, "b": j.output_b.system.name}[j.winner]
        counts[j.item.external_id][preferred] += 1
    for n in (1, 2, 500, 1000):
        row = rows[n - 1]
        assert counts[f"hats-{n}"] == Counter({"hypA": int(row["nbrA"]), "hypB": int(row["nbrB"])}) - Counter()
    assert sum(sum(c.values()) for c in counts.values()) == total_votes
    assert Item.objects.get(external_id="hats-2").references.get().text == rows[1]["reference"]
