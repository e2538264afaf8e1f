"""A batch end's completion code: one annotator's standing, read from their own items,
against the campaign-wide figures it used to read, as the campaign grows.

At the end of every batch the submit issues a completion code whose pass or fail follows the
annotator's standing (quality rules on their figures). It used to compute every annotator's
figures of the campaign (`campaign_quality`; its cache is stale at a batch end, since a
judgement was just stored), so each batch end cost time that grew with everyone's work; it now
reads the items the annotator answered (`annotator_quality`). For each campaign size, a
scratch database `bench_batch_end` (made and dropped here) gets a Likert campaign, 3 systems,
k = 3, with `--per-annotator` judgements by each of A annotators (written with COPY); then both
reads run `--repeat` times, interleaved, for one annotator, and the medians, their ratio and
whether both gave the same standing are printed.

    .venv/bin/python bench/bench_batch_end.py [--annotators 10,50,200] [--per-annotator 300]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
SCRATCH_DB = "bench_batch_end"
SYSTEMS, K = 3, 3


def server_url() -> str:
    return os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres").rsplit("/", 1)[0]


def setup_django() -> None:
    os.environ["DATABASE_URL"] = f"{server_url()}/{SCRATCH_DB}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "workbench.settings.test"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def build(n_annotators: int, per_annotator: int):
    """A campaign where each of n annotators rated about `per_annotator` outputs; returns it."""
    from django.db import transaction

    from annotations.bulk import rows_insert
    from annotations.models import Annotator, Campaign, Dataset, Item, Output, Project, RatingJudgement, System

    rng = random.Random(0)
    n_items = per_annotator * n_annotators // (SYSTEMS * K)
    with transaction.atomic():
        project = Project.objects.create(name=f"bench-{n_annotators}")
        dataset = Dataset.objects.create(project=project, name=f"bench-{n_annotators}")
        rows_insert(System, ["dataset_id", "name"], ((dataset.pk, f"sys{s}") for s in range(SYSTEMS)))
        systems = list(System.objects.filter(dataset=dataset).values_list("id", flat=True))
        rows_insert(
            Item,
            ["dataset_id", "external_id", "position", "source", "data", "meta"],
            ((dataset.pk, f"item-{i}", i, "source", [], {}) for i in range(n_items)),
        )
        items = list(Item.objects.filter(dataset=dataset).order_by("position").values_list("id", flat=True))
        rows_insert(Output, ["item_id", "system_id", "text"], ((i, s, "output") for i in items for s in systems))
        rows_insert(
            Annotator,
            ["project_id", "name", "namespace"],
            ((project.pk, f"worker-{a}", "import") for a in range(n_annotators)),
        )
        annotators = list(Annotator.objects.filter(project=project).values_list("id", flat=True))
        campaign = Campaign.objects.create(
            name=f"bench-{n_annotators}",
            dataset=dataset,
            protocol="likert",
            criteria=["quality"],
            scale_min=0,
            scale_max=100,
            redundancy=K,
        )
        outputs = list(Output.objects.filter(item__dataset=dataset).values_list("id", "item_id"))
        by_item: dict[int, list[int]] = {}
        for output, item in outputs:
            by_item.setdefault(item, []).append(output)

        def judgements():
            for item, item_outputs in by_item.items():
                quality = {o: rng.uniform(20, 90) for o in item_outputs}
                for annotator in rng.sample(annotators, K):  # each annotator rates the whole item
                    for output in item_outputs:
                        score = min(100.0, max(0.0, round(quality[output] + rng.gauss(0, 10))))
                        yield (
                            campaign.pk,
                            annotator,
                            item,
                            "quality",
                            rng.randint(2_000, 60_000),
                            item_outputs,
                            "import",
                            output,
                            score,
                            0.0,
                            100.0,
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
                "output_id",
                "score",
                "scale_min",
                "scale_max",
            ],
            judgements(),
        )
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return campaign, annotators


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", default="10,50,200", help="campaign sizes (annotators), comma-separated")
    parser.add_argument("--per-annotator", type=int, default=300, help="judgements per annotator")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")
        conn.execute(f"CREATE DATABASE {SCRATCH_DB}")
    try:
        setup_django()
        from django.core.management import call_command

        from annotations.models import RatingJudgement
        from annotations.quality import selectors
        from annotations.quality.rules import verdict

        call_command("migrate", verbosity=0)
        print(
            f"{'annotators':>10} {'judgements':>10} {'campaign-wide ms':>17} {'own items ms':>13} "
            f"{'ratio':>7}  same standing"
        )
        for n in [int(a) for a in args.annotators.split(",")]:
            campaign, annotators = build(n, args.per_annotator)
            total = RatingJudgement.objects.filter(campaign=campaign).count()
            one = annotators[len(annotators) // 2]
            rules = selectors.rules_of(campaign=campaign)
            times: dict[str, list[float]] = {"wide": [], "own": []}
            for _ in range(args.repeat):
                started = time.perf_counter()
                wide = selectors._campaign_figures(campaign)[one]  # what a stale campaign_quality computes
                wide_verdict = verdict(wide, rules)
                times["wide"].append(time.perf_counter() - started)
                started = time.perf_counter()
                own = selectors.annotator_quality(campaign=campaign, annotator_id=one)
                times["own"].append(time.perf_counter() - started)
            same = (own.figures, own.rule_verdict) == (wide, wide_verdict)
            w, o = (statistics.median(times[k]) * 1000 for k in ("wide", "own"))
            print(f"{n:>10} {total:>10,} {w:>17.1f} {o:>13.1f} {w / o:>6.1f}x  {same}", flush=True)
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")


if __name__ == "__main__":
    main()
