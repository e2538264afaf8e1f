"""Error-free segment detection (WMT26 metrics task; issue 42 item 5)."""

import numpy as np
import pytest

from annotations.analysis import error_free as ef
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import SYSTEMS, dataset, run  # noqa: F401
from tests.annotations.test_real_data import write_jsonl


def test_precision_recall_f1_equal_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    for _ in range(20):
        gold = rng.random(40) < 0.3
        pred = rng.random(40) < 0.4
        p, r, f, _ = metrics.precision_recall_fscore_support(gold, pred, average="binary", zero_division=np.nan)
        got = ef.prf(gold, pred)
        for ours, theirs in ((got["precision"], p), (got["recall"], r), (got["f1"], f)):
            assert (ours is None and np.isnan(theirs)) or ours == pytest.approx(theirs, abs=1e-12)


def test_best_threshold_is_the_f1_maximum_over_the_metric_values():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(4)
    gold = rng.random(60) < 0.4
    metric = np.round(gold * 0.5 + rng.normal(0, 0.5, 60), 2)
    t, best = ef.best_threshold(gold, metric)
    brute = max((metrics.f1_score(gold, metric >= v), -v) for v in np.unique(metric))
    assert best["f1"] == pytest.approx(brute[0], abs=1e-12) and t == -brute[1]
    out = ef.detection(gold, metric, [k // 3 for k in range(60)], seed=1)
    assert out["held_out"]["tune_items"] == 10 and out["held_out"]["test_items"] == 10
    assert out["best_on_all"]["f1"] == best["f1"] and "optimistic" in out["best_on_all"]["caveat"]


@pytest.mark.django_db
def test_correlate_error_free_on_an_esa_campaign(dataset, tmp_path):  # noqa: F811
    from annotations.models import Campaign
    from annotations.selectors.outputs import output_index
    from metrics.models import MetricRun
    from metrics.selectors import scores_by_output

    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "esa",
        "--protocol",
        "esa",
        "--criteria",
        "quality",
        "--severities",
        "minor,major",
    )
    judgements, gold = [], {}
    for i in range(12):
        for k, s in enumerate(SYSTEMS):
            score = [95, 88, 70, 40][k] - (i % 3) * 5
            spans = [{"start": 0, "end": 2, "severity": "minor"}] if (i + k) % 4 == 0 else []
            judgements.append(
                {"item": f"i{i}", "system": s, "annotator": "a", "criterion": "quality", "score": score, "spans": spans}
            )
            gold[(f"i{i}", s)] = score >= 85 and not spans
    run("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "esa")
    score_dataset("toy", "chrf")
    out = run("correlate", "--campaign", "esa", "--metric", "chrf", "--criterion", "quality", "--method", "error-free")
    assert out["positives"] == sum(gold.values()) and out["n"] == 48
    outputs = output_index(campaign=Campaign.objects.get(name="esa"))
    chrf = scores_by_output(run=MetricRun.objects.get(metric="chrf"))
    used = sorted(outputs, key=lambda o: (outputs[o]["item_ext"], outputs[o]["system"]))
    expected = ef.detection(
        np.array([gold[(outputs[o]["item_ext"], outputs[o]["system"])] for o in used]),
        np.array([chrf[o] for o in used]),
        [outputs[o]["item_ext"] for o in used],
        seed=0,
    )
    assert out["held_out"] == expected["held_out"] and out["best_on_all"] == expected["best_on_all"]
    assert out["error-free"] == expected["held_out"]["f1"]
