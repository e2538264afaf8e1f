"""Export -> import into an empty database -> the same agreement and correlation figures (ASSET).

Expected figures come from the reference tools on the raw CSV (krippendorff, scipy, sacrebleu),
never from the workbench's own output.
"""

import io
from collections import defaultdict
from statistics import mean

import krippendorff
import numpy as np
import pytest
import sacrebleu
from scipy.stats import pearsonr, spearmanr

from annotations.models import Annotator, Campaign, Output, Project, RatingJudgement
from tests.annotations.asset import CRITERIA, campaign_reimport
from tests.annotations.export.conftest import read_jsonl, run

pytestmark = pytest.mark.django_db


def _alpha_from_rows(rows, criterion, level="interval"):
    """Krippendorff's alpha (krippendorff package) of (annotator, unit, criterion, score) rows."""
    rows = [r for r in rows if r[2] == criterion]
    annotators = sorted({r[0] for r in rows})
    units = sorted({r[1] for r in rows})
    matrix = np.full((len(annotators), len(units)), np.nan)
    for a, u, _, score in rows:
        matrix[annotators.index(a), units.index(u)] = score
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)


def _db_rows(campaign):
    return [
        (a, (item, system), c, s)
        for a, item, system, c, s in RatingJudgement.objects.filter(campaign=campaign, status="complete").values_list(
            "annotator__name", "item__external_id", "output__system__name", "criterion", "score"
        )
    ]


def _correlations(campaign):
    """Pearson and Spearman of sentence BLEU (sacrebleu, against the references) with the mean human score."""
    means = defaultdict(list)
    for item, criterion, score in RatingJudgement.objects.filter(campaign=campaign).values_list(
        "item__external_id", "criterion", "score"
    ):
        means[(item, criterion)].append(score)
    bleu = {}
    for output in Output.objects.filter(item__dataset=campaign.dataset).select_related("item"):
        refs = list(output.item.references.order_by("position").values_list("text", flat=True))
        bleu[output.item.external_id] = sacrebleu.sentence_bleu(output.text, refs).score
    items = sorted(bleu)
    found = {}
    for criterion in CRITERIA:
        human = [mean(means[(i, criterion)]) for i in items]
        metric = [bleu[i] for i in items]
        found[criterion] = (pearsonr(metric, human).statistic, spearmanr(metric, human).statistic)
    return found


def test_jsonl_export_imports_back_with_identical_figures(asset_campaign, asset_ratings, tmp_path):
    raw = [
        (r["worker_id"], (f"asset-{r['original_sentence_id']}", "rated"), r["aspect"], float(r["rating"]))
        for r in asset_ratings
    ]
    expected_alpha = {c: _alpha_from_rows(raw, c) for c in CRITERIA}
    before_corr = _correlations(asset_campaign)

    out = tmp_path / "export"
    summary = run("export_dataset", "--campaign", "asset-ratings", "--format", "jsonl", "--out", str(out))
    assert summary["judgements"] == 4500 and summary["outputs"] == 100 and summary["items"] == 359
    assert sorted(summary["files"]) == [
        "README.md",
        "campaign.json",
        "croissant.json",
        "dataset.jsonl",
        "heds.json",
        "judgements.jsonl",
        "outputs.jsonl",
    ]
    for c in CRITERIA:
        assert summary["agreement"][c]["krippendorff_alpha"]["interval"] == pytest.approx(expected_alpha[c], abs=1e-12)

    # An empty workbench: nothing of the original is left.
    Project.objects.all().delete()
    assert not Annotator.objects.exists() and not RatingJudgement.objects.exists()

    # Rebuilt from the export alone: campaign.json's settings, the dataset, the judgements.
    assert campaign_reimport(out, project="reimported")["created"] == 4500

    campaign = Campaign.objects.get(name="asset-ratings")
    rows = _db_rows(campaign)
    assert len(rows) == 4500
    # Pseudonyms, one per worker: 31 annotators, none named like a worker id of the CSV.
    assert len({r[0] for r in rows}) == 31
    assert not {r[0] for r in rows} & {r["worker_id"] for r in asset_ratings}
    for c in CRITERIA:
        assert _alpha_from_rows(rows, c) == pytest.approx(expected_alpha[c], abs=1e-12)
        assert _alpha_from_rows(rows, c, "ordinal") == pytest.approx(_alpha_from_rows(raw, c, "ordinal"), abs=1e-12)
    after_corr = _correlations(campaign)
    for c in CRITERIA:
        assert after_corr[c] == pytest.approx(before_corr[c], abs=1e-12)

    # A second export of the re-imported campaign gives the same tables (up to pseudonyms and times).
    again = run("export_dataset", "--campaign", "asset-ratings", "--format", "jsonl", "--out", str(tmp_path / "2"))
    assert again["agreement"] == summary["agreement"]
    assert read_jsonl(tmp_path / "2" / "outputs.jsonl") == read_jsonl(out / "outputs.jsonl")
    assert read_jsonl(tmp_path / "2" / "dataset.jsonl") == read_jsonl(out / "dataset.jsonl")


