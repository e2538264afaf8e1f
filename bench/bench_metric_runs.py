"""Metric runs through Celery workers against a direct call of the scorer.

Builds a dataset of N outputs (default 10,000: 2,500 items x 4 systems, one
reference each, short sentences) in a scratch database `bench_metric_runs`,
then for each metric (chrf, and bertscore with the packaged MiniLM on CPU):

- direct: `metric.corpus_state` + `metric.score` over all outputs in one call
  + `corpus_score` (the texts already in memory: the scorer's cost alone);
- one worker: `run_create` → worker prepares, scores chunks, stores every
  score, finalises; timed until the run is done (model already loaded);
- two workers: the same with two worker processes.

Prints seconds, outputs/s, the overhead of one worker over the direct call
(target < 10 %) and the speed-up of two workers over one. Needs Redis
(CELERY_BROKER_URL) and PostgreSQL (DATABASE_URL's server).

    .venv/bin/python bench/bench_metric_runs.py [--outputs 10000] [--bert-outputs 10000] [--metrics chrf,bertscore] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
SCRATCH_DB = "bench_metric_runs"
WORDS = (
    "the a cat dog sat on mat quickly restaurant serves cheap food near river centre family friendly "
    "pub coffee shop rated highly by customers who visit often"
).split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))).capitalize() + "."


def server_url() -> str:
    return os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres").rsplit("/", 1)[0]


def setup_django() -> None:
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")
        conn.execute(f"CREATE DATABASE {SCRATCH_DB}")
    os.environ["DATABASE_URL"] = f"{server_url()}/{SCRATCH_DB}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings.base")
    os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/14")
    os.environ.setdefault("WORKBENCH_DEVICE", "cpu")
    # No embedding cache across calls (here and in the workers): repeated timings on the same
    # texts would otherwise be cache hits. Duplicates within one call are still encoded once.
    os.environ["WORKBENCH_EMBED_CACHE_MB"] = "0"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build(name: str, n_outputs: int, systems: int = 4):
    from annotations.models import Dataset, Item, Output, Project, Reference, System

    rng = random.Random(0)
    project, _ = Project.objects.get_or_create(name="bench")
    dataset = Dataset.objects.create(project=project, name=name)
    syss = [System.objects.create(dataset=dataset, name=f"sys{k}") for k in range(systems)]
    items = Item.objects.bulk_create(
        [
            Item(dataset=dataset, external_id=f"i{i}", position=i, source=sentence(rng))
            for i in range(n_outputs // systems)
        ]
    )
    Reference.objects.bulk_create([Reference(item=it, position=0, text=sentence(rng)) for it in items])
    Output.objects.bulk_create([Output(item=it, system=s, text=sentence(rng)) for it in items for s in syss])
    return dataset


def start_worker(log_dir: Path, threads: int | None = None):
    """A worker process; `threads`: torch's threads in it (OMP_NUM_THREADS), so that
    several model workers on one machine share its cores instead of each using all."""
    from workbench.celery_spawn import worker_start

    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    proc, _ = worker_start(env=env, log_dir=log_dir, prefix="bench", loglevel="WARNING")
    return proc


def through_workers(dataset, metric: str, options: dict, chunk_size: int | None = None) -> float:
    from metrics.models import MetricRun, RunStatus
    from metrics.services import run_create

    t0 = time.time()
    run, _ = run_create(dataset=dataset, metric=metric, options=options, reuse=False, chunk_size=chunk_size)
    while True:
        run = MetricRun.objects.get(pk=run.pk)
        if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            break
        time.sleep(0.2)  # polling costs CPU on a small shared machine
    # Until the run was marked done (PostgreSQL's clock: the same machine), not until this
    # poll noticed: polling every 0.2 s would add 0.1 s on average.
    elapsed = run.finished_at.timestamp() - t0
    if run.status != RunStatus.DONE:
        raise SystemExit(f"run {run.pk} {run.status}: {run.error}")
    return elapsed


def direct(dataset, metric_name: str, options: dict) -> float:
    from metrics.scorers import get_metric
    from metrics.services.common import metric_inputs
    from metrics.services.inputs import dataset_outputs, load_inputs

    inputs = load_inputs(output_ids=list(dataset_outputs(dataset=dataset).values_list("pk", flat=True)))
    metric = get_metric(metric_name, **options)
    kwargs = metric_inputs(metric, inputs)
    # What the workers do at start (workbench/celery.py): the ratio then measures the run, not a
    # garbage collector walking this process's larger heap during the direct call.
    gc.freeze()
    t0 = time.perf_counter()
    metric.load_corpus_state(metric.corpus_state(inputs.hyps, **kwargs))
    metric.corpus_score(metric.score(inputs.hyps, **kwargs))
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--outputs", type=int, default=10_000)
    parser.add_argument("--bert-outputs", type=int, default=10_000)
    parser.add_argument("--metrics", default="chrf,bertscore")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (best and median ratio)")
    args = parser.parse_args()
    setup_django()
    from django.db import connections

    from workbench.celery import app
    from workbench.celery_spawn import worker_stop

    log_dir = ROOT / "var"
    log_dir.mkdir(exist_ok=True)
    app.control.purge()
    workers = [start_worker(log_dir)]
    try:
        warm = build("warm-up", 8)
        results = []
        for metric in args.metrics.split(","):
            n = args.bert_outputs if metric == "bertscore" else args.outputs
            dataset = build(f"bench-{metric}", n)
            options = {"device": "cpu"} if metric == "bertscore" else {}
            direct(warm, metric, options)  # load the model in this process
            if len(workers) > 1:  # back to one worker with all the cores
                while workers:
                    worker_stop(workers.pop())
                workers.append(start_worker(log_dir))
            through_workers(warm, metric, options, chunk_size=1)  # load the model in the worker
            # Untimed: the first run over these outputs also fills PostgreSQL's caches, as
            # loading them (untimed) filled this process's memory for the direct call.
            through_workers(dataset, metric, options)
            # Interleaved rounds: on a shared machine the speed changes from minute to minute,
            # so the best of each and the median of the rounds' ratios are both printed.
            directs, ones = [], []
            for _ in range(args.repeat):
                directs.append(direct(dataset, metric, options))
                ones.append(through_workers(dataset, metric, options))
            t_direct, t_one = min(directs), min(ones)
            median_ratio = statistics.median(one / d for one, d in zip(ones, directs))
            # Two workers share the cores: torch's threads in each = cores / 2 (what the README asks
            # of production workers), or two model workers would each run threads on every core.
            share = max(1, (os.cpu_count() or 2) // 2)
            worker_stop(workers.pop())
            workers += [start_worker(log_dir, threads=share), start_worker(log_dir, threads=share)]
            through_workers(warm, metric, options, chunk_size=1)  # 8 one-output chunks: both workers warm
            t_two = min(through_workers(dataset, metric, options) for _ in range(args.repeat))
            results.append((metric, n, t_direct, t_one, t_two))
            print(
                f"{metric}: {n} outputs  direct {t_direct:.2f} s ({n / t_direct:.0f}/s)  "
                f"1 worker {t_one:.2f} s ({n / t_one:.0f}/s, overhead {100 * (t_one / t_direct - 1):+.1f} %, "
                f"median of {args.repeat} rounds {100 * (median_ratio - 1):+.1f} %)  "
                f"2 workers {t_two:.2f} s ({n / t_two:.0f}/s, speed-up x{t_one / t_two:.2f})",
                flush=True,
            )
    finally:
        for proc in workers:
            worker_stop(proc)
        connections.close_all()
        with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB} WITH (FORCE)")
    print(f"cpu cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
