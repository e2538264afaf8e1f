"""Researcher pages and API reads at scale: 1,000,000 outputs and 1,000,000 judgements.

Builds once (kept in the scratch database `bench_pages` so later runs skip the load; `--rebuild`
drops it) with COPY: 100,000 items x 10 systems = 1,000,000 outputs with a reference each; a
Likert campaign over two of the systems (200,000 units, k = 5) whose every unit was judged by 5
of 50 annotators: 1,000,000 assignments and 1,000,000 judgements. Then times full requests through
Django (routing, selectors, templates or serializers; the test client, as a logged-in member),
each page `--repeat` times after one warm-up request, and prints p50/p95 per page.

Baseline, in the same run: the same pages on a small copy (1,000 items, 2,000 units), so the
ratio large p95 / small p95 says how far each page is from not depending on the data's size.
Target (issue 24): every p95 under 500 ms at 1M warm.

Issue 45: each page is timed first load (`--cold` rounds, each after the figures cache and the
campaign's worker-computed figures are dropped: p50/p95 of those) and on repeat (p50/p95 of
`--repeat`). Above WORKBENCH_FIGURES_INLINE_MAX judgements a first load answers with the waiting
page (HTTP 202) while a worker computes; the status column says which. With `--freshness` the child
starts a Celery worker on the bench database and times, after a change of one judgement (the
submit's hook, `figures_changed`), how long until the dashboard's figure reflects it, without any
page being opened (the debounce, WORKBENCH_FIGURES_DEBOUNCE_S, included).

    WORKBENCH_FIGURES_INLINE_MAX=2000 .venv/bin/python bench/bench_pages.py [--items 100000] [--repeat 10] \
        [--cold 3] [--freshness] [--rebuild] [--only NAME[,NAME...]]

(the test settings it runs under compute figures in the request unless WORKBENCH_FIGURES_INLINE_MAX
says otherwise: 2,000 is production's default).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "the a cat dog sat on mat quickly restaurant serves cheap food near river centre family friendly "
    "pub coffee shop rated highly by customers who visit often"
).split()
SYSTEMS = 10
CAMPAIGN_SYSTEMS = 2
K = 5
ANNOTATORS = 50


def server_url() -> str:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    return url.rsplit("/", 1)[0]


def setup_django(database: str) -> None:
    os.environ["DATABASE_URL"] = f"{server_url()}/{database}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "workbench.settings.test"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def ensure_database(name: str, rebuild: bool) -> bool:
    """True when the database must be (re)built."""
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        if rebuild:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f"CREATE DATABASE {name}")
            return True
    with psycopg.connect(f"{server_url()}/{name}", autocommit=True) as conn:
        try:
            done = conn.execute("SELECT 1 FROM annotations_campaign WHERE name = 'bench'").fetchone()
        except psycopg.errors.UndefinedTable:
            done = None
    return not done


def build(items: int) -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from annotations.bulk import rows_insert
    from annotations.models import (
        Annotator,
        Assignment,
        Campaign,
        Dataset,
        Enrolment,
        Item,
        Membership,
        Output,
        Project,
        RatingJudgement,
        Reference,
        System,
        Unit,
    )

    call_command("migrate", verbosity=0)
    rng = random.Random(0)

    def sentence(n=14):
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    start = time.perf_counter()
    now = timezone.now()
    with transaction.atomic():
        User = get_user_model()
        owner = User.objects.create_user("owner", password="owner")
        project = Project.objects.create(name="bench")
        Membership.objects.create(project=project, user=owner, role="owner")
        dataset = Dataset.objects.create(project=project, name="bench")
        rows_insert(System, ["dataset_id", "name"], ((dataset.pk, f"sys{s}") for s in range(SYSTEMS)))
        systems = list(System.objects.filter(dataset=dataset).order_by("name").values_list("id", flat=True))
        rows_insert(
            Item,
            ["dataset_id", "external_id", "position", "source", "data", "meta", "doc", "media"],
            ((dataset.pk, f"item-{i}", i, sentence(), [], {}, "", {}) for i in range(items)),
        )
        item_ids = list(Item.objects.filter(dataset=dataset).order_by("position").values_list("id", flat=True))
        rows_insert(Reference, ["item_id", "position", "text"], ((item, 0, sentence()) for item in item_ids))
        rows_insert(
            Output,
            ["item_id", "system_id", "text"],
            ((item, system, sentence()) for item in item_ids for system in systems),
        )
        print(f"  outputs: {time.perf_counter() - start:.0f} s", flush=True)
        rows_insert(
            Annotator,
            ["project_id", "name", "namespace"],
            ((project.pk, f"worker-{a}", "import") for a in range(ANNOTATORS)),
        )
        annotators = list(Annotator.objects.filter(project=project).order_by("id").values_list("id", flat=True))
        campaign = Campaign.objects.create(
            name="bench",
            dataset=dataset,
            protocol="likert",
            criteria=["quality"],
            scale_min=1,
            scale_max=5,
            redundancy=K,
        )
        campaign.systems.set(systems[:CAMPAIGN_SYSTEMS])
        chosen = set(systems[:CAMPAIGN_SYSTEMS])
        outputs = [
            (pk, item, system)
            for pk, item, system in Output.objects.filter(item__dataset=dataset, system_id__in=chosen)
            .order_by("item_id", "system_id")
            .values_list("id", "item_id", "system_id")
        ]
        rows_insert(
            Unit,
            ["campaign_id", "item_id", "outputs", "systems", "kind", "position", "redundancy", "n_taken", "n_done"],
            (
                (campaign.pk, item, [pk], [system], "regular", n, K, K, K)
                for n, (pk, item, system) in enumerate(outputs)
            ),
        )
        units = list(
            Unit.objects.filter(campaign=campaign).order_by("position").values_list("id", "item_id", "outputs")
        )
        rows_insert(
            Enrolment,
            ["campaign_id", "annotator_id", "seed", "n_assigned", "n_done", "walk_step", "position_counts"],
            ((campaign.pk, a, rng.randrange(2**40), 0, 0, 0, {}) for a in annotators),
        )
        print(f"  units: {time.perf_counter() - start:.0f} s", flush=True)
        picks = {unit: rng.sample(annotators, K) for unit, _, _ in units}
        seq = {a: 0 for a in annotators}

        def assignments():
            for unit, item, outs in units:
                for a in picks[unit]:
                    seq[a] += 1
                    spent = rng.randint(2000, 60000)
                    yield (campaign.pk, a, item, unit, "done", seq[a], outs, now, spent, spent, {})

        rows_insert(
            Assignment,
            [
                "campaign_id",
                "annotator_id",
                "item_id",
                "unit_id",
                "status",
                "seq",
                "shown_order",
                "completed_at",
                "time_spent_ms",
                "server_time_ms",
                "draft",
            ],
            assignments(),
        )
        print(f"  assignments: {time.perf_counter() - start:.0f} s", flush=True)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE annotations_enrolment e SET n_assigned = c.n, n_done = c.n FROM "
                "(SELECT annotator_id, count(*) n FROM annotations_assignment WHERE campaign_id = %s "
                "GROUP BY annotator_id) c WHERE e.annotator_id = c.annotator_id AND e.campaign_id = %s",
                [campaign.pk, campaign.pk],
            )
        assignment_of = {}
        for pk, unit, annotator in (
            Assignment.objects.filter(campaign=campaign)
            .values_list("id", "unit_id", "annotator_id")
            .iterator(chunk_size=50_000)
        ):
            assignment_of[(unit, annotator)] = pk

        def judgements():
            for unit, item, outs in units:
                for a in picks[unit]:
                    yield (
                        campaign.pk,
                        a,
                        item,
                        "quality",
                        rng.randint(2000, 60000),
                        outs,
                        "browser",
                        "complete",
                        assignment_of[(unit, a)],
                        outs[0],
                        float(rng.randint(1, 5)),
                        1.0,
                        5.0,
                    )

        rows_insert(
            RatingJudgement,
            [
                "campaign_id",
                "annotator_id",
                "item_id",
                "criterion",
                "time_spent_ms",
                "shown_order",
                "origin",
                "status",
                "assignment_id",
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
        f"built {items:,} items x {SYSTEMS} systems = {items * SYSTEMS:,} outputs, {len(units):,} units, "
        f"{len(units) * K:,} judgements with COPY in {time.perf_counter() - start:.0f} s",
        flush=True,
    )


def pages() -> list[tuple[str, str]]:
    from annotations.models import Campaign, Dataset

    campaign = Campaign.objects.get(name="bench")
    dataset = Dataset.objects.get(name="bench")
    project = dataset.project_id
    from django.conf import settings

    from annotations.models import Item, Output, System
    from annotations.pagination import LIST_COUNT_CAP

    n_outputs = Output.objects.filter(item__dataset=dataset).count()
    last_item = Item.objects.filter(dataset=dataset).order_by("-position", "-id").values_list("pk", flat=True)[0]
    n_items = Item.objects.filter(dataset=dataset).count()
    system = System.objects.filter(dataset=dataset).order_by("name").values_list("pk", flat=True)[0]
    c = campaign.pk
    last_items_page = max(1, -(-min(n_items, LIST_COUNT_CAP) // settings.REST_FRAMEWORK["PAGE_SIZE"]))
    # The deepest page the API serves (lists are paged through their first LIST_COUNT_CAP rows).
    last_page = max(1, -(-min(n_outputs, LIST_COUNT_CAP) // settings.REST_FRAMEWORK["PAGE_SIZE"]))
    return [
        ("project page", f"/projects/{project}/"),
        ("dataset page", f"/datasets/{dataset.pk}/"),
        ("dataset search", f"/datasets/{dataset.pk}/?q=restaurant+serves"),
        ("campaign page", f"/campaigns/{campaign.pk}/"),
        ("progress.json", f"/campaigns/{campaign.pk}/progress.json"),
        ("judgements page", f"/campaigns/{campaign.pk}/judgements/"),
        ("judgements page 500", f"/campaigns/{campaign.pk}/judgements/?page=500"),
        ("quality page", f"/campaigns/{campaign.pk}/quality/"),
        ("quality API", f"/api/campaigns/{campaign.pk}/quality/"),
        # The figure APIs answer like the pages above WORKBENCH_FIGURES_INLINE_MAX: 202, then the worker's figure.
        ("agreement API", f"/api/campaigns/{campaign.pk}/agreement/"),
        ("rankings API", f"/api/campaigns/{campaign.pk}/rankings/"),
        ("analysis", f"/campaigns/{campaign.pk}/analysis/"),
        ("rankings", f"/campaigns/{campaign.pk}/analysis/rankings/"),
        ("meta-evaluation", f"/campaigns/{campaign.pk}/analysis/meta/"),
        ("outputs API deep page", f"/api/outputs/?dataset={dataset.pk}&page={last_page}"),
        ("items API search", f"/api/items/?dataset={dataset.pk}&q=restaurant"),
        ("ratings API", f"/api/judgements/ratings/?campaign={campaign.pk}"),
        ("campaigns API", "/api/campaigns/"),
        # The other pages and APIs a researcher opens on the way (issue 45 at 1M).
        ("project list", "/"),
        ("dataset last page", f"/datasets/{dataset.pk}/?page={-(-n_items // 25)}"),
        ("items of a system", f"/datasets/{dataset.pk}/?system={system}"),
        ("item page (last)", f"/items/{last_item}/"),
        ("campaign export page", f"/campaigns/{c}/export/"),
        ("figures status.json", f"/campaigns/{c}/figures/status.json?want=agreement:x"),
        ("scatter", f"/campaigns/{c}/analysis/scatter/"),
        ("disagreements", f"/campaigns/{c}/analysis/disagreement/"),
        ("error severity", f"/campaigns/{c}/analysis/errors/"),
        ("NLI facts", f"/campaigns/{c}/analysis/facts/"),
        ("campaign API", f"/api/campaigns/{c}/"),
        ("progress API", f"/api/campaigns/{c}/progress/"),
        ("assignments API", f"/api/assignments/?campaign={c}"),
        ("datasets API", "/api/datasets/"),
        ("dataset API", f"/api/datasets/{dataset.pk}/"),
        ("items API deep page", f"/api/items/?dataset={dataset.pk}&page={last_items_page}"),
        ("metric runs API", f"/api/datasets/{dataset.pk}/metric-runs/"),
        ("join links API", f"/api/campaigns/{c}/join-links/"),
        ("projects API", "/api/projects/"),
    ]


def _p(times: list[float], q: float) -> float:
    times = sorted(times)
    return times[min(len(times) - 1, int(round(q * (len(times) - 1))))]


def _forget_figures() -> None:
    """A first visit: no figure in the cache, none computed by a worker."""
    from django.core.cache import cache

    from annotations.models.figures import FigureSnapshot

    cache.clear()
    FigureSnapshot.objects.all().delete()


def measure(repeat: int, only: str | None, cold_rounds: int = 1) -> dict:
    from django.test import Client

    client = Client()
    assert client.login(username="owner", password="owner")
    figures = {}
    for name, url in pages():
        if only and not any(part in name for part in only.split(",")):
            continue
        cold = []
        for _ in range(max(1, cold_rounds)):
            _forget_figures()
            start = time.perf_counter()
            first = client.get(url)
            cold.append((time.perf_counter() - start) * 1000)
        if first.status_code not in (200, 202):
            print(f"  {name}: HTTP {first.status_code} at {url}", flush=True)
        ready_s = None
        if first.status_code == 202:  # the waiting page: the worker computes; the repeats time the figure
            start = time.perf_counter()
            while client.get(url).status_code == 202 and time.perf_counter() - start < 3600:
                time.sleep(0.5)
            ready_s = time.perf_counter() - start
        times, statuses = [], set()
        for _ in range(repeat):
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
            statuses.add(response.status_code)
        figures[name] = {
            "first_ms": cold[0],
            "first_p50_ms": statistics.median(cold),
            "first_p95_ms": _p(cold, 0.95),
            "p50_ms": statistics.median(times),
            "p95_ms": _p(times, 0.95),
            "status": first.status_code,
            "repeat_status": sorted(statuses),
            "first_figure_s": ready_s,
        }
        print(
            f"  {name:24s} first p50 {figures[name]['first_p50_ms']:7.0f} p95 {figures[name]['first_p95_ms']:7.0f} ms"
            f" (HTTP {first.status_code})   repeat p50 {figures[name]['p50_ms']:7.0f} ms   "
            f"p95 {figures[name]['p95_ms']:7.0f} ms",
            flush=True,
        )
    return figures


@contextlib.contextmanager
def own_worker(database: str):
    """A Celery worker of the bench's own on its database (solo pool, queue cpu), stopped afterwards."""
    from workbench.celery_spawn import worker_start, worker_stop

    env = dict(os.environ, DATABASE_URL=f"{server_url()}/{database}", DJANGO_SETTINGS_MODULE="workbench.settings.test")
    worker, _ = worker_start(env=env, log_dir=ROOT / "var", prefix="bench", queues=("cpu",), loglevel="WARNING")
    try:
        yield worker
    finally:
        worker_stop(worker, within=60)


