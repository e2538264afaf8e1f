"""The E2E NLG Challenge crowd ratings (../shared/data/e2e-human, Dušek et al. 2020) through
the public import commands: gold columns become gold units, repeated ratings become
repeats, and our reliability figures are compared with the platform's own `_trust`."""

import csv
import json
from collections import Counter, defaultdict
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from scipy import stats

from annotations.models.quality import ControlJudgement, GoldUnit
from annotations.quality.figure_eight import study_read

pytestmark = pytest.mark.django_db


def _import(tmp_path, study, name: str) -> None:
    (tmp_path / "dataset.jsonl").write_text(study.dataset_jsonl(), encoding="utf-8")
    (tmp_path / "judgements.jsonl").write_text(study.judgements_jsonl(), encoding="utf-8")
    call_command(
        "import_dataset", str(tmp_path / "dataset.jsonl"), "--dataset", name, "--project", "E2E", stdout=StringIO()
    )
    call_command(
        "create_campaign",
        "--dataset",
        name,
        "--name",
        name,
        "--protocol",
        "likert",
        "--criteria",
        "quality",
        "--scale",
        "0-100",
        "--redundancy",
        "3",
        stdout=StringIO(),
    )
    out = StringIO()
    call_command("import_judgements", str(tmp_path / "judgements.jsonl"), "--campaign", name, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_real_gold_columns_repeats_and_trust_ranking(shared_data, tmp_path):
    path = shared_data / "e2e-human" / "quality.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    # What the file holds, counted here without our reader.
    gold_cells = [
        (r["mr_id"], r[f"sys{i}"]) for r in rows for i in range(1, 6) if r.get(f"quality{i}_gold", "").strip()
    ]
    seen = Counter((r["_worker_id"], r["mr_id"], r[f"sys{i}"]) for r in rows for i in range(1, 6))
    repeats = sum(n - 1 for n in seen.values())
    trust = defaultdict(list)
    for r in rows:
        trust[r["_worker_id"]].append(float(r["_trust"]))

    study = study_read(path, criterion="quality", scale=(0, 100))
    out_of_scale = [v for r in rows for i in range(1, 6) if not 0 <= float(v := r[f"quality{i}"]) <= 100]
    assert len(study.skipped) == len(out_of_scale) == 78  # typed into a free number field, e.g. 111111
    summary = _import(tmp_path, study, "e2e-quality")
    assert summary["judgements"] == len(rows) * 5 - 78
    # The gold columns: every filled cell is a gold control and a gold unit (this copy has none filled:
    # Figure Eight left its test questions out of the export, so there are 0 of each).
    assert ControlJudgement.objects.filter(kind="gold").count() == len(gold_cells)
    assert GoldUnit.objects.count() == len(set(gold_cells))
    assert ControlJudgement.objects.filter(kind="repeat").count() == repeats == 90

    out = StringIO()
    call_command("quality", "--campaign", "e2e-quality", "--json", stdout=out)
    figures = json.loads(out.getvalue())["annotators"]
    # Everyone with at least one answer on the scale (3 workers typed only numbers above 100).
    valid = {r["_worker_id"] for r in rows for i in range(1, 6) if 0 <= float(r[f"quality{i}"]) <= 100}
    assert set(figures) == valid and len(trust) - len(valid) == 3
    for entry in figures.values():
        assert set(entry) >= {
            "agreement_with_others",
            "controls_passed",
            "self_consistency",
            "median_seconds",
            "straight_lining",
            "included",
        }
    measured = [w for w, f in figures.items() if f["agreement_with_others"] is not None]
    ours = [figures[w]["agreement_with_others"] for w in measured]
    theirs = [np.mean(trust[w]) for w in measured]
    rho, p_value = stats.spearmanr(ours, theirs)
    print(
        f"e2e-human quality: Spearman rho(agreement_with_others, _trust) = {rho:.3f} (p = {p_value:.1e}) "
        f"over {len(measured)} workers"
    )
    assert len(measured) >= 90
    assert rho >= 0.3
    # The tenth the platform trusted least sits low in our ranking.
    rank = {
        w: i / (len(measured) - 1)
        for i, w in enumerate(sorted(measured, key=lambda w: figures[w]["agreement_with_others"]))
    }
    least = sorted(measured, key=lambda w: np.mean(trust[w]))[: len(measured) // 10]
    print("percentile of the least trusted tenth in our ranking:", sorted(round(rank[w], 2) for w in least))
    assert np.median([rank[w] for w in least]) <= 0.35
    assert sum(rank[w] < 0.5 for w in least) >= 0.75 * len(least)
    # Repeats give self-consistency for the workers who rated an output twice.
    assert sum(f["self_consistency"] is not None for f in figures.values()) == len(
        {w for (w, _, _), n in seen.items() if n > 1}
    )


def test_filled_gold_cells_become_gold_units_and_are_checked(shared_data, tmp_path):
    """The same reader on real rows whose gold cells are filled, as a Figure Eight export with
    its test questions would be: accepted answers one per line."""
    path = shared_data / "e2e-human" / "quality.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, [r for _, r in zip(range(60), reader)]
    expected_pass = {}
    for n, row in enumerate(rows):
        if n % 3 == 0:
            row["quality1_gold"] = "80\n90\n100"
            expected_pass[(row["_worker_id"], row["mr_id"], row["sys1"])] = 80 <= float(row["quality1"]) <= 100
    copy = tmp_path / "with-gold.csv"
    with copy.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    _import(tmp_path, study_read(copy, criterion="quality", scale=(0, 100)), "e2e-gold")
    gold = ControlJudgement.objects.filter(kind="gold").select_related("annotator", "output__system", "item")
    assert gold.count() == len(expected_pass) == 20
    for cj in gold:
        key = (cj.annotator.name, cj.item.external_id, cj.output.system.name)
        assert cj.passed is expected_pass[key]
        assert cj.expected == {"quality": {"min": 80.0, "max": 100.0}}
    assert GoldUnit.objects.count() == len({(m, s) for (_, m, s) in expected_pass})
    assert set(GoldUnit.objects.values_list("mode", flat=True)) == {"silent"}
    out = StringIO()
    call_command("quality", "--campaign", "e2e-gold", "--json", stdout=out)
    figures = json.loads(out.getvalue())["annotators"]
    for worker in {w for (w, _, _) in expected_pass}:
        mine = [v for (w, _, _), v in expected_pass.items() if w == worker]
        assert figures[worker]["gold"] == {"judged": len(mine), "passed": sum(mine)}
