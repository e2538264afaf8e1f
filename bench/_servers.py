"""What bench_peers.py and bench_capacity.py share: our server as the production guide starts it
(a scratch database, production settings, migrate + collectstatic, gunicorn gthread), the E2E data
set they load into it, the campaigns they make, and the answers their simulated annotators give.

Not a benchmark of its own: the two scripts put bench/ on sys.path and import it (bench/ is not a
package). Django is set up by `adopt_settings`; everything that needs the ORM imports it lazily.
"""

from __future__ import annotations

import csv
import os
import random
import re
import secrets
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
CRITERIA = {"likert": ["fluency", "adequacy"], "esa": ["quality"]}
OWN_PREFIXES = ("DJANGO_", "WORKBENCH_")  # the settings' own variables: the scratch server's replace ours


# --- data and answers ----------------------------------------------------------------------


def load_e2e(n_outputs: int) -> list[dict]:
    """Items (meaning representation as triples + its text) with their system outputs, up to n outputs."""
    path = Path(os.environ.get("WORKBENCH_SHARED_DATA", ROOT.parent / "shared" / "data")) / "e2e-human" / "quality.csv"
    if not path.exists():
        sys.exit(f"bench: {path} is absent (the E2E human ratings, see SOURCES.md)")
    items, seen, total = [], set(), 0
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["mr"] in seen:
                continue
            seen.add(row["mr"])
            name = re.search(r"name\[([^\]]*)\]", row["mr"])
            subject = name.group(1) if name else "it"
            triples = [[subject, k, v] for k, v in re.findall(r"(\w+)\[([^\]]*)\]", row["mr"]) if k != "name"]
            outputs, systems = [], set()
            for k in range(1, 6):
                system, text = row[f"sys{k}"].strip(), row[f"ref{k}"].strip()
                if system and text and system not in systems and total + len(outputs) < n_outputs:
                    systems.add(system)
                    outputs.append({"system": system, "text": text})
            if outputs:
                items.append({"id": f"e2e-{len(items)}", "mr": row["mr"], "triples": triples, "outputs": outputs})
                total += len(outputs)
            if total >= n_outputs:
                break
    return items


def answer_scores(protocol: str, rng: random.Random) -> dict:
    """One simulated annotator's scores for one output: Likert 1-6 per criterion, or an ESA 0-100."""
    if protocol == "likert":
        return {c: rng.randint(1, 6) for c in CRITERIA["likert"]}
    return {"quality": rng.randint(0, 100)}


def campaign_options(protocol: str) -> dict:
    """campaign_create's protocol and criteria for the two campaigns every tool gets."""
    if protocol == "likert":
        return {"protocol": "likert", "criteria": CRITERIA["likert"], "scale_min": 1, "scale_max": 6}
    return {"protocol": "esa", "criteria": CRITERIA["esa"]}


# --- small helpers ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# --- our server ----------------------------------------------------------------------------