def freshness(rounds: int = 3) -> dict:
    """Seconds from a committed change of one judgement (what a submit does, with its hook) to the
    dashboard's figure reflecting it, computed by the child's worker with no page opened meanwhile."""
    from django.conf import settings
    from django.core.cache import cache
    from django.db import transaction
    from django.test import Client
    from django.utils import timezone

    from annotations.models import Campaign, RatingJudgement
    from annotations.models.figures import FigureSnapshot
    from annotations.selectors import figures_cache
    from annotations.services.figures import figures_changed

    campaign = Campaign.objects.get(name="bench")
    client = Client()
    assert client.login(username="owner", password="owner")
    url = f"/campaigns/{campaign.pk}/analysis/"

    def current() -> bool:
        return FigureSnapshot.objects.filter(
            campaign=campaign, name="agreement", stamp=figures_cache.stamp(campaign)
        ).exists()

    client.get(url)  # the page asks for its figure once
    while not current():
        time.sleep(0.2)
    seconds = []
    for _ in range(rounds):
        judgement = RatingJudgement.objects.filter(campaign=campaign).order_by("pk").first()
        with transaction.atomic():
            RatingJudgement.objects.filter(pk=judgement.pk).update(
                score=1.0 if judgement.score != 1.0 else 2.0, updated_at=timezone.now()
            )
            transaction.on_commit(lambda: figures_changed(campaign_id=campaign.pk))
        start = time.perf_counter()
        while not current():
            time.sleep(0.1)
        seconds.append(time.perf_counter() - start)
        print(f"  last change -> up-to-date dashboard figure: {seconds[-1]:.1f} s", flush=True)

        cache.delete(f"figures-changed:{campaign.pk}")  # the next round is a new burst
    return {
        "seconds": seconds,
        "p50_s": statistics.median(seconds),
        "debounce_s": settings.WORKBENCH_FIGURES_DEBOUNCE_S,
    }


