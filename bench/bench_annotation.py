"""Load benchmark: 50 annotators fetching and submitting units behind gunicorn on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/wt6 .venv/bin/python bench/bench_annotation.py

Creates a scratch database (`<name of DATABASE_URL>_bench`, dropped and made
again each run), a dataset of E2E-sized items with 5 systems, two campaigns of
each protocol (k = 3; one for each think time, so every mode starts on a fresh
pool), and 50 annotator accounts with API tokens; starts gunicorn (gthread) on a
free loopback port; then each annotator (a thread with its own keep-alive HTTP
connection) loops: fetch a unit (`POST /api/campaigns/{id}/next-assignment/`),
think, submit it. With think time, the annotators' first requests are spread
evenly over one think time (otherwise they would stay in lockstep).

Modes, each run for `--seconds`, each with no think time and with `--think`
(1 s) between fetching and submitting, each started after `VACUUM (ANALYZE)` and a
3 s pause (so that no mode pays for the previous one's writes):
- baseline: the old way, one judgement per request (`POST /api/judgements/ratings/`
  per output and criterion), Likert: the reference the others are compared
  with in the same run;
- per protocol: all judgements of a unit in one atomic request
  (`POST /api/assignments/{id}/submit/`), handed out overlap-first (the default);
- likert-spread: Likert handed out the old way (`allocation=spread`, each
  annotator's own permutation), to compare the two picks in one run.

Prints, per mode, p50 / p95 latency of fetch and submit, units and judgements
stored per second (counted in the database afterwards, complete judgements
only), the ratio to the baseline with the same think time, the load average at
the end of the mode, and where the CPU went: seconds of CPU per second of the
mode used by gunicorn, by the PostgreSQL backends serving it, by this load
generator, and by everything else on the machine (other users of a shared
machine), against the cores there are. Also the SQL statements per fetch and
per submit of each protocol (counted in-process with Django's test client).
`--json FILE` writes everything as JSON.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bench_database_url() -> str:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/wt6")
    parsed = urlparse(url)
    return parsed._replace(path=parsed.path.rstrip("/") + "_bench").geturl()


def setup_database(url: str, n_items: int, n_annotators: int, modes: set[str]) -> dict:
    """Fresh scratch database with campaigns, accounts and tokens; returns ids and tokens."""
    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = ["-h", parsed.hostname or "127.0.0.1", "-p", str(parsed.port or 5432), "-U", parsed.username or "postgres"]
    subprocess.run(["dropdb", "--if-exists", *admin, name], check=True)
    subprocess.run(["createdb", *admin, name], check=True)
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "workbench.settings.test"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    os.environ.update(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="workbench.settings.test")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotations.models import Dataset, Item, Membership, Output, Project, Reference, System
    from annotations.services.campaigns import campaign_create

    project = Project.objects.create(name="bench")
    dataset = Dataset.objects.create(project=project, name="bench-e2e")
    systems = System.objects.bulk_create([System(dataset=dataset, name=f"system-{i}") for i in range(5)])
    items = Item.objects.bulk_create(
        [
            Item(
                dataset=dataset,
                external_id=f"e2e-{i}",
                position=i,
                data=[["The Eagle", "eatType", "coffee shop"], ["The Eagle", "area", "riverside"]],
            )
            for i in range(n_items)
        ]
    )
    Reference.objects.bulk_create(
        [Reference(item=item, position=0, text="The Eagle is a coffee shop by the river.") for item in items]
    )
    Output.objects.bulk_create(
        [
            Output(item=item, system=system, text=f"The Eagle is a coffee shop near the riverside ({system.name}).")
            for item in items
            for system in systems
        ]
    )
    common = {"criteria": ["informativeness", "naturalness", "quality"], "redundancy": 3, "seed": 1}
    likert = {**common, "protocol": "likert", "scale_min": 1, "scale_max": 6, "criteria": ["fluency", "adequacy"]}
    settings = {
        "baseline": likert,
        "likert": likert,
        # The same Likert campaign handed out the way every campaign was before overlap-first became
        # the default (issue 21): the two modes side by side say what the new pick costs.
        "likert-spread": {**likert, "allocation": "spread"},
        "rankme": {**common, "protocol": "rankme", "tuple_size": 5},
        "pairwise": {**common, "protocol": "pairwise", "pair_rounds": 1},
        "bws": {**common, "protocol": "bws", "tuple_size": 4},
        "esa": {**common, "protocol": "esa", "criteria": ["quality"]},
    }
    campaigns = {}
    for name, options in settings.items():
        # "+next": the same protocol, each submit also asking for the next unit (one request per unit).
        for variant in ("", "+next") if name != "baseline" else ("",):
            if name + variant not in modes:
                continue
            for suffix in ("", "-think"):
                key = name + variant + suffix
                campaigns[key] = campaign_create(dataset=dataset, name=key, **options)
    User = get_user_model()
    tokens = []
    for i in range(n_annotators + 1):  # the last one only for counting queries
        user = User.objects.create_user(username=f"bench-{i:02d}", password="x")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        tokens.append(Token.objects.create(user=user).key)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # as autovacuum would soon after an import
    return {
        "campaigns": {k: {"id": c.pk, "criteria": c.criteria, "protocol": c.protocol} for k, c in campaigns.items()},
        "tokens": tokens,
    }


def query_counts(setup: dict, protocols: list[str]) -> dict:
    """SQL statements per fetch and per submit, per protocol (the probe account,
    its third unit: enrolled already), counted in-process; transaction control
    (BEGIN, COMMIT, SAVEPOINT) not counted."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Token {setup['tokens'][-1]}"}
    rng = random.Random(0)
    counts = {}
    for protocol in protocols:
        campaign = setup["campaigns"][protocol]
        for _ in range(3):
            with CaptureQueriesContext(connection) as fetch:
                body = client.post(f"/api/campaigns/{campaign['id']}/next-assignment/", **headers).json()
            answers = answers_for(campaign["protocol"], campaign["criteria"], body, rng)
            with CaptureQueriesContext(connection) as submit:
                if protocol == "baseline":  # one request per judgement: all of them counted
                    for answer in answers:
                        response = client.post(
                            "/api/judgements/ratings/",
                            content_type="application/json",
                            data=json.dumps({"campaign": campaign["id"], **answer}),
                            **headers,
                        )
                        assert response.status_code == 201, response.content
                else:
                    response = client.post(
                        f"/api/assignments/{body['id']}/submit/",
                        content_type="application/json",
                        data=json.dumps({"judgements": answers, "shown_order": body["shown_order"]}),
                        **headers,
                    )
                    assert response.status_code == 201, response.content

        def statements(captured):
            return sum(
                1
                for q in captured.captured_queries
                if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))
            )

        counts[protocol] = {"fetch": statements(fetch), "submit": statements(submit), "judgements": len(answers)}
    return counts


