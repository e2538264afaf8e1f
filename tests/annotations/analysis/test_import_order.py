"""Figures that depend on the data alone (issue 26): the same ASSET ratings imported in two orders,
and through an export -> re-import round trip, give identical `agreement --json` and
`correlate --json` answers under the same seed: point figures, bootstrap intervals, PERM-BOTH
p-values and Cohen's kappa pair names included.

Each import starts from an empty workbench with the same names, so the only things that differ
are the order of the lines and hence the database ids (items, outputs, annotators, judgements).
The metric runs' database ids ("run", "compare_run") are the one part of the answers allowed
to differ. A deterministic subsample (the first ITEMS rated sentences by id) keeps it quick.
"""

import json
import random
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.models import Annotator, Output, Project
from tests.annotations import asset
from tests.annotations.asset import CRITERIA, run, write_jsonl

pytestmark = pytest.mark.django_db
ITEMS = 50
SEED = 26
RUN_IDS = ("run", "compare_run")


@pytest.fixture
def asset_files(shared_data):
    """dataset.jsonl and judgements.jsonl lines of the first ITEMS rated ASSET sentences, in file order."""
    folder = shared_data / "asset"
    ratings = asset.asset_ratings(folder)
    keep = sorted({int(r["original_sentence_id"]) for r in ratings})[:ITEMS]
    return asset.asset_lines(folder, [r for r in ratings if int(r["original_sentence_id"]) in keep], items=keep)


def _import(dataset_file: Path, judgement_file: Path) -> None:
    """An empty workbench, then the public commands: dataset, campaign, judgements, two metric runs."""
    Project.objects.all().delete()
    assert not Output.objects.exists() and not Annotator.objects.exists()
    asset.campaign_import(dataset_file, judgement_file, project="asset")
    for metric in ("bleu", "chrf"):
        call_command(
            "run_metric",
            dataset="asset",
            metric=metric,
            sync=True,
            no_progress=True,
            stdout=StringIO(),
            stderr=StringIO(),
        )


def _answers() -> dict:
    """Every figure with an interval or a p-value, as the commands print it (run ids left out)."""
    found = {"agreement": run("agreement", "--campaign", "asset-ratings", "--seed", str(SEED))}
    for c in CRITERIA:
        for extra in ([], ["--compare", "chrf"], ["--method", "kendall", "--group-by", "item"], ["--level", "system"]):
            key = " ".join(["correlate", c, *extra])
            answer = run(
                "correlate",
                "--campaign",
                "asset-ratings",
                "--metric",
                "bleu",
                "--criterion",
                c,
                "--seed",
                str(SEED),
                *extra,
            )
            found[key] = {k: v for k, v in answer.items() if k not in RUN_IDS}
    return found


def _ids() -> list[tuple[str, int]]:
    return sorted(Output.objects.values_list("item__external_id", "pk"))


def test_same_figures_in_any_import_order_and_after_a_round_trip(asset_files, tmp_path):
    items, judgements = asset_files

    _import(write_jsonl(tmp_path / "d1.jsonl", items), write_jsonl(tmp_path / "j1.jsonl", judgements))
    first, first_ids = _answers(), _ids()
    exported = tmp_path / "export"
    run(
        "export_dataset",
        "--campaign",
        "asset-ratings",
        "--format",
        "jsonl",
        "--real-annotator-ids",
        "--out",
        str(exported),
    )

    # The dataset reversed, the judgements shuffled: other database ids for the same data.
    shuffled = list(judgements)
    random.Random(SEED).shuffle(shuffled)
    _import(write_jsonl(tmp_path / "d2.jsonl", items[::-1]), write_jsonl(tmp_path / "j2.jsonl", shuffled))
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


