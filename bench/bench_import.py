"""Dataset import speed on PostgreSQL: `dataset_import` against a naive peer.

Imports a generated JSONL dataset of 25,000 items x 4 systems (100,000
outputs, plus one reference per item) through `dataset_import`, then the same
kind of data, on a smaller slice, the naive way: one ORM `create()` per row
inside one transaction. Prints rows/s of both and their ratio.

Uses a scratch database `bench_import` (created and dropped here) on the
server of DATABASE_URL (default postgres://postgres@127.0.0.1:5432).

    .venv/bin/python bench/bench_import.py [--items 25000] [--systems 4] [--naive-items 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
SCRATCH_DB = "bench_import"
WORDS = (
    "the a cat dog sat on mat quickly restaurant serves cheap food near river centre family friendly "
    "pub coffee shop rated highly by customers who visit often"
).split()


def sentence(rng: random.Random, n: int = 18) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def dataset_rows(n_items: int, n_systems: int, prefix: str, seed: int = 0):
    rng = random.Random(seed)
    for i in range(n_items):
        yield {
            "item": f"{prefix}-{i}",
            "source": sentence(rng),
            "references": [sentence(rng)],
            "outputs": {f"sys{s}": sentence(rng) for s in range(n_systems)},
        }


def server_url() -> str:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    return url.rsplit("/", 1)[0]


def recreate_scratch_db() -> None:
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")
        conn.execute(f"CREATE DATABASE {SCRATCH_DB}")


def drop_scratch_db() -> None:
    from django.db import connections

    connections.close_all()
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")


def naive_import(rows: list[dict], dataset_name: str) -> None:
    """The peer: what a straightforward importer does, one INSERT per row."""
    from django.db import transaction

    from annotations.models import Dataset, Item, Output, Project, Reference, System

    with transaction.atomic():
        project, _ = Project.objects.get_or_create(name="naive")
        dataset = Dataset.objects.create(project=project, name=dataset_name)
        systems: dict[str, System] = {}
        for position, row in enumerate(rows):
            item = Item.objects.create(
                dataset=dataset, external_id=row["item"], position=position, source=row["source"]
            )
            for k, text in enumerate(row["references"]):
                Reference.objects.create(item=item, position=k, text=text)
            for name, text in row["outputs"].items():
                if name not in systems:
                    systems[name] = System.objects.create(dataset=dataset, name=name)
                Output.objects.create(item=item, system=systems[name], text=text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=25_000)
    parser.add_argument("--systems", type=int, default=4)
    parser.add_argument("--naive-items", type=int, default=1_000)
    args = parser.parse_args()

    recreate_scratch_db()
    os.environ["DATABASE_URL"] = f"{server_url()}/{SCRATCH_DB}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "workbench.settings.test"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from annotations.services.imports import dataset_import

    try:
        call_command("migrate", verbosity=0)
        rows = list(dataset_rows(args.items, args.systems, "bulk"))
        payload = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
        rows_per_item = 1 + 1 + args.systems  # item, reference, outputs
        n_outputs = args.items * args.systems

        start = time.perf_counter()
        result = dataset_import(stream=payload, dataset_name="bench-bulk", fmt="jsonl")
        bulk_s = time.perf_counter() - start
        assert result.extra["outputs_created"] == n_outputs, result.extra

        start = time.perf_counter()
        again = dataset_import(stream=payload, dataset_name="bench-bulk", fmt="jsonl")
        reimport_s = time.perf_counter() - start
        assert again.unchanged

        naive_rows = list(dataset_rows(args.naive_items, args.systems, "naive", seed=1))
        start = time.perf_counter()
        naive_import(naive_rows, "bench-naive")
        naive_s = time.perf_counter() - start

        bulk_rate = args.items * rows_per_item / bulk_s
        naive_rate = args.naive_items * rows_per_item / naive_s
        print(
            f"dataset_import: {args.items:,} items x {args.systems} systems = {n_outputs:,} outputs "
            f"({args.items * rows_per_item:,} rows, {len(payload) / 1e6:.1f} MB JSONL) in {bulk_s:.2f} s "
            f"-> {bulk_rate:,.0f} rows/s"
        )
        print(f"re-import of the same file (validated, nothing written): {reimport_s:.2f} s")
        print(
            f"naive per-row ORM create, {args.naive_items:,} items ({args.naive_items * rows_per_item:,} rows) "
            f"in {naive_s:.2f} s -> {naive_rate:,.0f} rows/s"
        )
        print(f"ratio dataset_import / naive: {bulk_rate / naive_rate:.1f}x faster")
    finally:
        drop_scratch_db()


if __name__ == "__main__":
    main()
