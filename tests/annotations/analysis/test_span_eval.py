"""Span meta-evaluation, character level (issue 42 item 2, in part): micro precision/recall/F1
equal scikit-learn's on the flattened per-character labels."""

import numpy as np
import pytest

from annotations.analysis import span_eval as se
from tests.annotations.analysis.test_protocols import SYSTEMS, dataset, run  # noqa: F401
from tests.annotations.test_real_data import write_jsonl


def _labels(pairs, lengths):
    g = np.concatenate([[k in gold for k in range(n)] for (gold, _), n in zip(pairs, lengths)])
    p = np.concatenate([[k in pred for k in range(n)] for (_, pred), n in zip(pairs, lengths)])
    return g, p


def test_character_micro_prf_equals_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(2)
    pairs, lengths = [], []
    for _ in range(30):
        n = int(rng.integers(10, 60))
        spans = lambda: [
            {"start": int(a), "end": int(a + rng.integers(1, 8))}  # noqa: E731
            for a in rng.integers(0, n, rng.integers(0, 3))
        ]
        pairs.append((se.chars(spans(), n), se.chars(spans(), n)))
        lengths.append(n)
    g, p = _labels(pairs, lengths)
    ref = metrics.precision_recall_fscore_support(g, p, average="binary", zero_division=np.nan)
    got = se.micro(pairs)
    assert (got["precision"], got["recall"], got["f1"]) == pytest.approx(ref[:3], abs=1e-12)
    assert se.chars([{"missing": True, "severity": "minor"}, {"start": 2, "end": 4}]) == {2, 3}


@pytest.mark.django_db
def test_correlate_span_f1_with_a_span_mode_judge(dataset, tmp_path):  # noqa: F811
    from annotations.models import Dataset
    from tests.annotations.analysis.judge_runs import judge_run, outputs_by_key

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
    judgements, human, predicted, annotations = [], {}, {}, {}
    for i in range(6):
        for k, s in enumerate(SYSTEMS):
            a = [{"start": 0, "end": 3 + k, "severity": "minor"}] if (i + k) % 2 else []
            b = [{"start": 5, "end": 8, "severity": "major"}] if i % 3 == 0 else []
            judgements.append(
                {"item": f"i{i}", "system": s, "annotator": "a", "criterion": "quality", "score": 60, "spans": a}
            )
            judgements.append(
                {"item": f"i{i}", "system": s, "annotator": "b", "criterion": "quality", "score": 70, "spans": b}
            )
            human[(f"i{i}", s)] = se.chars(a) | se.chars(b)
            annotations[(f"i{i}", s)] = [a, b]
            predicted[(f"i{i}", s)] = [{"start": 1, "end": 6, "severity": "minor"}] if k < 2 else []
    run("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "esa")
    outs = outputs_by_key(Dataset.objects.get(name="toy"))
    keys = [key for key in predicted]
    judge_run(
        Dataset.objects.get(name="toy"),
        {outs[key].pk: 0.0 for key in keys},
        extras={outs[key].pk: {"spans": predicted[key], "raw": ""} for key in keys},
        options={"mode": "spans", "protocol": "esa"},
    )
    out = run(
        "correlate", "--campaign", "esa", "--metric", "llm-judge", "--criterion", "quality", "--method", "span-f1"
    )
    expected = se.micro([(human[key], se.chars(predicted[key])) for key in keys])
    assert {k: out["overall"][k] for k in expected} == expected and out["span-f1"] == expected["f1"]
    # WMT25: one row per annotator's judgement; factgenie: every annotator's spans as the reference.
    ordered = sorted(keys)
    wmt = se.wmt25_f1([(len(outs[key].text), g, predicted[key]) for key in ordered for g in annotations[key]])
    assert out["overall"]["wmt25"] == wmt and out["wmt25-f1"] == wmt["f1"]
    assert wmt["annotations"] == 2 * len(keys) and 0 < wmt["f1"] < 1
    for match in ("hard", "soft"):
        fg = se.factgenie_f1([(annotations[key][0] + annotations[key][1], predicted[key]) for key in ordered], match)
        assert out["overall"]["factgenie"][match] == fg
    assert out["per_system"]["s3"]["precision"] is None  # predicted nothing
    assert "character-level" in out["label"]


@pytest.mark.django_db
def test_correlate_span_f1_with_a_real_xcomet_run(dataset, tmp_path, settings):  # noqa: F811
    """xCOMET's stored spans (the tiny reference-checked checkpoint) are read by the span
    meta-evaluation exactly as the LLM judge's are."""
    import shutil
    from pathlib import Path

    from annotations.models import Dataset
    from metrics.models import OutputScore
    from tests.annotations.analysis.judge_runs import outputs_by_key
    from tests.annotations.analysis.metric_runs import score_dataset

    fixtures = Path(__file__).resolve().parents[2] / "metrics" / "scorers" / "comet_fixtures"
    for name in ("xcomet-tiny", "tiny-xlmr"):
        shutil.copytree(fixtures / name, tmp_path / "models" / name)
    settings.WORKBENCH_MODEL_DIRS = [str(tmp_path / "models")]
    xcomet = score_dataset("toy", "xcomet", model="xcomet-tiny", encoder="tiny-xlmr", device="cpu")
    run("create_campaign", "--dataset", "toy", "--name", "esa", "--protocol", "esa", "--criteria", "quality")
    outs = outputs_by_key(Dataset.objects.get(name="toy"))
    judgements, human = [], {}
    for (item, system), output in outs.items():
        spans = [{"start": 0, "end": min(7, len(output.text)), "severity": "major"}] if item in ("i0", "i1") else []
        judgements.append(
            {"item": item, "system": system, "annotator": "a", "criterion": "quality", "score": 50, "spans": spans}
        )
        human[output.pk] = se.chars(spans)
    run("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "esa")
    out = run("correlate", "--campaign", "esa", "--metric", "xcomet", "--criterion", "quality", "--method", "span-f1")
    stored = {s.output_id: s.extra["spans"] for s in OutputScore.objects.filter(run=xcomet)}
    assert any(stored.values())
    expected = se.micro([(human[o], se.chars(stored[o])) for o in sorted(human)])
    assert {k: out["overall"][k] for k in expected} == expected and out["span-f1"] == expected["f1"]
