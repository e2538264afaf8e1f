"""Export of 1,000,000 judgements: time and peak memory (RSS) of the exporting process.

Builds a synthetic Likert campaign in a scratch database `bench_export` (created and dropped
here) with COPY: 10,000 items x 10 systems = 100,000 outputs, each rated by 10 of 50 imported
annotators on a 0-100 scale (1,000,000 judgements). Then, each in a fresh process (so the peak
RSS is that export's alone), `export_dataset` writes the JSONL folder (and, with --formats, CSV
or Hugging Face), and the peer, a naive export that reads the judgement table into memory
(`list(queryset.values(...))`) before writing it, does the same for the judgements file.
Prints seconds, peak RSS (resource.getrusage ru_maxrss) and the RSS of the process before the
export started (Python + Django), and the ratio of the peaks.

    .venv/bin/python bench/bench_export.py [--items 10000] [--systems 10] [--per-output 10]
        [--annotators 50] [--formats jsonl,csv,hf] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
SCRATCH_DB = "bench_export"
WORDS = (
    "the a cat dog sat on mat quickly restaurant serves cheap food near river centre family friendly "
    "pub coffee shop rated highly by customers who visit often"
).split()


def server_url() -> str:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    return url.rsplit("/", 1)[0]


def setup_django() -> None:
    os.environ["DATABASE_URL"] = f"{server_url()}/{SCRATCH_DB}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "workbench.settings.test"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def build(args) -> int:
    """The synthetic campaign, written with COPY; returns the number of judgements."""
    from django.core.management import call_command
    from django.db import transaction

    from annotations.bulk import rows_insert
    from annotations.models import Annotator, Campaign, Dataset, Item, Output, Project, RatingJudgement, System

    call_command("migrate", verbosity=0)
    rng = random.Random(0)

    def sentence(n=16):
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    start = time.perf_counter()
    with transaction.atomic():
        project = Project.objects.create(name="bench")
        dataset = Dataset.objects.create(project=project, name="bench")
        rows_insert(System, ["dataset_id", "name"], ((dataset.pk, f"sys{s}") for s in range(args.systems)))
        systems = list(System.objects.filter(dataset=dataset).order_by("name").values_list("id", flat=True))
        rows_insert(
            Item,
            ["dataset_id", "external_id", "position", "source", "data", "meta"],
            ((dataset.pk, f"item-{i}", i, sentence(), [], {}) for i in range(args.items)),
        )
        items = list(Item.objects.filter(dataset=dataset).order_by("position").values_list("id", flat=True))
        rows_insert(
            Output,
            ["item_id", "system_id", "text"],
            ((item, system, sentence()) for item in items for system in systems),
        )
        rows_insert(
            Annotator,
            ["project_id", "name", "namespace"],
            ((project.pk, f"worker-{a}", "import") for a in range(args.annotators)),
        )
        annotators = list(Annotator.objects.filter(project=project).values_list("id", flat=True))
        campaign = Campaign.objects.create(
            name="bench",
            dataset=dataset,
            protocol="likert",
            criteria=["quality"],
            scale_min=0,
            scale_max=100,
            redundancy=args.per_output,
        )
        # Read before the COPY starts: the connection cannot run a query while it copies.
        outputs = list(Output.objects.filter(item__dataset=dataset).order_by("id").values_list("id", "item_id"))

        def judgements():
            for output, item in outputs:
                for annotator in rng.sample(annotators, args.per_output):
                    yield (
                        campaign.pk,
                        annotator,
                        item,
                        "quality",
                        rng.randint(500, 60_000),
                        [output],
                        "import",
                        output,
                        float(rng.randint(0, 100)),
                        0.0,
                        100.0,
                    )

        n = rows_insert(
            RatingJudgement,
            [
                "campaign_id",
                "annotator_id",
                "item_id",
                "criterion",
                "time_spent_ms",
                "shown_order",
                "origin",
                "output_id",
                "score",
                "scale_min",
                "scale_max",
            ],
            judgements(),
        )
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(
        f"built {args.items:,} items x {args.systems} systems = {args.items * args.systems:,} outputs, "
        f"{n:,} judgements by {args.annotators} annotators with COPY in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return n


def child(mode: str, fmt: str, out: str) -> None:
    """One export in this process; prints a JSON line with its figures."""
    setup_django()
    from annotations.export import ExportOptions, export_dataset
    from annotations.models import Campaign, RatingJudgement

    campaign = Campaign.objects.get(name="bench")
    before = current_rss_mb()
    start = time.perf_counter()
    if mode == "streaming":
        result = export_dataset(campaign=campaign, out=Path(out), options=ExportOptions(fmt=fmt))
        rows = result.judgements
    else:
        # The peer: the whole judgement table in memory, then written.
        rows_in_memory = list(
            RatingJudgement.objects.filter(campaign=campaign)
            .order_by("item_id", "id")
            .values(
                "item__external_id",
                "output__system__name",
                "annotator__name",
                "criterion",
                "score",
                "time_spent_ms",
                "shown_order",
                "output__text",
                "status",
                "origin",
            )
        )
        Path(out).mkdir(parents=True)
        with open(Path(out) / "judgements.jsonl", "w", encoding="utf-8") as f:
            for row in rows_in_memory:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        rows = len(rows_in_memory)
    print(
        json.dumps(
            {
                "mode": mode,
                "format": fmt,
                "seconds": time.perf_counter() - start,
                "judgements": rows,
                "peak_rss_mb": rss_mb(),
                "rss_before_mb": before,
                "bytes": sum(p.stat().st_size for p in Path(out).iterdir()),
            }
        ),
        flush=True,
    )


def run_child(mode: str, fmt: str, folder: Path) -> dict:
    out = folder / f"{mode}-{fmt}"
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, fmt, str(out)], capture_output=True, text=True, env=dict(os.environ)
    )
    if proc.returncode:
        sys.exit(f"{mode} {fmt} export failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(*sys.argv[2:5])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--per-output", type=int, default=10)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--formats", default="jsonl")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database (and reuse it next time)")
    args = parser.parse_args()

    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [SCRATCH_DB]).fetchone()
        if not (exists and args.keep):
            conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")
            conn.execute(f"CREATE DATABASE {SCRATCH_DB}")
            exists = None
    setup_django()
    if not exists:
        build(args)
    else:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)  # a kept database may predate the latest migrations
    from django.db import connections

    connections.close_all()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = [run_child("streaming", fmt, Path(tmp)) for fmt in args.formats.split(",")]
            if not args.no_peer:
                results.append(run_child("naive", "jsonl", Path(tmp)))
        for r in results:
            what = (
                f"export_dataset --format {r['format']}"
                if r["mode"] == "streaming"
                else "naive peer (judgement table in memory), judgements.jsonl only"
            )
            print(
                f"{what}: {r['judgements']:,} judgements in {r['seconds']:.1f} s "
                f"({r['judgements'] / r['seconds']:,.0f}/s), peak RSS {r['peak_rss_mb']:.0f} MB "
                f"(process before the export: {r['rss_before_mb']:.0f} MB), {r['bytes'] / 1e6:.0f} MB written"
            )
        if not args.no_peer:
            print(
                f"ratio peak RSS naive / export_dataset: {results[-1]['peak_rss_mb'] / results[0]['peak_rss_mb']:.1f}x"
            )
    finally:
        if not args.keep:
            connections.close_all()
            with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")


if __name__ == "__main__":
    main()