def answers_for(protocol: str, criteria: list[str], body: dict, rng: random.Random) -> list[dict]:
    outputs = [o["id"] for o in body["item"]["outputs"]]
    answers = []
    for criterion in criteria:
        if protocol in ("likert", "rankme", "esa"):
            for output in outputs:
                answer = {
                    "criterion": criterion,
                    "output": output,
                    "score": rng.randint(1, 6) if protocol == "likert" else rng.randint(1, 100),
                }
                if protocol == "esa":
                    answer["spans"] = [{"start": 4, "end": 9, "severity": "minor"}]
                answers.append(answer)
        elif protocol == "pairwise":
            answers.append({"criterion": criterion, "winner": rng.choice("ab")})
        else:
            best, worst = rng.sample(outputs, 2)
            answers.append({"criterion": criterion, "best": best, "worst": worst})
    return answers


class Annotator(threading.Thread):
    def __init__(self, port, token, campaign, mode, think, deadline, seed):
        super().__init__(daemon=True)
        self.port, self.token, self.campaign, self.mode = port, token, campaign, mode
        self.think, self.deadline, self.rng = think, deadline, random.Random(seed)
        self.fetch_ms, self.submit_ms, self.errors = [], [], []
        self.conn = None

    def request(self, path: str, body=None, method: str = "POST") -> tuple[int, dict | None, float]:
        payload = json.dumps(body).encode() if body is not None else b""
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                start = time.perf_counter()
                self.conn.request(method, path, body=payload or None, headers=headers)
                response = self.conn.getresponse()
                data = response.read()
                elapsed = (time.perf_counter() - start) * 1000
                return response.status, (json.loads(data) if data else None), elapsed
            except (http.client.HTTPException, OSError):
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def run(self):
        campaign, protocol = self.campaign["id"], self.campaign["protocol"]
        if self.think:
            # Arrivals spread over one think time, as people (and locust's spawn rate) start: 50
            # annotators started in the same millisecond would stay in step, all 50 requests landing
            # together once a second, and the p95 would measure that burst, not the service.
            time.sleep(self.rng.uniform(0, self.think))
        try:
            while time.monotonic() < self.deadline:
                status, body, ms = self.request(f"/api/campaigns/{campaign}/next-assignment/")
                self.fetch_ms.append(ms)
                if status == 204:
                    return
                if status not in (200, 201):
                    self.errors.append(f"fetch {status} {body}")
                    return
                while self.mode == "chained":  # submit + next, until nothing is left or time is up
                    if self.think:
                        time.sleep(self.think)
                    answers = answers_for(protocol, self.campaign["criteria"], body, self.rng)
                    status, data, ms = self.request(
                        f"/api/assignments/{body['id']}/submit/",
                        {
                            "judgements": answers,
                            "shown_order": body["shown_order"],
                            "time_spent_ms": 1000,
                            "next": True,
                        },
                    )
                    self.submit_ms.append(ms)
                    if status != 201:
                        self.errors.append(f"submit {status} {data}")
                        return
                    body = data["next"]
                    if body is None or time.monotonic() >= self.deadline:
                        return
                if self.think:
                    time.sleep(self.think)
                answers = answers_for(protocol, self.campaign["criteria"], body, self.rng)
                if self.mode == "baseline":
                    for answer in answers:
                        status, data, ms = self.request("/api/judgements/ratings/", {"campaign": campaign, **answer})
                        self.submit_ms.append(ms)
                        if status != 201:
                            self.errors.append(f"rating {status} {data}")
                            return
                else:
                    status, data, ms = self.request(
                        f"/api/assignments/{body['id']}/submit/",
                        {"judgements": answers, "shown_order": body["shown_order"], "time_spent_ms": 1000},
                    )
                    self.submit_ms.append(ms)
                    if status != 201:
                        self.errors.append(f"submit {status} {data}")
                        return
        except Exception as exc:  # reported below
            self.errors.append(repr(exc))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def counted(campaign_id: int) -> tuple[int, int]:
    """Complete units and complete judgements stored for a campaign."""
    from annotations import protocols
    from annotations.models import Assignment, Campaign

    campaign = Campaign.objects.get(pk=campaign_id)
    model = protocols.get(campaign.protocol).model
    return (
        Assignment.objects.filter(campaign=campaign, status="done").count(),
        model.objects.filter(campaign=campaign, status="complete").count(),
    )


