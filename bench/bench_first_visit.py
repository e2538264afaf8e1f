"""First visits to the analysis pages (figures cache empty): time and memory at 60,000 judgements.

Issue 46 item 5: a probe saw the meta-evaluation page take 15.8 s and a worker grow from 101 to
666 MB on its first visit (60,000 judgements, five chrF runs, cache flushed); the quality page
took 9.1 s. This builds that set-up through the services (the importers, `create_campaign`,
`run_metric --sync`): a Likert campaign over ITEMS items x 10 systems, every output judged by 3
of 12 annotators on one criterion, and five chrF runs (char_order 2-6, so five signatures). It is
kept in a scratch database (`bench_first_visit_<judgements>`; `--rebuild` drops it).

Each page is then requested once, cache flushed, in a fresh process (the test client, as the
project's owner): wall time, the process's RSS growth (peak `ru_maxrss` after the request minus
RSS before it) and, with `--trace`, tracemalloc's peak and its top allocation sites.

Baseline, in the same run: the same pages at 6,000 judgements. The ratio large/small of the RSS
growth says how far the first computation's memory is from not depending on the judgements
(10x the judgements; a ratio near 1 is bounded, near 10 is linear).

    .venv/bin/python bench/bench_first_visit.py [--judgements 60000] [--small 6000] [--trace] [--rebuild]
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
SYSTEMS = 10
PER_OUTPUT = 3
ANNOTATORS = 12
CHRF_ORDERS = (6, 5, 4, 3, 2)
WORDS = (
    "the a cat dog sat on mat quickly restaurant serves cheap food near river centre family friendly "
    "pub coffee shop rated highly by customers who visit often"
).split()
PAGES = (
    ("meta-evaluation", "/campaigns/{pk}/analysis/meta/"),
    ("quality", "/campaigns/{pk}/quality/"),
    ("analysis", "/campaigns/{pk}/analysis/"),
)


def server_url() -> str:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    return url.rsplit("/", 1)[0]


def setup_django(database: str) -> None:
    os.environ["DATABASE_URL"] = f"{server_url()}/{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings.test")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def ensure_database(name: str, rebuild: bool) -> bool:
    """True when the database must be (re)built."""
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        if rebuild:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f"CREATE DATABASE {name}")
            return True
    with psycopg.connect(f"{server_url()}/{name}", autocommit=True) as conn:
        try:
            done = conn.execute("SELECT 1 FROM metrics_metricrun WHERE status = 'done' LIMIT 1").fetchone()
        except psycopg.errors.UndefinedTable:
            done = None
    return not done


def build(judgements: int) -> None:
    """The campaign through the services: dataset and judgement imports, then five chrF runs."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotations.models import Membership, Project
    from annotations.services.imports import dataset_import, judgements_import

    call_command("migrate", verbosity=0)
    rng = random.Random(0)
    items = judgements // (SYSTEMS * PER_OUTPUT)

    def sentence(n=14):
        return " ".join(rng.choice(WORDS) for _ in range(n))

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.jsonl"
        with data.open("w") as file:
            for i in range(items):
                line = {
                    "item": f"i{i}",
                    "source": sentence(),
                    "references": [sentence()],
                    "outputs": {f"s{k}": sentence() for k in range(SYSTEMS)},
                }
                file.write(json.dumps(line) + "\n")
        dataset_import(stream=data, dataset_name="bench", project_name="bench")
        owner = get_user_model().objects.create_user("owner", password="owner")
        Membership.objects.create(project=Project.objects.get(name="bench"), user=owner, role="owner")
        quiet = {"stdout": open(os.devnull, "w"), "stderr": open(os.devnull, "w")}
        call_command(
            "create_campaign", "--dataset", "bench", "--name", "bench", "--protocol", "likert",
            "--criteria", "adequacy", "--scale", "1-5", **quiet,
        )  # fmt: skip
        lines = Path(tmp) / "judgements.jsonl"
        with lines.open("w") as file:
            for i in range(items):
                for k in range(SYSTEMS):
                    for a in rng.sample(range(ANNOTATORS), PER_OUTPUT):
                        line = {
                            "item": f"i{i}",
                            "system": f"s{k}",
                            "annotator": f"a{a}",
                            "criterion": "adequacy",
                            "score": rng.randint(1, 5),
                        }
                        file.write(json.dumps(line) + "\n")
        judgements_import(stream=lines, campaign_name="bench")
    print(f"  imported {items:,} items, {items * SYSTEMS * PER_OUTPUT:,} judgements", flush=True)
    for order in CHRF_ORDERS:
        call_command(
            "run_metric", "--dataset", "bench", "--metric", "chrf", "--option", f"char_order={order}",
            "--sync", "--no-progress", **quiet,
        )  # fmt: skip
    print(f"  built in {time.perf_counter() - start:.0f} s", flush=True)