def _choice_answers(
    tmp_path, name: str, protocol: str, shuffle: bool, judgements: list[dict], items: dict[str, dict[str, str]]
) -> dict:
    """`agreement --json` of a choice campaign, its dataset's outputs listed in system order or
    shuffled per item (so output ids and system names no longer follow the same order)."""
    rng = random.Random(SEED)
    Project.objects.all().delete()
    lines = []
    for item, outputs in items.items():
        systems = sorted(outputs)
        if shuffle:
            rng.shuffle(systems)
        lines.append({"item": item, "outputs": {s: outputs[s] for s in systems}})
    if shuffle:
        lines.reverse()
        judgements = list(judgements)
        rng.shuffle(judgements)
    run("import_dataset", str(write_jsonl(tmp_path / f"{name}-d.jsonl", lines)), "--dataset", "sim", "--project", "sim")
    run(
        "create_campaign",
        "--dataset",
        "sim",
        "--name",
        name,
        "--protocol",
        protocol,
        "--criteria",
        "overall",
        "--redundancy",
        "3",
    )
    run("import_judgements", str(write_jsonl(tmp_path / f"{name}-j.jsonl", judgements)), "--campaign", name)
    return run("agreement", "--campaign", name, "--seed", str(SEED))


def _simulated(n_items=30):
    rng = random.Random(7)
    systems = ("s1", "s2", "s3", "s4")
    quality = dict(zip(systems, (0.2, 0.45, 0.6, 0.8)))
    items = {f"i{k:02d}": {s: f"output {s} {k}" for s in systems} for k in range(n_items)}
    return rng, items, quality


def test_pairwise_figures_do_not_follow_output_ids(tmp_path):
    """A pair's value is oriented by system name, not by which output got the smaller id: the alpha
    equals krippendorff's on pairs coded in system-name order, and intervals match, in both orders."""
    import krippendorff
    import numpy as np

    rng, items, quality = _simulated()
    judgements, cells = [], {}
    for item in items:
        for a, b in (("s1", "s2"), ("s2", "s3"), ("s3", "s4"), ("s1", "s4")):
            for annotator in rng.sample([f"w{k}" for k in range(6)], rng.choice([1, 2, 3])):
                d = quality[a] - quality[b] + rng.gauss(0, 0.3)
                winner = "tie" if abs(d) < 0.1 else "a" if d > 0 else "b"
                shown = (a, b) if rng.random() < 0.5 else (b, a)  # either output shown first
                said = winner if shown == (a, b) or winner == "tie" else {"a": "b", "b": "a"}[winner]
                judgements.append(
                    {
                        "item": item,
                        "annotator": annotator,
                        "criterion": "overall",
                        "a": shown[0],
                        "b": shown[1],
                        "winner": said,
                    }
                )
                cells[(annotator, (item, a, b))] = {"a": 0, "b": 1, "tie": 2}[winner]
    annotators = sorted({a for a, _ in cells})
    units = sorted({u for _, u in cells})
    matrix = np.full((len(annotators), len(units)), np.nan)
    for (a, u), v in cells.items():
        matrix[annotators.index(a), units.index(u)] = v
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")

    ordered = _choice_answers(tmp_path, "pairs", "pairwise", False, judgements, items)
    shuffled = _choice_answers(tmp_path, "pairs", "pairwise", True, judgements, items)
    for answer in (ordered, shuffled):
        assert answer["criteria"]["overall"]["headline"]["value"] == pytest.approx(expected, abs=1e-12)
    assert None not in ordered["criteria"]["overall"]["ci95"]["krippendorff_alpha_nominal"]
    assert json.dumps(shuffled) == json.dumps(ordered)


def test_best_worst_figures_do_not_follow_output_ids(tmp_path):
    rng, items, quality = _simulated()
    judgements = []
    for item in items:
        for annotator in rng.sample([f"w{k}" for k in range(6)], rng.choice([1, 2, 3])):
            shown = rng.sample(["s1", "s2", "s3", "s4"], 4)
            noisy = sorted(shown, key=lambda s: quality[s] + rng.gauss(0, 0.25))
            judgements.append(
                {
                    "item": item,
                    "annotator": annotator,
                    "criterion": "overall",
                    "outputs": shown,
                    "best": noisy[-1],
                    "worst": noisy[0],
                }
            )
    ordered = _choice_answers(tmp_path, "bws", "bws", False, judgements, items)
    shuffled = _choice_answers(tmp_path, "bws", "bws", True, judgements, items)
    assert None not in ordered["criteria"]["overall"]["ci95"]["krippendorff_alpha_nominal"]
    assert json.dumps(shuffled) == json.dumps(ordered)