def scratch_database(suffix: str, *, reuse: bool = False) -> tuple[str, str]:
    """`<DATABASE_URL's name><suffix>` on DATABASE_URL's server, dropped and made again (kept as it
    is when `reuse` and it exists); returns its name and URL."""
    url = urlparse(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workbench"))
    name = url.path.lstrip("/") + suffix
    admin = ["-h", url.hostname or "127.0.0.1", "-p", str(url.port or 5432), "-U", url.username or "postgres"]
    exists = (
        reuse
        and subprocess.run(
            ["psql", *admin, "-tAc", f"SELECT 1 FROM pg_database WHERE datname = '{name}'", "postgres"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    if not exists:
        subprocess.run(["dropdb", "--if-exists", "--force", *admin, name], check=True)
        subprocess.run(["createdb", *admin, name], check=True)
    return name, url._replace(path="/" + name).geturl()


def production_env(database_url: str, static_root: Path, **extra: str) -> dict:
    """This process's environment less its own Django and workbench settings, with production settings
    on `database_url` (as tests/browser/test_production.py starts them) and `extra` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(OWN_PREFIXES)}
    env.update(
        DJANGO_SETTINGS_MODULE="workbench.settings.base",
        DJANGO_READ_DOT_ENV_FILE="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=database_url,
        WORKBENCH_STATIC_ROOT=str(static_root),
        WORKBENCH_SHARED_DATA=os.environ.get("WORKBENCH_SHARED_DATA", ""),
        PATH=f"{ROOT / '.venv/bin'}:{os.environ.get('PATH', '')}",
        **extra,
    )
    return env


def manage(env: dict, *steps: list[str]) -> None:
    """`manage.py <step>` for each step, under `env`."""
    for step in steps:
        subprocess.run([str(ROOT / ".venv/bin/python"), "manage.py", *step], cwd=ROOT, env=env, check=True)


def adopt_settings(env: dict) -> None:
    """This process takes the server's settings (its Django and workbench variables, its database) and
    sets Django up: the benchmark writes the data set and campaigns through the ORM."""
    for key in [k for k in os.environ if k.startswith(OWN_PREFIXES)]:
        del os.environ[key]
    os.environ.update({k: v for k, v in env.items() if k.startswith(OWN_PREFIXES)}, DATABASE_URL=env["DATABASE_URL"])
    import django  # lazy: the settings above first

    django.setup()


def gunicorn(
    port: int, *, workers: int, threads: int, env: dict, log, access_log: Path | None = None
) -> subprocess.Popen:
    """gunicorn as the README's "Configuration for production" starts it, on 127.0.0.1:`port`;
    with `access_log`, each request's time inside gunicorn goes there too."""
    # %(D)s: microseconds from the parsed request to the response sent; the client's latency less
    # this is queueing, connecting and the load generator itself.
    access = (
        ["--access-logfile", str(access_log), "--access-logformat", "%(m)s %(U)s %(s)s %(D)s"] if access_log else []
    )
    return subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            "workbench.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-k",
            "gthread",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--keep-alive",
            "30",
            "--timeout",
            "60",
            "--log-level",
            "warning",
            *access,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def create_dataset(project, name: str, items: list[dict]):
    """A dataset of `project` with `items` (load_e2e's): their systems, items and outputs."""
    from annotations.models import Dataset, Item, Output, System  # lazy: Django set up by adopt_settings

    dataset = Dataset.objects.create(project=project, name=name)
    names = sorted({o["system"] for item in items for o in item["outputs"]})
    systems = {s.name: s for s in System.objects.bulk_create([System(dataset=dataset, name=n) for n in names])}
    rows = Item.objects.bulk_create(
        [Item(dataset=dataset, external_id=it["id"], position=i, data=it["triples"]) for i, it in enumerate(items)]
    )
    Output.objects.bulk_create(
        [
            Output(item=row, system=systems[o["system"]], text=o["text"])
            for row, it in zip(rows, items)
            for o in it["outputs"]
        ]
    )
    return dataset


def vacuum_analyze() -> None:
    """Statistics for the rows just written (and the earlier runs'), before a run meets them."""
    from django.db import connection  # lazy: Django set up by adopt_settings

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")


def backend_pids(database: str) -> list[int]:
    """The PostgreSQL backends serving `database`, other than this process's own."""
    from django.db import connection  # lazy: Django set up by adopt_settings

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [database])
        return [row[0] for row in cursor.fetchall()]


def complete_judgements(campaign_id: int) -> int:
    """The complete judgements the campaign stored (counted from the database, not the clients)."""
    from annotations import protocols  # lazy: Django set up by adopt_settings
    from annotations.models import Campaign  # lazy: Django set up by adopt_settings

    campaign = Campaign.objects.get(pk=campaign_id)
    return protocols.get(campaign.protocol).model.objects.filter(campaign=campaign, status="complete").count()