def rss_now() -> int:
    """The process's resident set now, in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(database: str, page: str, trace: bool) -> None:
    """One first visit to one page in this fresh process; prints its figures as JSON."""
    setup_django(database)
    from django.core.cache import cache
    from django.test import Client

    from annotations.models import Campaign

    campaign = Campaign.objects.get(name="bench")
    url = dict(PAGES)[page].format(pk=campaign.pk)
    client = Client()
    assert client.login(username="owner", password="owner")
    client.get(f"/campaigns/{campaign.pk}/")  # the modules every page needs, loaded before measuring
    cache.clear()
    if trace:
        import tracemalloc

        tracemalloc.start(12)
    before = rss_now()
    start = time.perf_counter()
    response = client.get(url)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert response.status_code == 200, (url, response.status_code)
    figures = {"seconds": seconds, "rss_before_mb": before / 2**20, "growth_mb": (peak - before) / 2**20}
    if trace:
        snapshot_peak = tracemalloc.get_traced_memory()[1]
        figures["tracemalloc_peak_mb"] = snapshot_peak / 2**20
    print(json.dumps(figures), flush=True)


def visit(database: str, page: str, trace: bool) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", database, "--page", page] + (["--trace"] if trace else []),
        env=dict(os.environ),
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgements", type=int, default=60_000)
    parser.add_argument("--small", type=int, default=6_000)
    parser.add_argument("--trace", action="store_true", help="also tracemalloc's peak (slower)")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--only", help="only the pages whose name contains this")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--page", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.page, args.trace)
        return
    results: dict[str, dict] = {}
    for label, n in (("small", args.small), ("large", args.judgements)):
        database = f"bench_first_visit_{n}"
        if ensure_database(database, args.rebuild):
            print(f"building {label} ({n:,} judgements) in {database} ...", flush=True)
            code = (
                f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.argv = ['x']; "
                f"import bench.bench_first_visit as b; b.setup_django({database!r}); b.build({n})"
            )
            subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))
        results[label] = {}
        for page, _ in PAGES:
            if args.only and args.only not in page:
                continue
            results[label][page] = figures = visit(database, page, args.trace)
            traced = f"  tracemalloc peak {figures['tracemalloc_peak_mb']:6.0f} MB" if args.trace else ""
            print(
                f"  {label:5s} {n:>7,} judgements  {page:16s} {figures['seconds']:7.2f} s  RSS "
                f"{figures['rss_before_mb']:5.0f} MB + {figures['growth_mb']:5.0f} MB{traced}",
                flush=True,
            )
    print(f"\n{'page':16s} {'small s':>8s} {'large s':>8s} {'small MB':>9s} {'large MB':>9s} {'MB ratio':>9s}")
    for page, large in results["large"].items():
        small = results["small"][page]
        ratio = large["growth_mb"] / small["growth_mb"] if small["growth_mb"] > 0 else float("nan")
        print(
            f"{page:16s} {small['seconds']:8.2f} {large['seconds']:8.2f} {small['growth_mb']:9.0f} "
            f"{large['growth_mb']:9.0f} {ratio:9.2f}"
        )
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_first_visit.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
