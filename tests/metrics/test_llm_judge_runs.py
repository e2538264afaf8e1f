"""llm-judge runs through real Celery workers (gpu queue; CPU here) and `--sync`:
identical scores, signature and corpus result in every mode; pairwise chunks
hold whole items; a done run is reused."""

from collections import defaultdict

import pytest

from annotations.models import Output
from metrics.models import MetricRun, OutputScore, RunStatus
from metrics.services import run_create, run_execute_sync
from metrics.tasks import run_queue
from tests.metrics.conftest import build_dataset
from tests.waiting import wait_until


def scores(run):
    return {
        oid: (score, extra)
        for oid, score, extra in OutputScore.objects.filter(run=run).values_list("output_id", "score", "extra")
    }


def test_three_modes_through_workers_equal_sync(celery_worker_process, judge_models, tmp_path):
    prompt = tmp_path / "spans.txt"
    prompt.write_text("Mark the errors of: {output}\n[answer]\n", encoding="utf-8")
    dataset = build_dataset(name="judge", items=5, systems=3)
    assert run_queue("llm-judge") == "gpu"
    modes = {
        "score": {},
        "pairwise": {"mode": "pairwise"},
        "spans": {"mode": "spans", "max_new_tokens": 48, "prompt": str(prompt)},
    }
    runs = {}
    for mode, extra in modes.items():
        options = {"model": judge_models["llama"], "device": "cpu", "batch_size": 4, **extra}
        runs[mode], reused = run_create(dataset=dataset, metric="llm-judge", options=options, chunk_size=4)
        assert not reused
    for mode, run in runs.items():
        runs[mode] = wait_until(
            lambda run=run: (
                MetricRun.objects.filter(pk=run.pk).exclude(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).first()
            ),
            300,
            f"the {mode} run",
        )
    item_of = dict(Output.objects.filter(item__dataset=dataset).values_list("pk", "item_id"))
    for mode, run in runs.items():
        assert run.status == RunStatus.DONE, run.error
        assert run.done == run.total == 15 and OutputScore.objects.filter(run=run).count() == 15
        sync = run_execute_sync(
            run=run_create(
                dataset=dataset, metric="llm-judge", options=run.options, sync=True, reuse=False, chunk_size=4
            )[0]
        )
        assert sync.status == RunStatus.DONE, sync.error
        assert sync.signature == run.signature and run.signature.startswith(f"llm-judge|v:1|model:llama|mode:{mode}")
        assert sync.corpus == run.corpus
        assert scores(sync) == scores(run)  # scores and segment JSON, bit for bit
        assert set(run.corpus["systems"]) == {"sys-0", "sys-1", "sys-2"}
        chunks = [c.output_ids for c in run.chunks.order_by("index")]
        if mode == "pairwise":
            # Chunks hold whole items: an item's three outputs are compared in one call.
            owners = defaultdict(set)
            for k, ids in enumerate(chunks):
                for oid in ids:
                    owners[item_of[oid]].add(k)
            assert all(len(ks) == 1 for ks in owners.values()) and [len(c) for c in chunks] == [6, 6, 3]
            assert run.corpus["score"] == pytest.approx(0.5)  # win probabilities of a pair add up to 1
            assert all(len(extra["pairs"]) == 2 and "swapped" in extra for _, extra in scores(run).values())
        else:
            assert [len(c) for c in chunks] == [4, 4, 4, 3]
        if mode == "spans":
            assert all("spans" in extra and "raw" in extra for _, extra in scores(run).values())
        if mode == "score":
            assert all(1 <= s <= 5 and "probabilities" in extra for s, extra in scores(run).values())
    # A done run is reused. The options name a model directory, so the worker matches the run on its files'
    # content (issue 46): the new run is finished by copying, its chunks marked as reused, nothing scored.
    again, reused = run_create(dataset=dataset, metric="llm-judge", options=runs["score"].options)
    assert not reused
    again = wait_until(
        lambda: MetricRun.objects.filter(pk=again.pk, status=RunStatus.DONE).first(), 300, "the reused run"
    )
    assert again.signature == runs["score"].signature and scores(again) == scores(runs["score"])
    assert again.chunks.exists() and not again.chunks.exclude(worker__startswith="reused from run").exists()


def test_bad_judge_options_fail_the_request_with_one_line(judge_models, db):
    from metrics.services.runs import RunInputError

    dataset = build_dataset(name="judge-bad", items=2, systems=2)
    with pytest.raises(RunInputError, match="^llm-judge: mode='rank'; use one of score, pairwise, spans$"):
        run_create(dataset=dataset, metric="llm-judge", options={"model": judge_models["llama"], "mode": "rank"})
    with pytest.raises(RunInputError, match="needs model="):
        run_create(dataset=dataset, metric="llm-judge", options={})
    # A missing prompt file is refused when the run is asked for, before any worker starts, with the
    # one answer every path refusal gets (metrics.scorers.files: nothing told about the server's files).
    with pytest.raises(RunInputError, match="^prompt: not allowed or not found"):
        run_create(
            dataset=dataset,
            metric="llm-judge",
            sync=True,
            options={"model": judge_models["llama"], "prompt": "/nonexistent/prompt.txt"},
        )
