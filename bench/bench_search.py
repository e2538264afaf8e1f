"""Search and paging at scale: `/api/items/?q=...` and the dataset page on 1M outputs.

Builds (once; kept for later runs) a dataset of 100,000 items x 10 systems =
1,000,000 outputs plus one reference per item, in realistic English: words
drawn with their real frequencies from wordfreq's list, so queries range
from rare words (a few dozen matching texts) to very common ones (most
texts). Then times full requests through Django (URL routing, selector,
pagination, serialization or template), as a logged-in owner:

- new: the indexed search (trigram GIN indexes, rare/common plan choice,
  capped counts) and the (dataset, position, id) index for deep pages;
- baseline, in the same run: the previous code path, the EXISTS-per-item
  search with an exact count, with the new indexes dropped inside a
  transaction that is rolled back afterwards.

Prints p50/p95 per kind of query and the ratio baseline p95 / new p95.
Target: p95 of the new path under 200 ms.

Uses the scratch database `bench_search` (created here, kept so later runs
skip the ~2 minute load; `--rebuild` drops it first) on the server of
DATABASE_URL (default postgres://postgres@127.0.0.1:5432).

    .venv/bin/python bench/bench_search.py [--items 100000] [--systems 10] [--repeat 5] [--database bench_search]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
DATASET = "bench-search"


def server_url() -> str:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    return url.rsplit("/", 1)[0]


def ensure_database(name: str, rebuild: bool) -> None:
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        if rebuild:
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f"CREATE DATABASE {name}")


def setup_django(name: str) -> None:
    os.environ["DATABASE_URL"] = f"{server_url()}/{name}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings.test")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def vocabulary() -> tuple[list[str], list[float]]:
    from wordfreq import top_n_list, word_frequency

    words = [w for w in top_n_list("en", 30_000) if w.isalpha()]
    return words, [word_frequency(w, "en") for w in words]


def load(n_items: int, n_systems: int) -> None:
    from django.db import connection, transaction

    from annotations.bulk import rows_insert
    from annotations.models import Dataset, Item, Output, Project, Reference, System

    if Dataset.objects.filter(name=DATASET).exists():
        return
    print(f"loading {n_items:,} items x {n_systems} systems ...", flush=True)
    started = time.perf_counter()
    words, weights = vocabulary()
    cumulative = list(itertools.accumulate(weights))
    rng = random.Random(7)

    def sentence() -> str:
        return " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(8, 16))).capitalize() + "."

    with transaction.atomic():
        project = Project.objects.create(name="bench")
        dataset = Dataset.objects.create(project=project, name=DATASET)
        rows_insert(
            Item,
            ["dataset_id", "external_id", "position", "source", "data", "meta"],
            ((dataset.pk, f"item-{i:06d}", i, sentence(), [], {}) for i in range(n_items)),
        )
        item_ids = list(Item.objects.filter(dataset=dataset).order_by("position").values_list("id", flat=True))
        rows_insert(Reference, ["item_id", "position", "text"], ((i, 0, sentence()) for i in item_ids))
        systems = [System.objects.create(dataset=dataset, name=f"sys{s}") for s in range(n_systems)]
        rows_insert(
            Output, ["item_id", "system_id", "text"], ((i, s.pk, sentence()) for i in item_ids for s in systems)
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(f"loaded in {time.perf_counter() - started:.0f} s", flush=True)


def queries(rng: random.Random) -> dict[str, list[str]]:
    words, _ = vocabulary()
    long_words = [w for w in words if len(w) >= 4]
    return {
        "rare word": rng.sample([w for w in long_words[8000:25000]], 8),
        "medium word": rng.sample([w for w in long_words[800:8000]], 8),
        "common word": rng.sample([w for w in long_words[30:800]], 6),
        "two words": [" ".join(rng.sample(long_words[100:3000], 2)) for _ in range(4)],
        "item id": [f"item-{rng.randrange(100_000):06d}" for _ in range(4)],
    }


def timed(client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, (url, response.status_code)
    return elapsed


def requests_for(dataset_id: int, mix: dict[str, list[str]]) -> list[tuple[str, str]]:
    from urllib.parse import quote

    urls = []
    for kind, terms in mix.items():
        for term in terms:
            urls.append((f"api {kind}", f"/api/items/?dataset={dataset_id}&q={quote(term)}"))
            urls.append((f"page {kind}", f"/datasets/{dataset_id}/?q={quote(term)}"))
    for page in (1, 400, 1999):  # 50 items a page in the API: 1999 is the last
        urls.append(("api deep page", f"/api/items/?dataset={dataset_id}&page={page}"))
    for page in (1, 1600, 3999):  # 25 a page on the dataset page
        urls.append(("page deep page", f"/datasets/{dataset_id}/?page={page}"))
    return urls


def measure(client, urls: list[tuple[str, str]], repeat: int) -> dict[str, list[float]]:
    by_kind: dict[str, list[float]] = {}
    for kind, url in urls:
        timed(client, url)  # warm the cache: steady state, as a busy server runs
        by_kind.setdefault(kind, []).extend(timed(client, url) for _ in range(repeat))
    return by_kind


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def old_item_search(qs, *, query: str = "", system_id=None, **unused):
    """The search before this benchmark's work: EXISTS per item, for every query."""
    from django.db.models import Exists, OuterRef, Q, TextField
    from django.db.models.functions import Cast

    from annotations.models import Output, Reference

    query = query.strip()
    if query:
        qs = qs.annotate(data_text=Cast("data", TextField())).filter(
            Q(external_id__icontains=query)
            | Q(source__icontains=query)
            | Q(data_text__icontains=query)
            | Exists(Reference.objects.filter(item=OuterRef("pk"), text__icontains=query))
            | Exists(Output.objects.filter(item=OuterRef("pk"), text__icontains=query))
        )
    if system_id is not None:
        qs = qs.filter(Exists(Output.objects.filter(item=OuterRef("pk"), system_id=system_id)))
    return qs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5, help="timed requests per URL (new path)")
    parser.add_argument("--baseline-per-kind", type=int, default=2, help="URLs per kind timed on the old path")
    parser.add_argument("--database", default="bench_search")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()

    ensure_database(args.database, args.rebuild)
    setup_django(args.database)
    load(args.items, args.systems)

    from unittest import mock

    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.test import Client

    from annotations import pagination, selectors
    from annotations.models import Dataset, Membership, Output

    dataset = Dataset.objects.get(name=DATASET)
    n_outputs = Output.objects.filter(item__dataset=dataset).count()
    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": False})
    Membership.objects.get_or_create(project=dataset.project, user=user, defaults={"role": "owner"})
    client = Client()
    client.force_login(user)
    mix = queries(random.Random(11))
    urls = requests_for(dataset.pk, mix)
    print(
        f"{dataset.items.count():,} items, {n_outputs:,} outputs; {len(urls)} URLs x {args.repeat}; "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )

    new = measure(client, urls, args.repeat)
    for kind, values in new.items():
        print(
            f"  new {kind:<22} p50 {statistics.median(values) * 1000:6.0f} ms  p95 {p95(values) * 1000:6.0f} ms",
            flush=True,
        )

    # The same requests on the previous code path, without the new indexes.
    baseline_urls = []
    for kind in dict.fromkeys(k for k, _ in urls):
        baseline_urls += [u for u in urls if u[0] == kind][: args.baseline_per_kind]
    with transaction.atomic():
        with connection.cursor() as cursor:
            for name in (
                "item_external_id_trgm",
                "item_source_trgm",
                "item_data_trgm",
                "reference_text_trgm",
                "output_text_trgm",
                "item_dataset_position",
            ):
                cursor.execute(f"DROP INDEX IF EXISTS {name}")
        uncapped = type("Uncapped", (pagination.CappedPaginator,), {})
        uncapped.__init__ = lambda self, *a, count_cap=None, **k: pagination.CappedPaginator.__init__(
            self, *a, count_cap=None, **k
        )
        with (
            mock.patch.object(selectors, "_item_search", old_item_search),
            mock.patch.object(pagination.CappedPagination, "django_paginator_class", uncapped),
            mock.patch("annotations.views.datasets.CappedPaginator", uncapped),
        ):
            baseline = measure(client, baseline_urls, 1)
        transaction.set_rollback(True)

    print(f"\n{'request':<24} {'new p50':>9} {'new p95':>9} {'old p95':>9} {'ratio':>7}")
    all_new, all_old = [], []
    for kind in new:
        n, o = new[kind], baseline.get(kind, [])
        all_new += n
        all_old += o
        ratio = f"{p95(o) / p95(n):6.0f}x" if o else ""
        old = f"{p95(o) * 1000:7.0f}ms" if o else ""
        print(f"{kind:<24} {statistics.median(n) * 1000:7.0f}ms {p95(n) * 1000:7.0f}ms {old:>9} {ratio:>7}")
    print(
        f"\nall requests: new p95 {p95(all_new) * 1000:.0f} ms (target < 200 ms), "
        f"old p95 {p95(all_old) * 1000:.0f} ms; ratio old/new p95 = {p95(all_old) / p95(all_new):.0f}x "
        f"({n_outputs:,} outputs; load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
