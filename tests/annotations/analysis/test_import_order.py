"""Figures that depend on the data alone (issue 26): the same ASSET ratings imported in two orders,
and through an export -> re-import round trip, give identical `agreement --json` and
`correlate --json` answers under the same seed: point figures, bootstrap intervals, PERM-BOTH
p-values and Cohen's kappa pair names included.

Each import starts from an empty workbench with the same names, so the only things that differ
are the order of the lines and hence the database ids (items, outputs, annotators, judgements).
The metric runs' database ids ("run", "compare_run") are the one part of the answers allowed
to differ. A deterministic subsample (the first ITEMS rated sentences by id) keeps it quick.
"""
import csv
import json
import random
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.models import Annotator, Output, Project

pytestmark = pytest.mark.django_db
CRITERIA = ("meaning", "fluency", "simplicity")
ITEMS = 50
SEED = 26
RUN_IDS = ("run", "compare_run")


def _run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def _write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


@pytest.fixture
def asset_files(shared_data, tmp_path):
    """dataset.jsonl and judgements.jsonl of the first ITEMS rated ASSET sentences, in file order."""
    folder = shared_data / "asset"
    with (folder / "human_ratings.csv").open(encoding="utf-8", newline="") as f:
        ratings = list(csv.DictReader(f))
    keep = sorted({int(r["original_sentence_id"]) for r in ratings})[:ITEMS]
    ratings = [r for r in ratings if int(r["original_sentence_id"]) in keep]
    originals = _lines(folder / "asset.test.orig")
    references = [_lines(folder / f"asset.test.simp.{k}") for k in range(10)]
    rated = {int(r["original_sentence_id"]): r["simplification"] for r in ratings}
    items = [{"item": f"asset-{i}", "source": originals[i], "references": [refs[i] for refs in references],
              "outputs": {"rated": rated[i]}} for i in keep]
    judgements = [{"item": f"asset-{r['original_sentence_id']}", "system": "rated", "annotator": r["worker_id"],
                   "criterion": r["aspect"], "score": float(r["rating"])} for r in ratings]
    return items, judgements


def _import(dataset_file: Path, judgement_file: Path) -> None:
    """An empty workbench, then the public commands: dataset, campaign, judgements, two metric runs."""
    Project.objects.all().delete()
    assert not Output.objects.exists() and not Annotator.objects.exists()
    _run("import_dataset", str(dataset_file), "--dataset", "asset", "--project", "asset")
    _run("create_campaign", "--dataset", "asset", "--name", "asset-ratings", "--protocol", "likert",
         "--criteria", ",".join(CRITERIA), "--scale", "0-100", "--redundancy", "15")
    _run("import_judgements", str(judgement_file), "--campaign", "asset-ratings")
    for metric in ("bleu", "chrf"):
        call_command("run_metric", dataset="asset", metric=metric, sync=True, no_progress=True,
                     stdout=StringIO(), stderr=StringIO())


def _answers() -> dict:
    """Every figure with an interval or a p-value, as the commands print it (run ids left out)."""
    found = {"agreement": _run("agreement", "--campaign", "asset-ratings", "--seed", str(SEED))}
    for c in CRITERIA:
        for extra in ([], ["--compare", "chrf"], ["--method", "kendall", "--group-by", "item"],
                      ["--level", "system"]):
            key = " ".join(["correlate", c, *extra])
            answer = _run("correlate", "--campaign", "asset-ratings", "--metric", "bleu", "--criterion", c,
                          "--seed", str(SEED), *extra)
            found[key] = {k: v for k, v in answer.items() if k not in RUN_IDS}
    return found


def _ids() -> list[tuple[str, int]]:
    return sorted(Output.objects.values_list("item__external_id", "pk"))


def test_same_figures_in_any_import_order_and_after_a_round_trip(asset_files, tmp_path):
    items, judgements = asset_files

    _import(_write_jsonl(tmp_path / "d1.jsonl", items), _write_jsonl(tmp_path / "j1.jsonl", judgements))
    first, first_ids = _answers(), _ids()
    exported = tmp_path / "export"
    _run("export_dataset", "--campaign", "asset-ratings", "--format", "jsonl", "--real-annotator-ids",
         "--out", str(exported))

    # The dataset reversed, the judgements shuffled: other database ids for the same data.
    shuffled = list(judgements)
    random.Random(SEED).shuffle(shuffled)
    _import(_write_jsonl(tmp_path / "d2.jsonl", items[::-1]), _write_jsonl(tmp_path / "j2.jsonl", shuffled))
    second, second_ids = _answers(), _ids()
    # The test means something only if the ids really follow another order.
    order = [pk for _, pk in first_ids]
    other = [pk for _, pk in second_ids]
    assert sorted(range(len(order)), key=order.__getitem__) != sorted(range(len(other)), key=other.__getitem__)

    _import(exported / "dataset.jsonl", exported / "judgements.jsonl")
    third = _answers()

    # The intervals are there (computed, seed recorded), so identity is not trivially None == None.
    for c in CRITERIA:
        ci = first["agreement"]["criteria"][c]["ci95"]
        assert ci["seed"] == SEED and ci["reps"] == 200 and None not in ci["krippendorff_alpha_interval"]
        assert first[f"correlate {c}"]["bootstrap"]["seed"] == SEED and None not in first[f"correlate {c}"]["ci95"]
        assert first[f"correlate {c} --compare chrf"]["test_seed"] == SEED
        pairs = first["agreement"]["criteria"][c]["cohen_kappa"]
        assert pairs and all(a < b for a, b in (key.split("|") for key in pairs))
        assert list(pairs) == sorted(pairs)

    assert json.dumps(second, sort_keys=True) == json.dumps(first, sort_keys=True)
    assert json.dumps(third, sort_keys=True) == json.dumps(first, sort_keys=True)
    # The same order of keys too (pairs, annotators): the printed JSON is the same text.
    assert json.dumps(second) == json.dumps(first)
    assert json.dumps(third) == json.dumps(first)