def child(database: str, repeat: int, only: str | None, cold: int = 1, fresh: bool = False) -> None:
    setup_django(database)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # a database built by an older checkout
    # What a gunicorn worker does at start (the URLconf, the reverse tables, the frame template:
    # workbench.warmup), so the first load times a researcher's first request, not the process's.
    import workbench.wsgi  # noqa: F401

    with own_worker(database):
        found = measure(repeat, only, cold)
        if fresh:
            found["_freshness"] = freshness()
    print(json.dumps(found), flush=True)


def run_child(database: str, repeat: int, only: str | None, cold: int = 1, fresh: bool = False) -> dict:
    import subprocess

    proc = subprocess.run(
        [sys.executable, __file__, "--child", database, "--repeat", str(repeat), "--cold", str(cold)]
        + (["--only", only] if only else [])
        + (["--freshness"] if fresh else []),
        env=dict(os.environ),
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    sys.stderr.write("".join(line + "\n" for line in proc.stdout.splitlines()[:-1]))
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--small-items", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--only", help="time only the pages whose name contains this (several: comma-separated)")
    parser.add_argument("--cold", type=int, default=3, help="first loads per page (figures dropped before each)")
    parser.add_argument("--freshness", action="store_true", help="time a change to an up-to-date figure (a worker)")
    parser.add_argument("--database", default="bench_pages", help="scratch database name (small: NAME_small)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.repeat, args.only, args.cold, args.freshness)
        return
    results = {}
    for label, database, items in (
        ("small", f"{args.database}_small", args.small_items),
        ("large", args.database, args.items),
    ):
        if ensure_database(database, args.rebuild):
            import subprocess

            print(f"building {label} ({items:,} items) in {database} ...", flush=True)
            code = (
                f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.argv = ['x']; "
                f"import bench.bench_pages as b; b.setup_django({database!r}); b.build({items})"
            )
            subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))
        print(f"{label}: {items:,} items", flush=True)
        results[label] = run_child(database, args.repeat, args.only, args.cold, args.freshness and label == "large")
    fresh = results["large"].pop("_freshness", None)
    print(
        f"\n{'page':24s} {'small p95':>10s} {'large p95':>10s} {'large p50':>10s} {'first p50':>10s} "
        f"{'first p95':>10s} {'first':>6s} {'ratio':>7s}"
    )
    worst = 0.0
    for name, large in results["large"].items():
        small = results["small"].get(name, {})
        ratio = large["p95_ms"] / small["p95_ms"] if small.get("p95_ms") else float("nan")
        worst = max(worst, large["p95_ms"], large["first_p95_ms"])
        print(
            f"{name:24s} {small.get('p95_ms', float('nan')):10.0f} {large['p95_ms']:10.0f} {large['p50_ms']:10.0f} "
            f"{large['first_p50_ms']:10.0f} {large['first_p95_ms']:10.0f} {large['status']:6d} {ratio:7.2f}"
        )
    print(f"\nslowest p95 (first load or repeat), large: {worst:.0f} ms (target < 500 ms)")
    if fresh:
        print(
            f"last change -> up-to-date figure: p50 {fresh['p50_s']:.1f} s over {len(fresh['seconds'])} changes "
            f"(debounce {fresh['debounce_s']} s included)"
        )
        results["freshness"] = fresh
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_pages.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