def _bleu_run(dataset, *, status="done"):
    """A finished metric run written directly (as issue 7's workers would): sacrebleu sentence BLEU."""
    from django.utils import timezone

    from metrics.models import MetricRun, OutputScore

    run = MetricRun.objects.create(
        dataset=dataset,
        metric="bleu",
        signature="nrefs:10|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0",
        status=status,
        higher_is_better=True,
        corpus={"score": 1.0},
        finished_at=timezone.now(),
    )
    for output in Output.objects.filter(item__dataset=dataset).select_related("item"):
        refs = list(output.item.references.order_by("position").values_list("text", flat=True))
        OutputScore.objects.create(run=run, output=output, score=sacrebleu.sentence_bleu(output.text, refs).score)
    return run


def _exported_correlations(folder):
    rows = read_jsonl(folder / "outputs.jsonl")
    return {
        c: pearsonr([r["metrics"]["bleu"]["score"] for r in rows], [r["human"][c]["mean"] for r in rows]).statistic
        for c in CRITERIA
    }


def test_metric_scores_and_correlations_survive_the_round_trip(asset_campaign, asset_ratings, tmp_path):
    _bleu_run(asset_campaign.dataset)
    _bleu_run(asset_campaign.dataset, status="failed")  # never exported
    expected = {c: v[0] for c, v in _correlations(asset_campaign).items()}
    run("export_dataset", "--campaign", "asset-ratings", "--out", str(tmp_path / "one"))
    rows = read_jsonl(tmp_path / "one" / "outputs.jsonl")
    assert all(set(r["metrics"]) == {"bleu"} for r in rows)
    assert rows[0]["metrics"]["bleu"]["signature"].startswith("nrefs:10|")
    assert "| `bleu` | bleu | `nrefs:10\\|case:mixed" in (tmp_path / "one" / "README.md").read_text()
    first = _exported_correlations(tmp_path / "one")
    for c in CRITERIA:
        assert first[c] == pytest.approx(expected[c], abs=1e-12)

    Project.objects.all().delete()
    campaign_reimport(tmp_path / "one", project="again")
    campaign = Campaign.objects.get(name="asset-ratings")
    _bleu_run(campaign.dataset)
    run("export_dataset", "--campaign", "asset-ratings", "--out", str(tmp_path / "two"))
    assert _exported_correlations(tmp_path / "two") == first


def test_output_means_match_the_csv(asset_campaign, asset_ratings, tmp_path):
    run("export_dataset", "--campaign", "asset-ratings", "--format", "jsonl", "--out", str(tmp_path / "e"))
    expected = defaultdict(list)
    for r in asset_ratings:
        expected[(f"asset-{r['original_sentence_id']}", r["aspect"])].append(float(r["rating"]))
    outputs = read_jsonl(tmp_path / "e" / "outputs.jsonl")
    assert len(outputs) == 100
    for row in outputs:
        for c in CRITERIA:
            values = expected[(row["item"], c)]
            assert row["human"][c]["n"] == len(values) == 15
            assert row["human"][c]["mean"] == pytest.approx(mean(values))
            assert row["human"][c]["sd"] == pytest.approx(float(np.std(values, ddof=1)))
            assert row["human"][c]["consensus"] == pytest.approx(1 - float(np.std(values)) / 50)


def _run_metric():
    from django.core.management import call_command

    call_command(
        "run_metric",
        "--dataset",
        "asset",
        "--metric",
        "bleu",
        "--sync",
        "--no-progress",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )


def _public_figures(campaign_name: str) -> dict:
    """`agreement` and `correlate` (issue 9's commands) on the campaign, with sentence BLEU run by `run_metric`."""
    found = {"agreement": run("agreement", "--campaign", campaign_name)["criteria"]}
    for criterion in CRITERIA:
        for method in ("pearson", "spearman", "kendall"):
            found[(criterion, method)] = run(
                "correlate",
                "--campaign",
                campaign_name,
                "--metric",
                "bleu",
                "--criterion",
                criterion,
                "--method",
                method,
            )
    return found


def _strip_names(figures):
    """Figures without anything keyed by annotator (pseudonyms differ from the worker ids) or database ids,
    nor the bootstrap intervals (the resampled units follow the database's ids, which an import renumbers)."""
    if isinstance(figures, dict):
        return {
            k: _strip_names(v)
            for k, v in figures.items()
            if k not in ("cohen_kappa", "per_annotator", "alpha_without", "run", "ci95")
        }
    return figures


def _differences(a, b, path=()):
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str) for d in _differences(a.get(k), b.get(k), path + (k,))]
    return [] if a == b else [(path, a, b)]


def test_agreement_and_correlate_commands_give_identical_figures_after_the_round_trip(asset_campaign, tmp_path):
    _run_metric()
    before = _public_figures("asset-ratings")
    out = tmp_path / "export"
    summary = run("export_dataset", "--campaign", "asset-ratings", "--out", str(out))
    for c in CRITERIA:
        assert summary["agreement"][c]["krippendorff_alpha"]["interval"] == pytest.approx(
            before["agreement"][c]["krippendorff_alpha"]["interval"], abs=1e-6
        )  # the command rounds to 6 places

    Project.objects.all().delete()
    campaign_reimport(out, project="again")
    _run_metric()
    after = _public_figures("asset-ratings")
    assert _differences(_strip_names(after), _strip_names(before)) == []
