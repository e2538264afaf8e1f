"""Many crowd visitors arriving at once: where their Start waits (issue 45 part 3).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/h_cap REDIS_URL=redis://127.0.0.1:6379/13 \
        .venv/bin/python bench/bench_arrivals.py [--burst 100] [--spread 1] [--rounds 3]

`bench_capacity.py` found that its arriving visitors' Start (`POST /join/<token>/`) waited about a
second inside gunicorn while an in-process Start (`bench_cycle.py`) costs ~10-20 ms of CPU. This script
reproduces the arrivals alone: our server as `bench_capacity.py` starts it (production settings,
gunicorn 2 x 16 gthread, the Redis cache, a scratch database `<DATABASE_URL's name>_capacity`), and per
round a fresh campaign and join link, then `--burst` visitors arriving within `--spread` seconds, each
a real session (join page, Start, unit page, one submit), no think time. Per request kind: the client's
p50 / p95 and the time inside gunicorn (access log); and during the burst, what the database's backends
wait on (`pg_stat_activity.wait_event`, sampled every 20 ms: the share of samples of active backends
per event; `IO:WALSync` and `LWLock:WALWrite` are commits waiting for the WAL's fsync), and the
ungranted locks (`pg_locks`) and the statements that wait for one.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _servers import answer_scores, load_e2e, percentile  # noqa: E402 - bench/ is not a package
from bench_capacity import UNIT_CONFIG, AsyncHttp, OursServer, items_for  # noqa: E402 - bench/ is not a package

KINDS = ("join", "start", "unit-page", "submit")


class WaitSampler(threading.Thread):
    """What the database's backends wait on, sampled until stopped (its own connection)."""

    def __init__(self, dbname: str):
        super().__init__(daemon=True)
        self.dbname, self.stop_event = dbname, threading.Event()
        self.events: collections.Counter = collections.Counter()
        self.locks: collections.Counter = collections.Counter()
        self.waiting: collections.Counter = collections.Counter()  # the statements waiting for a lock
        self.samples = 0

    def run(self):
        from django.db import connections  # lazy: Django set up by OursServer

        with connections["default"].cursor() as cursor:
            while not self.stop_event.is_set():
                cursor.execute(
                    "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'), left(query, 60) "
                    "FROM pg_stat_activity WHERE datname = %s AND state = 'active' AND pid <> pg_backend_pid()",
                    [self.dbname],
                )
                for event, query in cursor.fetchall():
                    self.events[event] += 1
                    if event.startswith("Lock:"):
                        self.waiting[query] += 1
                cursor.execute(
                    "SELECT l.locktype || ' ' || l.mode || coalesce(' ' || c.relname, '') FROM pg_locks l "
                    "LEFT JOIN pg_class c ON c.oid = l.relation WHERE NOT l.granted"
                )
                self.locks.update(row[0] for row in cursor.fetchall())
                self.samples += 1
                self.stop_event.wait(0.02)
        connections["default"].close()


async def visitor(port: int, token: str, i: int, tag: str, spread: float, protocol: str, times: dict) -> None:
    rng = random.Random(i)
    address = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
    http = AsyncHttp(
        port, {"X-Forwarded-Proto": "https", "X-Forwarded-For": address, "Referer": f"https://127.0.0.1:{port}/"}
    )

    async def timed(kind, call):
        start = time.monotonic()
        out = await call
        times[kind].append((time.monotonic() - start) * 1000)
        return out

    try:
        await asyncio.sleep(rng.uniform(0, spread))
        params = {"PROLIFIC_PID": f"{tag}p{i}", "STUDY_ID": "arrivals", "SESSION_ID": f"{tag}s{i}"}
        join = f"/join/{token}/"
        status, _, data = await timed("join", http.request("GET", f"{join}?{urlencode(params)}"))
        assert status == 200, (status, data[:200])
        form = urlencode({**params, "csrfmiddlewaretoken": http.cookies.get("csrftoken", "")})
        status, headers, data = await timed(
            "start", http.request("POST", join, form, {"Content-Type": "application/x-www-form-urlencoded"})
        )
        assert status == 302, (status, data[:200])
        status, _, data = await timed("unit-page", http.request("GET", urlparse(headers["location"]).path))
        config = json.loads(UNIT_CONFIG.search(data).group(1))
        judgements = [
            {"criterion": criterion, "output": output["id"], "score": score}
            for output in config["outputs"]
            for criterion, score in answer_scores(protocol, rng).items()
        ]
        body = {"judgements": judgements, "shown_order": config["shown_order"], "time_spent_ms": 5000}
        status, _, data = await timed(
            "submit",
            http.request("POST", config["submit_url"], body, {"X-CSRFToken": http.cookies.get("csrftoken", "")}),
        )
        assert status == 201, (status, data[:200])
    finally:
        http.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--burst", type=int, default=100, help="visitors per round")
    parser.add_argument("--spread", type=float, default=1.0, help="seconds over which a round's visitors arrive")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    base = load_e2e(2000)  # before OursServer, whose settings replace WORKBENCH_SHARED_DATA
    server = OursServer(args.workers, args.threads, "likert")
    rows = []
    try:
        for r in range(args.rounds):
            tag = f"arr{r}-{int(time.time())}"
            step = server.step(tag, items_for(args.burst, base), args.burst)
            offset = server.access_offset()
            sampler = WaitSampler(server.dbname)
            sampler.start()
            times: dict[str, list[float]] = collections.defaultdict(list)

            async def burst():
                await asyncio.gather(
                    *(visitor(server.port, step.token, i, tag, args.spread, "likert", times) for i in range(args.burst))
                )

            began = time.monotonic()
            asyncio.run(burst())
            wall = time.monotonic() - began
            sampler.stop_event.set()
            sampler.join()
            inside = server.server_times(offset, server.access_offset())
            active = sum(sampler.events.values()) or 1
            row = {
                "round": r,
                "burst": args.burst,
                "spread_s": args.spread,
                "wall_s": wall,
                "client_ms": {k: (percentile(times[k], 50), percentile(times[k], 95)) for k in KINDS},
                "inside_ms": {k: (percentile(inside.get(k, []), 50), percentile(inside.get(k, []), 95)) for k in KINDS},
                "waits": {k: v / active for k, v in sampler.events.most_common(8)},
                "active_backends_mean": active / max(1, sampler.samples),
                "ungranted_locks": dict(sampler.locks.most_common(5)),
                "lock_waiters": dict(sampler.waiting.most_common(4)),
            }
            rows.append(row)
            print(f"round {r}: {args.burst} visitors within {args.spread:g} s, all done in {wall:.1f} s")
            for k in KINDS:
                c, s = row["client_ms"][k], row["inside_ms"][k]
                print(
                    f"  {k:9s} client p50 / p95 {c[0]:7.1f} / {c[1]:7.1f} ms; inside gunicorn {s[0]:7.1f} / {s[1]:7.1f}"
                )
            waits = ", ".join(f"{k} {100 * v:.0f} %" for k, v in row["waits"].items())
            print(f"  active backends {row['active_backends_mean']:.1f} on average, waiting on: {waits}")
            print(f"  ungranted locks (samples): {row['ungranted_locks'] or 'none'}")
            print(f"  statements waiting for a lock (samples): {row['lock_waiters'] or 'none'}")
    finally:
        server.close()
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
