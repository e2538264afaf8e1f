"""Load benchmark: 50 annotators fetching and submitting units behind gunicorn on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/wt6 .venv/bin/python bench/bench_annotation.py

Creates a scratch database (`<name of DATABASE_URL>_bench`, dropped and made
again each run), a dataset of E2E-sized items with 5 systems, one campaign of
each protocol (k = 3), and 50 annotator accounts with API tokens; starts
gunicorn on a free loopback port; then each annotator (a thread with its own
keep-alive HTTP connection) loops: fetch a unit (`POST
/api/campaigns/{id}/next-assignment/`), think, submit it.

Modes, each run for `--seconds`:
- baseline: the old way, one judgement per request (`POST /api/judgements/ratings/`
  per output and criterion), no think time: the reference the others are
  compared with in the same run;
- unit, no think time: all judgements of a unit in one atomic request
  (`POST /api/assignments/{id}/submit/`), per protocol;
- unit, 1 s think time between fetching and submitting (Likert).

Prints p50 / p95 latency of fetch and submit, units and judgements stored per
second (counted in the database afterwards, complete judgements only), the
ratio to the baseline, and `uptime` (the machine may be shared: the load
average says how noisy the figures are).
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


def setup_database(url: str, n_items: int, n_annotators: int) -> dict:
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
    items = Item.objects.bulk_create([
        Item(dataset=dataset, external_id=f"e2e-{i}", position=i,
             data=[["The Eagle", "eatType", "coffee shop"], ["The Eagle", "area", "riverside"]])
        for i in range(n_items)])
    Reference.objects.bulk_create([Reference(item=item, position=0, text="The Eagle is a coffee shop by the river.")
                                   for item in items])
    Output.objects.bulk_create([
        Output(item=item, system=system, text=f"The Eagle is a coffee shop near the riverside ({system.name}).")
        for item in items for system in systems])
    common = {"criteria": ["informativeness", "naturalness", "quality"], "redundancy": 3, "seed": 1}
    campaigns = {
        "likert": campaign_create(dataset=dataset, name="likert", protocol="likert", scale_min=1, scale_max=6,
                                  **{**common, "criteria": ["fluency", "adequacy"]}),
        "rankme": campaign_create(dataset=dataset, name="rankme", protocol="rankme", tuple_size=5, **common),
        "pairwise": campaign_create(dataset=dataset, name="pairwise", protocol="pairwise", pair_rounds=1, **common),
        "bws": campaign_create(dataset=dataset, name="bws", protocol="bws", tuple_size=4, **common),
        "esa": campaign_create(dataset=dataset, name="esa", protocol="esa", **{**common, "criteria": ["quality"]}),
        "baseline": campaign_create(dataset=dataset, name="baseline", protocol="likert", scale_min=1, scale_max=6,
                                    **{**common, "criteria": ["fluency", "adequacy"]}),
        "think": campaign_create(dataset=dataset, name="think", protocol="likert", scale_min=1, scale_max=6,
                                 **{**common, "criteria": ["fluency", "adequacy"]}),
    }
    User = get_user_model()
    tokens = []
    for i in range(n_annotators):
        user = User.objects.create_user(username=f"bench-{i:02d}", password="x")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        tokens.append(Token.objects.create(user=user).key)
    return {"campaigns": {k: {"id": c.pk, "criteria": c.criteria, "protocol": c.protocol}
                          for k, c in campaigns.items()}, "tokens": tokens}


def answers_for(protocol: str, criteria: list[str], body: dict, rng: random.Random) -> list[dict]:
    outputs = [o["id"] for o in body["item"]["outputs"]]
    answers = []
    for criterion in criteria:
        if protocol in ("likert", "rankme", "esa"):
            for output in outputs:
                answer = {"criterion": criterion, "output": output,
                          "score": rng.randint(1, 6) if protocol == "likert" else rng.randint(1, 100)}
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
        try:
            while time.monotonic() < self.deadline:
                status, body, ms = self.request(f"/api/campaigns/{campaign}/next-assignment/")
                self.fetch_ms.append(ms)
                if status == 204:
                    return
                if status not in (200, 201):
                    self.errors.append(f"fetch {status} {body}")
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
                    status, data, ms = self.request(f"/api/assignments/{body['id']}/submit/", {
                        "judgements": answers, "shown_order": body["shown_order"], "time_spent_ms": 1000})
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
    from annotations.models import Assignment, Campaign
    from annotations.services.submissions import MODELS_BY_PROTOCOL

    campaign = Campaign.objects.get(pk=campaign_id)
    model = MODELS_BY_PROTOCOL[campaign.protocol]
    return (Assignment.objects.filter(campaign=campaign, status="done").count(),
            model.objects.filter(campaign=campaign, status="complete").count())


def run_mode(port, setup, name, mode, think, seconds, n) -> dict:
    campaign = setup["campaigns"][name]
    units0, judgements0 = counted(campaign["id"])
    deadline = time.monotonic() + seconds
    workers = [Annotator(port, setup["tokens"][i], campaign, mode, think, deadline, i) for i in range(n)]
    start = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.monotonic() - start
    units1, judgements1 = counted(campaign["id"])
    fetch = [ms for w in workers for ms in w.fetch_ms]
    submit = [ms for w in workers for ms in w.submit_ms]
    errors = [e for w in workers for e in w.errors]
    return {
        "mode": f"{name} ({'one judgement per request' if mode == 'baseline' else 'whole unit'}, "
                f"think {think:g} s)",
        "fetch_p50": percentile(fetch, 50), "fetch_p95": percentile(fetch, 95),
        "submit_p50": percentile(submit, 50), "submit_p95": percentile(submit, 95),
        "units_per_s": (units1 - units0) / elapsed, "judgements_per_s": (judgements1 - judgements0) / elapsed,
        "requests": len(fetch) + len(submit), "errors": errors[:3], "n_errors": len(errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--items", type=int, default=800)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--protocols", default="likert,rankme,pairwise,bws,esa")
    args = parser.parse_args()

    url = _bench_database_url()
    print(f"setting up {urlparse(url).path.lstrip('/')} ...", file=sys.stderr)
    setup = setup_database(url, args.items, args.annotators)
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "workbench.settings.test",
           "DJANGO_LOG_LEVEL": "ERROR"}
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "workbench.wsgi", "-b", f"127.0.0.1:{port}", "-w", str(args.workers),
         "-k", "gthread", "--threads", str(args.threads), "--keep-alive", "30", "--log-level", "warning"],
        cwd=ROOT, env=env)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        # Warm every worker (imports, connections) before measuring.
        warm = [Annotator(port, setup["tokens"][0], setup["campaigns"]["likert"], "unit", 0, 0, 0)]
        for _ in range(args.workers * args.threads * 2):
            warm[0].conn = None  # new connections spread over the workers
            warm[0].request(f"/api/campaigns/{setup['campaigns']['likert']['id']}/", None, method="GET")
        results = [run_mode(port, setup, "baseline", "baseline", 0, args.seconds, args.annotators)]
        for protocol in args.protocols.split(","):
            results.append(run_mode(port, setup, protocol, "unit", 0, args.seconds, args.annotators))
        results.append(run_mode(port, setup, "think", "unit", 1.0, args.seconds, args.annotators))
    finally:
        server.terminate()
        server.wait(30)
    base = results[0]["judgements_per_s"]
    print(f"{args.annotators} annotators, gunicorn {args.workers} workers x {args.threads} threads, "
          f"{args.seconds:g} s per mode, PostgreSQL")
    print(f"{'mode':58} {'fetch p50/p95 ms':>17} {'submit p50/p95 ms':>18} {'units/s':>8} {'judg./s':>8} "
          f"{'x base':>7}")
    for r in results:
        print(f"{r['mode']:58} {r['fetch_p50']:7.1f}/{r['fetch_p95']:<7.1f}  {r['submit_p50']:8.1f}/"
              f"{r['submit_p95']:<8.1f} {r['units_per_s']:8.1f} {r['judgements_per_s']:8.1f} "
              f"{r['judgements_per_s'] / base if base else float('nan'):7.2f}"
              + (f"  ERRORS {r['n_errors']}: {r['errors']}" if r["n_errors"] else ""))
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