# --- where the CPU goes ------------------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime, all threads


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _machine_busy() -> float:
    """CPU seconds spent busy by the whole machine since boot (all cores)."""
    user, nice, system, idle, iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split()[1:9]
    )
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


class CpuMeter:
    """CPU seconds used between `start` and `stop` by gunicorn (master and
    workers), by the PostgreSQL backends of the bench database, by this
    process (the load generator) and by the rest of the machine."""

    def __init__(self, server_pid: int, database: str):
        self.server_pid, self.database = server_pid, database

    def _backends(self) -> list[int]:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [self.database]
            )
            return [row[0] for row in cursor.fetchall()]

    def _sample(self) -> dict:
        gunicorn = [self.server_pid, *_children(self.server_pid)]
        times = os.times()
        return {
            "gunicorn": {p: _cpu_seconds(p) for p in gunicorn},
            "postgres": {p: _cpu_seconds(p) for p in self._backends()},
            "generator": times.user + times.system,
            "machine": _machine_busy(),
            "at": time.monotonic(),
        }

    def start(self):
        self.before = self._sample()

    def stop(self) -> dict:
        after = self._sample()
        elapsed = after["at"] - self.before["at"]
        used = {}
        for kind in ("gunicorn", "postgres"):
            used[kind] = sum(t - self.before[kind].get(p, 0.0) for p, t in after[kind].items())
        used["generator"] = after["generator"] - self.before["generator"]
        used["other"] = max(0.0, after["machine"] - self.before["machine"] - sum(used.values()))
        return {kind: seconds / elapsed for kind, seconds in used.items()}


MODE_LABELS = {
    "baseline": "one judgement per request",
    "unit": "whole unit",
    "chained": "whole unit + next: fetch = first only",
}


