"""MQM TSV import speed: `import_judgements --format mqm-tsv` against the JSONL import of the same
judgements (the peer), measured in the same run, with the MQM scores checked equal.

Generates WMT-style ratings (segments x systems x raters, 0-3 errors a rating, No-error rows),
imports them as TSV into one MQM campaign and as our JSONL into another, and prints TSV rows/s,
judgements/s of both and their ratio. Uses a scratch database `bench_mqm` (created and dropped
here) on the server of DATABASE_URL.

    .venv/bin/python bench/bench_mqm_import.py [--segments 2000] [--systems 5] [--raters 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bench_import import drop_scratch_db, server_url  # noqa: E402

SCRATCH_DB = "bench_mqm"
WORDS = "the cat sat on a mat while rain fell over the quiet town and nobody noticed it".split()
CATEGORIES = [
    "Accuracy/Mistranslation",
    "Accuracy/Omission",
    "Fluency/Punctuation",
    "Fluency/Grammar",
    "Style/Awkward",
    "Terminology/Inconsistent use of terminology",
    "Non-translation!",
    "Other",
]


def generate(segments: int, systems: int, raters: int, seed: int = 0):
    rng = random.Random(seed)
    texts = {
        (s, i): " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20)))
        for s in range(systems)
        for i in range(segments)
    }
    tsv = ["system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity"]
    jsonl = []
    for (s, i), text in texts.items():
        words = text.split(" ")
        for r in range(raters):
            spans = []
            for _ in range(rng.choice([0, 0, 1, 2, 3])):
                a = rng.randrange(len(words))
                b = rng.randrange(a, len(words)) + 1
                start = len(" ".join(words[:a])) + (1 if a else 0)
                end = start + len(" ".join(words[a:b]))
                category, severity = rng.choice(CATEGORIES), rng.choice(["Major", "Minor", "Neutral"])
                target = " ".join(words[:a] + ["<v>" + " ".join(words[a:b]) + "</v>"] + words[b:])
                tsv.append(f"sys{s}\td\t{i + 1}\t{i}\tr{r}\tsrc\t{target}\t{category}\t{severity}")
                spans.append({"start": start, "end": end, "severity": severity.lower(), "category": category})
            if not spans:
                tsv.append(f"sys{s}\td\t{i + 1}\t{i}\tr{r}\tsrc\t{text}\tNo-error\tNo-error")
            jsonl.append(
                {"item": str(i), "system": f"sys{s}", "annotator": f"r{r}", "criterion": "mqm", "spans": spans}
            )
    dataset = [{"item": str(i), "outputs": {f"sys{s}": texts[(s, i)] for s in range(systems)}} for i in range(segments)]
    return dataset, "\n".join(tsv) + "\n", jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=2000)
    parser.add_argument("--systems", type=int, default=5)
    parser.add_argument("--raters", type=int, default=3)
    args = parser.parse_args()

    import psycopg

    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")
        conn.execute(f"CREATE DATABASE {SCRATCH_DB}")
    os.environ["DATABASE_URL"] = f"{server_url()}/{SCRATCH_DB}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "workbench.settings.test"
    import django

    django.setup()
    from django.core.management import call_command

    import bench.bench_import as peer
    from annotations import protocols
    from annotations.models import Campaign
    from annotations.selectors.judgements import ALL, campaign_judgements
    from annotations.services.campaigns import campaign_create
    from annotations.services.imports import dataset_import, judgements_import

    peer.SCRATCH_DB = SCRATCH_DB  # drop_scratch_db drops this one
    try:
        call_command("migrate", verbosity=0)
        dataset_rows, tsv, jsonl = generate(args.segments, args.systems, args.raters)
        dataset = dataset_import(
            stream="".join(json.dumps(r) + "\n" for r in dataset_rows).encode(), dataset_name="wmt", fmt="jsonl"
        ).dataset
        for name in ("tsv", "jsonl"):
            campaign_create(dataset=dataset, name=name, protocol="mqm", criteria=["mqm"], redundancy=args.raters)
        rows = tsv.count("\n") - 1

        start = time.perf_counter()
        judgements_import(stream=tsv.encode(), campaign_name="tsv", fmt="mqm-tsv")
        tsv_s = time.perf_counter() - start
        start = time.perf_counter()
        judgements_import(stream="".join(json.dumps(j) + "\n" for j in jsonl).encode(), campaign_name="jsonl")
        jsonl_s = time.perf_counter() - start

        scores = []
        for name in ("tsv", "jsonl"):
            campaign = Campaign.objects.get(name=name)
            found = protocols.of(campaign).output_scores(list(campaign_judgements(campaign=campaign, annotators=ALL)))
            scores.append(found)
        assert scores[0] == scores[1], "the two imports give different MQM scores"
        n = len(jsonl)
        print(
            f"MQM TSV import: {rows:,} rows ({n:,} judgements, {len(tsv) / 1e6:.1f} MB) in {tsv_s:.2f} s "
            f"-> {rows / tsv_s:,.0f} rows/s, {n / tsv_s:,.0f} judgements/s"
        )
        print(f"JSONL import of the same judgements: {jsonl_s:.2f} s -> {n / jsonl_s:,.0f} judgements/s")
        print(
            f"ratio TSV / JSONL (judgements/s): {jsonl_s / tsv_s:.2f}; MQM scores of {len(scores[0]):,} outputs equal"
        )
    finally:
        drop_scratch_db()


if __name__ == "__main__":
    main()
