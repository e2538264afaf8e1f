"""`run_metric`: JSON summary on stdout, progress on stderr, errors non-zero."""

import json

import pytest
import sacrebleu
from django.core.management import CommandError, call_command

from metrics.models import MetricRun, RunStatus
from metrics.services.inputs import dataset_outputs
from tests.metrics.conftest import build_dataset

pytestmark = pytest.mark.django_db


def test_sync_prints_summary_and_progress(capsys):
    dataset = build_dataset(name="cli-ds", items=10, systems=2)
    call_command("run_metric", dataset="cli-ds", metric="chrf", sync=True, chunk_size=3)
    out, err = capsys.readouterr()
    summary = json.loads(out)
    run = MetricRun.objects.get()
    assert set(summary) == {"run", "metric", "signature", "scored", "corpus"}
    assert summary["run"] == run.pk and summary["metric"] == "chrf" and summary["scored"] == 20
    outs = list(dataset_outputs(dataset=dataset).prefetch_related("item__references"))
    want = sacrebleu.corpus_chrf([o.text for o in outs], [[o.item.references.all()[0].text for o in outs]])
    assert summary["corpus"]["score"] == pytest.approx(want.score, abs=1e-9)
    assert summary["signature"] == run.signature
    assert "20/20 segments (100%)" in err and "/s, ETA" in err
    # The same again reuses the done run.
    call_command("run_metric", "--json", dataset="cli-ds", metric="chrf", sync=True)
    out, err = capsys.readouterr()
    assert json.loads(out)["run"] == run.pk and "reusing" in err
    assert MetricRun.objects.count() == 1


def test_errors_exit_non_zero(capsys):
    build_dataset(name="cli-bad", items=2, systems=1)
    with pytest.raises(CommandError, match="no dataset named 'missing'"):
        call_command("run_metric", dataset="missing", metric="chrf", sync=True)
    with pytest.raises(CommandError, match="unknown option"):
        call_command("run_metric", dataset="cli-bad", metric="chrf", option=["nope=1"], sync=True)
    with pytest.raises(CommandError, match=r"run \d+ failed: model 'gone': not allowed or not found"):
        call_command("run_metric", dataset="cli-bad", metric="bertscore", option=["model=gone"], sync=True)
    assert MetricRun.objects.get().status == RunStatus.FAILED
