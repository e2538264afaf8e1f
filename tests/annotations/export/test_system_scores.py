"""The export's dataset card gives each exported system the metric's own system score
(issue 19, part 4): sacrebleu's corpus BLEU / chrF and jiwer's corpus WER over all of the
system's outputs, whatever subset of the judgements or systems is exported, under a label."""

import csv

import jiwer
import pytest

from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_system_scores import (  # noqa: F401  (fixtures)
    _run,
    campaign,
    card_system_scores,
    sacrebleu_scores,
    texts,
)

pytestmark = pytest.mark.django_db


def test_card_scores_the_exported_systems_as_the_metric_defines_it(campaign, texts, tmp_path):  # noqa: F811
    score_dataset("sysscore", "wer")
    want = sacrebleu_scores(texts)
    want["wer"] = {s: jiwer.wer(texts["refs"], hyps) for s, hyps in texts["hyps"].items()}
    chosen = ["half-truncated", "two-words-off"]
    out = tmp_path / "export"
    _run(
        "export_dataset",
        "--campaign",
        "sysscore",
        "--out",
        str(out),
        "--format",
        "csv",
        "--systems",
        ",".join(chosen),
        "--min-consensus",
        "0.9",
    )
    card = (out / "README.md").read_text(encoding="utf-8")
    scores, section = card_system_scores(card)
    assert set(scores) == {"bleu", "chrf", "wer"}
    for metric, by_system in scores.items():
        assert list(by_system) == chosen  # the exported systems only
        # Over all of the system's outputs, not only the items the consensus filter kept.
        assert by_system == pytest.approx({s: want[metric][s] for s in chosen}, abs=5e-5)
    assert "- `wer`: corpus WER (errors over all reference words) (signature `wer|" in section
    assert "- `bleu`: corpus BLEU (signature `bleu|" in section
    # The metrics table says what its whole-dataset score is, too.
    metrics_table = card.split("## Automatic metrics", 1)[1].split("### System scores", 1)[0]
    assert "| what the score is |" in metrics_table and "| corpus chrF |" in metrics_table
    # The exported outputs keep their per-output (segment) scores under the same signature.
    with (out / "outputs.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["system"] for r in rows} <= set(chosen) and "metrics.bleu.score" in rows[0]
