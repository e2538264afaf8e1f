"""Real public judgements (../shared/data) through the public import commands.

ASSET (Alva-Manchego et al. 2020): the set-up of tests/annotations/asset.py (its docstring says how the
files map to items, outputs and ratings), checked here against the files.

HATS (Bañeras-Roux et al. 2023): the set-up of tests/annotations/hats.py (one pairwise judgement a vote),
checked here against the file.
"""

from collections import Counter, defaultdict
from statistics import mean

import pytest

from annotations.models import Annotator, Dataset, Item, Output, PairwiseJudgement, RatingJudgement, Reference
from tests.annotations import asset
from tests.annotations.asset import read_lines, run, write_jsonl
from tests.annotations.hats import hats_import

pytestmark = pytest.mark.django_db


def test_asset_ratings_import(shared_data, tmp_path):
    folder = shared_data / "asset"
    originals = read_lines(folder / "asset.test.orig")
    references = [read_lines(folder / f"asset.test.simp.{k}") for k in range(10)]
    ratings = asset.asset_ratings(folder)
    rated = {int(r["original_sentence_id"]): r["simplification"] for r in ratings}
    dataset_lines, judgement_lines = asset.asset_lines(folder, ratings)
    dataset_file = write_jsonl(tmp_path / "asset.jsonl", dataset_lines)
    judgement_file = write_jsonl(tmp_path / "asset-ratings.jsonl", judgement_lines)

    summary, judgements = asset.campaign_import(dataset_file, judgement_file, project="asset")
    assert (summary["items"], summary["outputs"], summary["references_created"]) == (359, 100, 3590)
    assert judgements == {
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
    rows, dataset, judgements = hats_import(shared_data / "hats", tmp_path)
    assert len(rows) == 1000
    total_votes = sum(int(r["nbrA"]) + int(r["nbrB"]) for r in rows)
    assert total_votes == 7150
    assert dataset["outputs"] == 2000
    assert judgements["created"] == total_votes

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
