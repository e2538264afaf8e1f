"""CPU and statements of one crowd annotator's request cycle, in-process (issue 45, CPU per annotator).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/h_cycle REDIS_URL=redis://127.0.0.1:6379/4 \
        .venv/bin/python bench/bench_cycle.py [--annotators 100] [--units 4] [--profile 40] [--before TREE]

What `bench_capacity.py`'s simulated annotators do, without gunicorn, sockets or think time: the WSGI
application (`workbench.wsgi`, production settings as `bench/_servers.py` sets them: no DEBUG,
HTTPS by X-Forwarded-Proto behind one trusted proxy, the Redis cache) is called directly with WSGI
environs, one annotator after another, each its own cookies and client address: the join link
(`GET /join/<token>/?PROLIFIC_PID=..`), Start (`POST`, 302), the unit page, then `--units` JSON
submits (each answer carries the next unit, as annotate.js draws it). Likert, 2 criteria, 3
annotators per output, a fresh campaign.

Two passes over fresh annotators: the first counts each request's statements (Django's
`CaptureQueriesContext`, which slows what it watches, so it is not timed); the second times each
request's CPU in this process (`time.process_time`: Django, the templates, the driver of the
database) and its wall time (CPU plus the waits for PostgreSQL: round trips, commits' WAL fsync) and the CPU its PostgreSQL backend used over the pass (/proc/<pid>/stat of
`pg_backend_pid()`, summed and divided by the requests; the clock ticks are 10 ms, so only the sum
over a pass means anything). `--profile N`: a third pass under cProfile, its top N functions by own
time and by cumulative time.

`--before TREE` (a `git worktree add` of an earlier commit, given this checkout's .venv): this
script runs on TREE's code and on this checkout's alternately, `--rounds` pairs, each on its own
scratch database, and prints both and the ratio after / before of CPU per annotator session.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

BENCH = Path(__file__).resolve().parent
TREE = Path(os.environ.get("BENCH_CYCLE_TREE", BENCH.parent)).resolve()
sys.path.insert(0, str(TREE))
sys.path.insert(1, str(BENCH))

from _servers import (  # noqa: E402 - bench/ on sys.path above
    adopt_settings,
    campaign_options,
    create_dataset,
    load_e2e,
    production_env,
    scratch_database,
    vacuum_analyze,
)

UNIT_CONFIG = re.compile(r'<script id="unit-config" type="application/json">(.*?)</script>', re.S)
KINDS = ("join", "start", "unit-page", "submit")
TICK = os.sysconf("SC_CLK_TCK")


class Browser:
    """One annotator's cookies and address; each request is one call of the WSGI application."""

    def __init__(self, application, address: str):
        self.app, self.address, self.cookies = application, address, {}

    def request(self, method: str, url: str, body: bytes = b"", content_type: str = "", headers=None):
        parts = urlsplit(url)
        environ = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "443",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_X_FORWARDED_PROTO": "https",
            "HTTP_X_FORWARDED_FOR": self.address,
            "HTTP_REFERER": "https://127.0.0.1/",
            "CONTENT_LENGTH": str(len(body)),
            "CONTENT_TYPE": content_type,
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
            "wsgi.version": (1, 0),
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        if self.cookies:
            environ["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        for name, value in (headers or {}).items():
            environ["HTTP_" + name.upper().replace("-", "_")] = value
        answer = {}

        def start_response(status, response_headers, exc_info=None):
            answer["status"], answer["headers"] = int(status.split()[0]), response_headers

        chunks = self.app(environ, start_response)
        data = b"".join(chunks)
        if hasattr(chunks, "close"):
            chunks.close()
        for name, value in answer["headers"]:
            if name.lower() == "set-cookie":
                for key, morsel in SimpleCookie(value).items():
                    self.cookies[key] = morsel.value
        location = next((v for k, v in answer["headers"] if k.lower() == "location"), "")
        return answer["status"], location, data.decode()


def session(application, token: str, tag: str, units: int, measure) -> None:
    """One annotator: join page, Start, unit page, `units` submits; `measure(kind, call)` wraps each."""
    browser = Browser(application, tag_address(tag))
    params = {"PROLIFIC_PID": f"p-{tag}", "STUDY_ID": "cycle", "SESSION_ID": f"s-{tag}"}
    join = f"/join/{token}/"
    status, _, page = measure("join", lambda: browser.request("GET", f"{join}?{urlencode(params)}"))
    assert status == 200, (status, page[:300])
    form = urlencode({**params, "csrfmiddlewaretoken": browser.cookies["csrftoken"]}).encode()
    status, location, page = measure(
        "start", lambda: browser.request("POST", join, form, "application/x-www-form-urlencoded")
    )
    assert status == 302, (status, page[:300])
    status, _, page = measure("unit-page", lambda: browser.request("GET", urlsplit(location).path))
    assert status == 200, (status, page[:300])
    config = json.loads(UNIT_CONFIG.search(page).group(1))
    for n in range(units):
        judgements = [
            {"criterion": c["name"] if isinstance(c, dict) else c, "output": o["id"], "score": 1 + (n + i) % 6}
            for o in config["outputs"]
            for i, c in enumerate(config["criteria"])
        ]
        body = json.dumps({"judgements": judgements, "shown_order": config["shown_order"], "time_spent_ms": 9000})
        status, _, answer = measure(
            "submit",
            lambda: browser.request(
                "POST",
                config["submit_url"],
                body.encode(),
                "application/json",
                {"X-CSRFToken": browser.cookies["csrftoken"]},
            ),
        )
        assert status == 201, (status, answer[:300])
        unit = json.loads(answer).get("unit")
        if not unit:
            raise SystemExit(f"bench_cycle: annotator {tag} ran out of units after {n + 1}")
        config = unit["config"]


def tag_address(tag: str) -> str:
    n = abs(hash(tag)) % (1 << 24)
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def measure_once(args) -> dict:
    base = load_e2e(2000)  # before adopt_settings, which replaces WORKBENCH_SHARED_DATA
    dbname, url = scratch_database("_cycle")
    static = TREE / "var" / "cycle-static"
    env = production_env(
        url,
        static,
        WORKBENCH_CACHE_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        WORKBENCH_TRUSTED_PROXIES="1",
    )
    python = str(BENCH.parent / ".venv/bin/python")
    steps = [["migrate", "--noinput", "-v0"]]
    if not (static / "staticfiles.json").exists():
        steps.append(["collectstatic", "--noinput", "-v0"])
    for step in steps:
        subprocess.run([python, "manage.py", *step], cwd=TREE, env=env, check=True, stdout=sys.stderr)
    adopt_settings(env)

    from django.db import connection  # lazy: Django set up by adopt_settings
    from django.test.utils import CaptureQueriesContext  # lazy: as above

    from annotations.models import Project  # lazy: as above
    from annotations.services.campaigns import campaign_create  # lazy: as above
    from annotations.studies.services import join_link_create  # lazy: as above
    from workbench.wsgi import application  # lazy: as above

    passes = 2 + (1 if args.profile else 0)
    sessions = args.warmup + args.count_sessions + args.annotators * (passes - 1)
    want, items, total, copy = sessions * (args.units + 1) + 20, [], 0, 0
    while total < want:
        for item in base:
            items.append({**item, "id": f"{item['id']}-c{copy}"})
            total += len(item["outputs"])
            if total >= want:
                break
        copy += 1
    project, _ = Project.objects.get_or_create(name="bench-cycle")
    campaign = campaign_create(
        dataset=create_dataset(project, "cycle", items),
        name="cycle",
        redundancy=3,
        seed=1,
        units_per_batch=1000,
        plan="sync",
        **campaign_options("likert"),
    )
    token = join_link_create(campaign=campaign).token
    vacuum_analyze()
    connection.close()

    counter = iter(range(10**9))

    def run(n: int, measure) -> None:
        for _ in range(n):
            session(application, token, f"a{next(counter)}", args.units, measure)

    run(args.warmup, lambda kind, call: call())  # first requests: imports, templates, prepared statements

    statements: dict[str, list[int]] = defaultdict(list)
    shown: list[str] = []

    def count(kind, call):
        with CaptureQueriesContext(connection) as captured:
            out = call()
        statements[kind].append(len(captured))
        shown.append(f"-- {kind}: {len(captured)} statements")
        shown.extend(f"   {q['sql'][: args.show_sql]}" for q in captured.captured_queries)
        return out

    run(args.count_sessions, count)
    if args.show_sql:
        print("\n".join(shown[-len(shown) // args.count_sessions :]), file=sys.stderr)

    cpu: dict[str, list[float]] = defaultdict(list)
    wall_ms: dict[str, list[float]] = defaultdict(list)

    def timed(kind, call):
        start, clock = time.process_time(), time.perf_counter()
        out = call()
        cpu[kind].append(time.process_time() - start)
        wall_ms[kind].append(1000 * (time.perf_counter() - clock))
        return out

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    wall, pg_before = time.perf_counter(), backend_cpu(pid)
    run(args.annotators, timed)
    pg_cpu, wall = backend_cpu(pid) - pg_before, time.perf_counter() - wall

    profile_text = ""
    if args.profile:
        profiler = cProfile.Profile(time.process_time)  # CPU, not the waits for PostgreSQL

        def profiled(kind, call):
            if args.profile_kind and kind != args.profile_kind:
                return call()
            profiler.enable()
            try:
                return call()
            finally:
                profiler.disable()

        run(args.annotators, profiled)
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.sort_stats("cumulative").print_stats(args.profile)
        profile_text = out.getvalue()

    requests = sum(len(v) for v in cpu.values())
    return {
        "tree": str(TREE),
        "annotators": args.annotators,
        "units": args.units,
        "statements": {k: statistics.mean(statements[k]) for k in KINDS},
        "statements_max": {k: max(statements[k]) for k in KINDS},
        "cpu_ms": {k: 1000 * statistics.mean(cpu[k]) for k in KINDS},
        "cpu_ms_median": {k: 1000 * statistics.median(cpu[k]) for k in KINDS},
        "wall_ms_median": {k: statistics.median(wall_ms[k]) for k in KINDS},
        "python_ms_per_session": 1000 * sum(sum(v) for v in cpu.values()) / args.annotators,
        "postgres_ms_per_session": 1000 * pg_cpu / args.annotators,
        "postgres_ms_per_request": 1000 * pg_cpu / requests,
        "wall_s": wall,
        "load": os.getloadavg(),
        "profile": profile_text,
    }


def report(result: dict) -> None:
    print(
        f"code: {result['tree']}; {result['annotators']} annotators x (join, Start, unit page, {result['units']} submits)"
    )
    print("| request | statements (mean / max) | CPU ms in the web process (mean / median) | wall ms (median) |")
    print("| --- | ---: | ---: | ---: |")
    for kind in KINDS:
        print(
            f"| {kind} | {result['statements'][kind]:.1f} / {result['statements_max'][kind]} | "
            f"{result['cpu_ms'][kind]:.2f} / {result['cpu_ms_median'][kind]:.2f} | "
            f"{result.get('wall_ms_median', {}).get(kind, float('nan')):.2f} |"
        )
    total = result["python_ms_per_session"] + result["postgres_ms_per_session"]
    print(
        f"per annotator session: web process {result['python_ms_per_session']:.1f} ms + PostgreSQL "
        f"{result['postgres_ms_per_session']:.1f} ms = {total:.1f} ms CPU "
        f"(wall {result['wall_s']:.1f} s, load average {result['load'][0]:.1f})"
    )
    if result["profile"]:
        print(result["profile"])


def compare(args, extra: list[str]) -> None:
    trees = {"before": Path(args.before).resolve(), "after": BENCH.parent}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            venv = tree / ".venv"
            if not venv.exists():
                venv.symlink_to(BENCH.parent / ".venv")
            env = {**os.environ, "BENCH_CYCLE_TREE": str(tree)}
            out = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--json-line", *extra],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            runs[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    for label, results in runs.items():
        print(f"## {label}")
        report(results[-1])

    def session_ms(r: dict) -> float:
        return r["python_ms_per_session"] + r["postgres_ms_per_session"]

    rows = [
        ("web process ms / session", lambda r: r["python_ms_per_session"]),
        ("PostgreSQL ms / session", lambda r: r["postgres_ms_per_session"]),
        ("total CPU ms / session", session_ms),
        *[(f"{k} statements", lambda r, k=k: r["statements"][k]) for k in KINDS],
        *[(f"{k} web CPU ms", lambda r, k=k: r["cpu_ms"][k]) for k in KINDS],
        # Wall time, one request at a time: CPU plus the waits for PostgreSQL (round trips, commits' fsync).
        *[(f"{k} wall ms (median)", lambda r, k=k: r["wall_ms_median"][k]) for k in KINDS],
    ]
    print(f"\n{args.rounds} rounds, before and after alternately; median over rounds")
    print("| figure | before | after | after / before |")
    print("| --- | ---: | ---: | ---: |")
    for name, get in rows:
        b = statistics.median(get(r) for r in runs["before"])
        a = statistics.median(get(r) for r in runs["after"])
        print(f"| {name} | {b:.2f} | {a:.2f} | {a / b if b else float('nan'):.2f} |")
    loads = [r["load"][0] for rs in runs.values() for r in rs]
    print(f"load average during the runs: {min(loads):.1f}-{max(loads):.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--annotators", type=int, default=100, help="annotator sessions timed (and profiled)")
    parser.add_argument("--units", type=int, default=4, help="submits per annotator session")
    parser.add_argument("--warmup", type=int, default=5, help="sessions before anything is measured")
    parser.add_argument("--count-sessions", type=int, default=5, help="sessions whose statements are counted")
    parser.add_argument("--profile", type=int, default=0, help="a cProfile pass: its top N functions")
    parser.add_argument("--profile-kind", choices=KINDS, help="profile this kind of request only")
    parser.add_argument("--show-sql", type=int, default=0, help="print the last counted session's statements (N chars)")
    parser.add_argument("--before", help="an earlier checkout to compare with (alternately, --rounds pairs)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json-line", action="store_true", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.before:
        passed = [a for a in sys.argv[1:] if a not in ("--before", args.before)]
        passed = [a for i, a in enumerate(passed) if not (a == "--rounds" or (i and passed[i - 1] == "--rounds"))]
        compare(args, passed)
        return
    result = measure_once(args)
    if args.json_line:
        print(json.dumps(result))
    else:
        report(result)


if __name__ == "__main__":
    main()
