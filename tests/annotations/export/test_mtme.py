"""`export_dataset --format mtme`: the campaign as an mt-metrics-eval test set, read by
mt-metrics-eval's loader (the real code under var/mt-metrics-eval when present, and always a
transcription of it: tests/annotations/export/mtme_reader.py), with correlations equal to
`correlate`'s."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import SYSTEMS, _likert, dataset  # noqa: F401
from tests.annotations.export import mtme_reader

pytestmark = pytest.mark.django_db


def _export(tmp_path, *extra):
    out = tmp_path / "mtme"
    stdout = StringIO()
    call_command(
        "export_dataset", "--campaign", "likert", "--format", "mtme", "--out", str(out), *extra, "--json", stdout=stdout
    )
    return out, json.loads(stdout.getvalue())


def _correlate(metric, level):
    stdout = StringIO()
    call_command(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        metric,
        "--criterion",
        "adequacy",
        "--level",
        level,
        "--bootstrap",
        "0",
        "--json",
        stdout=stdout,
    )
    return json.loads(stdout.getvalue())["pearson"]


@pytest.fixture
def scored(dataset, tmp_path):  # noqa: F811
    judgements = _likert(tmp_path)
    # One human score missing (i3 of s2 unjudged): a None in the human file, left out by both sides.
    from annotations.models import RatingJudgement

    RatingJudgement.objects.filter(output__item__external_id="i3", output__system__name="s2").delete()
    score_dataset("toy", "bleu")
    score_dataset("toy", "wer")  # lower is better: negated in the export, as correlate orients it
    return judgements


def _meta(out):
    info = json.loads((out / "likert" / "meta_info.json").read_text())
    return info


def test_mtme_layout_is_read_by_the_loader_and_correlations_equal_correlate(scored, tmp_path):
    out, summary = _export(tmp_path)
    assert "likert/meta_info.json" in summary["files"]
    info = _meta(out)
    assert info == {
        "std_ref": "refA",
        "std_gold": {"seg": "likert", "sys": "likert"},
        "outlier_systems": [],
        "primary_metrics": ["bleu", "wer"],
        "baseline_metrics": None,
    }
    evs = mtme_reader.TranscribedEvalSet("likert", "src-tgt", info, str(out))
    assert sorted(evs.sys_outputs) == SYSTEMS
    assert len(evs.src) == 12 and evs.docs == [f"i{i}" for i in range(12)]
    seg = evs.Scores("seg", "likert")
    assert seg["s2"][3] is None and seg["s1"][3] is not None
    # The human segment score is the mean rating of the output (likert's definition).
    ratings = [j["score"] for j in scored if j["item"] == "i0" and j["system"] == "s1"]
    assert seg["s1"][0] == pytest.approx(sum(ratings) / len(ratings))
    assert sorted(evs.metric_names) == ["bleu-refA", "wer-refA"]
    for metric in ("bleu", "wer"):
        for level, gold_level in (("segment", "seg"), ("system", "sys")):
            expected = _correlate(metric, level)
            got = mtme_reader.pearson(evs.Scores(gold_level, "likert"), evs.Scores(gold_level, f"{metric}-refA"))
            assert got == pytest.approx(expected, abs=1e-9), (metric, level)


def test_mtme_export_loads_in_mt_metrics_eval(scored, tmp_path):
    modules = mtme_reader.real_modules()
    if modules is None:
        pytest.skip(
            "mt-metrics-eval is not under var/mt-metrics-eval (not on PyPI; put its mt_metrics_eval/ folder "
            "there from google-research/mt-metrics-eval to run this test)"
        )
    data, meta_info = modules
    out, _ = _export(tmp_path)
    info = {k: set(v) if isinstance(v, list) else v for k, v in _meta(out).items()}
    evs = data.EvalSet(
        "likert", "src-tgt", read_stored_metric_scores=True, info=meta_info.MetaInfo(**info), path=str(out)
    )
    assert evs.sys_names == set(SYSTEMS) and evs.std_ref == "refA"
    assert evs.metric_names == {"bleu-refA", "wer-refA"}
    transcribed = mtme_reader.TranscribedEvalSet("likert", "src-tgt", _meta(out), str(out))
    for metric in ("bleu", "wer"):
        for level, gold_level in (("segment", "seg"), ("system", "sys")):
            gold = evs.Scores(gold_level, evs.StdHumanScoreName(gold_level))
            corr = evs.Correlation(gold, evs.Scores(gold_level, f"{metric}-refA"))
            assert corr.Pearson()[0] == pytest.approx(_correlate(metric, level), abs=1e-9), (metric, level)
            # The transcription reads what the real loader reads.
            assert dict(transcribed.Scores(gold_level, "likert")) == dict(gold)
    # mt-metrics-eval's own meta-evaluation runs on the export.
    corrs = data.GetCorrelations(evs, "seg", {"refA"}, set(), False, False, "std", True)
    assert corrs["bleu-refA"].Pearson()[0] == pytest.approx(_correlate("bleu", "segment"), abs=1e-9)
    assert corrs["wer-refA"].Pearson()[0] == pytest.approx(_correlate("wer", "segment"), abs=1e-9)


def test_mtme_needs_a_reference(tmp_path):
    rows = [{"item": "x", "source": "a b", "outputs": {"s1": "a", "s2": "b"}}]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    call_command("import_dataset", str(path), "--dataset", "noref", "--project", "p", "--json", stdout=StringIO())
    call_command(
        "create_campaign",
        "--dataset",
        "noref",
        "--name",
        "likert",
        "--protocol",
        "likert",
        "--criteria",
        "adequacy",
        "--scale",
        "1-5",
        "--json",
        stdout=StringIO(),
    )
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no references"):
        _export(tmp_path)
