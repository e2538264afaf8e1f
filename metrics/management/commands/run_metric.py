"""`run_metric --dataset NAME --metric M [--option K=V ...] [--sync] [--chunk-size N] [--no-wait] [--rerun]`.

Scores every output of a dataset with one metric and stores the scores as a
run. By default the run goes to the Celery workers (model metrics to the
`gpu` queue, the others to `cpu`) and the command waits, with a progress bar
on stderr (done/total, rate, ETA); `--sync` computes in this process with the
same chunk plan, hence exactly the same scores. An identical done run (same
metric, options and inputs) is reused unless `--rerun`.

stdout: `{"run": ID, "metric": NAME, "signature": "...", "scored": n, "corpus": {"score": x, ...}}`
(with `--no-wait`: `{"run": ID, "status": "queued", ...}`). A failed or
cancelled run prints its message on stderr and exits non-zero.
"""

from __future__ import annotations

import json
import time

from django.core.management.base import CommandError

from annotations.models import Dataset
from metrics.models import MetricRun, RunStatus
from metrics.score import Progress, parse_options
from metrics.selectors import run_waiting, with_progress
from metrics.services import RunInputError, run_create, run_execute_sync
from metrics.tasks import run_queue
from workbench.commands import DataCommand


def summary(run: MetricRun) -> dict:
    return {
        "run": run.pk,
        "metric": run.metric,
        "signature": run.signature,
        "scored": run.scores.count(),
        "corpus": run.corpus,
    }


class Command(DataCommand):
    help = "Score every output of a dataset with a metric, through the workers or in-process (--sync)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="dataset name (unique across projects)")
        parser.add_argument("--metric", required=True, help="metric name (see `score --list`)")
        parser.add_argument(
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="metric option (repeatable), e.g. --option model=all-MiniLM-L6-v2",
        )
        parser.add_argument("--sync", action="store_true", help="compute in this process, without workers")
        parser.add_argument(
            "--chunk-size", type=int, default=None, help="outputs per chunk (default 2500, 256 for model metrics)"
        )
        parser.add_argument("--no-wait", action="store_true", help="queue the run and print its id")
        parser.add_argument("--rerun", action="store_true", help="compute again even if an identical run is done")
        parser.add_argument("--timeout", type=float, default=0, help="give up waiting after this many seconds")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
        # Every command takes --json (ARCHITECTURE.md); this one prints its JSON summary either way,
        # since the summary is its whole output.
        parser.add_argument("--json", action="store_true", help="print the JSON summary (the default)")

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {opts['dataset']!r}")
        try:
            run, reused = run_create(
                dataset=dataset,
                metric=opts["metric"],
                options=parse_options(opts["option"]),
                sync=opts["sync"],
                chunk_size=opts["chunk_size"],
                reuse=not opts["rerun"],
            )
        except RunInputError as exc:
            raise CommandError(str(exc)) from None
        if reused:
            self.stderr.write(f"run {run.pk}: an identical run is done; reusing it (--rerun to compute again)")
            return self._finish(run)
        progress = None if opts["no_progress"] else Progress(self.stderr, f"run {run.pk} {run.metric}", run.total)
        if opts["sync"]:
            run = run_execute_sync(run=run, progress=progress.update if progress else None)
            return self._finish(run)
        if opts["no_wait"]:
            self.stdout.write(
                json.dumps({"run": run.pk, "metric": run.metric, "status": run.status, "total": run.total})
            )
            return
        start, shown, said = time.monotonic(), -1, None
        while True:
            run = with_progress(MetricRun.objects.filter(pk=run.pk)).get()
            # Stored chunks plus the batches of chunks in flight (model metrics report each batch).
            scored = min(run.total, run.done + run.scoring)
            if progress is not None and scored != shown and run.status == RunStatus.RUNNING:
                shown = scored
                progress.update(scored)
            waiting = run_waiting(run=run) if not opts["no_progress"] else None
            if waiting and waiting != said:  # say once why nothing moves (queued behind other runs)
                said = waiting
                self.stderr.write(f"run {run.pk}: {waiting}")
            if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
                break
            if opts["timeout"] and time.monotonic() - start > opts["timeout"]:
                raise CommandError(
                    f"run {run.pk} is still {run.status} after {opts['timeout']:g} s "
                    f"({run.done}/{run.total}); is a worker serving the "
                    f"{run_queue(run.metric)} queue?"
                )
            time.sleep(0.5)
        if progress is not None and run.status == RunStatus.DONE and shown != run.total:
            progress.update(run.total)
        return self._finish(run)

    def _finish(self, run: MetricRun) -> None:
        if run.status != RunStatus.DONE:
            raise CommandError(f"run {run.pk} {run.status}: {run.error or 'no message'}")
        self.stdout.write(json.dumps(summary(run), ensure_ascii=False))