def settle() -> None:
    """Start every mode from the same state: what the previous mode wrote vacuumed and
    analysed now (autovacuum would otherwise do it during the next mode, on the same
    cores), and a moment for the load to drain."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
    time.sleep(3)


def run_mode(port, setup, name, think, seconds, n, meter: CpuMeter) -> dict:
    campaign = setup["campaigns"][name + ("-think" if think else "")]
    settle()
    mode = "baseline" if name == "baseline" else "chained" if name.endswith("+next") else "unit"
    units0, judgements0 = counted(campaign["id"])
    deadline = time.monotonic() + seconds
    workers = [Annotator(port, setup["tokens"][i], campaign, mode, think, deadline, i) for i in range(n)]
    meter.start()
    start = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.monotonic() - start
    cpu = meter.stop()
    load = Path("/proc/loadavg").read_text().split()[0]
    units1, judgements1 = counted(campaign["id"])
    fetch = [ms for w in workers for ms in w.fetch_ms]
    submit = [ms for w in workers for ms in w.submit_ms]
    errors = [e for w in workers for e in w.errors]
    return {
        "name": name,
        "think": think,
        "mode": f"{name} ({MODE_LABELS[mode]}, think {think:g} s)",
        "fetch_p50": percentile(fetch, 50),
        "fetch_p95": percentile(fetch, 95),
        "submit_p50": percentile(submit, 50),
        "submit_p95": percentile(submit, 95),
        "units_per_s": (units1 - units0) / elapsed,
        "judgements_per_s": (judgements1 - judgements0) / elapsed,
        "requests_per_s": (len(fetch) + len(submit)) / elapsed,
        "load1": float(load),
        "cpu": cpu,
        "errors": errors[:3],
        "n_errors": len(errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--think", type=float, default=1.0, help="think time of the second round of modes")
    parser.add_argument("--items", type=int, default=800)
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="gunicorn worker processes (the README's production setting: one per core)",
    )
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument(
        "--protocols",
        default="likert,likert-spread,likert+next,rankme,pairwise,bws,esa",
        help="modes; PROTOCOL+next: each submit asks for the next unit too (one request per unit)",
    )
    parser.add_argument("--thinks", default="0,1", help="which think rounds to run: 0 (none), 1 (--think)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    protocols = args.protocols.split(",")

    url = _bench_database_url()
    print(f"setting up {urlparse(url).path.lstrip('/')} ...", file=sys.stderr)
    modes = {"baseline", *protocols, *(p.removesuffix("+next") for p in protocols)}  # + the query-count probes
    setup = setup_database(url, args.items, args.annotators, modes)
    queries = query_counts(setup, ["baseline", *(p for p in protocols if not p.endswith("+next"))])
    port = _free_port()
    # Connections kept for the whole run (production's default is 60 s, see the README): with the
    # default, backends would be replaced mid-mode and their CPU lost from the accounting.
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "workbench.settings.test",
        "DJANGO_LOG_LEVEL": "ERROR",
        "DJANGO_CONN_MAX_AGE": "3600",
    }
    server = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            "workbench.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(args.workers),
            "-k",
            "gthread",
            "--threads",
            str(args.threads),
            "--keep-alive",
            "30",
            "--log-level",
            "warning",
            "--backlog",
            "2048",
        ],
        cwd=ROOT,
        env=env,
    )
    meter = CpuMeter(server.pid, urlparse(url).path.lstrip("/"))
    results = []
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        # Warm every worker thread (imports, connections) before measuring.
        warm = Annotator(port, setup["tokens"][0], setup["campaigns"]["baseline"], "unit", 0, 0, 0)
        for _ in range(args.workers * args.threads * 3):
            warm.conn = None  # new connections spread over the workers
            warm.request(f"/api/campaigns/{setup['campaigns']['baseline']['id']}/", None, method="GET")
        for think in [args.think if t == "1" else 0.0 for t in args.thinks.split(",")]:
            for name in ["baseline", *protocols]:
                results.append(run_mode(port, setup, name, think, args.seconds, args.annotators, meter))
                print(f"  {results[-1]['mode']}: done", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(30)
    cores = os.cpu_count()
    print(
        f"{args.annotators} annotators, gunicorn {args.workers} workers x {args.threads} threads (gthread), "
        f"{args.seconds:g} s per mode, PostgreSQL, {cores} cores"
    )
    print(
        f"{'mode':50} {'fetch p50/p95 ms':>17} {'submit p50/p95 ms':>18} {'units/s':>8} {'judg./s':>8} "
        f"{'x base':>7} {'load':>5}  CPU s/s: gunicorn postgres generator other"
    )
    for r in results:
        base = next(b["judgements_per_s"] for b in results if b["name"] == "baseline" and b["think"] == r["think"])
        cpu = r["cpu"]
        print(
            f"{r['mode']:50} {r['fetch_p50']:7.1f}/{r['fetch_p95']:<7.1f}  {r['submit_p50']:8.1f}/"
            f"{r['submit_p95']:<8.1f} {r['units_per_s']:8.1f} {r['judgements_per_s']:8.1f} "
            f"{r['judgements_per_s'] / base if base else float('nan'):7.2f} {r['load1']:5.2f}  "
            f"{cpu['gunicorn']:.2f} {cpu['postgres']:.2f} {cpu['generator']:.2f} {cpu['other']:.2f}"
            + (f"  ERRORS {r['n_errors']}: {r['errors']}" if r["n_errors"] else "")
        )
    print(
        "SQL statements per request (BEGIN/COMMIT/SAVEPOINT not counted):",
        ", ".join(
            f"{p} fetch {q['fetch']} / submit {q['submit']} ({q['judgements']} judgements"
            f"{' in as many requests' if p == 'baseline' else ''})"
            for p, q in queries.items()
        ),
    )
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "queries": queries, "results": results}, indent=1))


if __name__ == "__main__":
    main()
