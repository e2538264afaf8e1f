"""How many annotators one small server holds at a realistic pace, side by side with Pearmut (issue 45 part 3).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/h_cap .venv/bin/python bench/bench_capacity.py \
        [--steps 100,200,400,700,1000,1500,2000,3000] [--window 60] [--think-scale 1] [--tools ours,pearmut]

What it does:
- N simulated annotators, each an asyncio task with its own keep-alive connection, cookies and
  client address (X-Forwarded-For behind one trusted proxy, as the TLS proxy of the production
  set-up sends it, so that per-address limits see N addresses), each a real crowd session:
  - ours: opens the study's join link (`GET /join/<token>/?PROLIFIC_PID=..`), presses Start
    (`POST /join/<token>/`: the participant, the session, the first unit; 302), loads the unit page
    (`GET /annotate/campaigns/<id>/unit/`), then per unit thinks and submits (`POST
    /annotate/assignments/<id>/submit/`, JSON, as static/js/annotate.js: the answer carries the next
    unit, which the page draws in place);
  - Pearmut: opens its annotator page (`GET /annotate?campaign_id=..&user_id=..`), then per unit
    `POST /get-next-item`, thinks, `POST /log-response` (what its static page sends).
- think times: uniform 5-30 s per unit. No data set in `../shared/data` (SOURCES.md) records
  per-judgement durations (the E2E, HATS, RankME, ASSET, WMT MQM files carry scores only), so the
  issue's fallback range is used. `--think-scale S` multiplies every think time (and the arrival
  spread) by S to compress a run: the load per annotator grows by 1/S, so N annotators at S = 0.1
  are roughly 10 N annotators at full pace in requests/s, but with a tenth of the open connections
  and sessions. The figure to report is the one at `--think-scale 1` (full pace).
- the annotators of a step arrive spread uniformly over one maximum think time, then a window of
  `--window` seconds (60) is measured: every request that ends in it counts (latency from the
  first byte sent, connecting included, to the last byte read). A step holds when p95 <= 200 ms
  and no request failed; the ramp stops at the first step that does not hold.
- every step gets a fresh campaign (Likert, 2 criteria, 3 annotators per output, E2E NLG outputs
  repeated to 2.5 outputs per annotator, enough that nobody runs out in the window) and a fresh
  join link; Pearmut a fresh campaign (task-based: each output in 3 annotators' lists) and a fresh
  server (`pearmut run`, as its README starts it). Our server starts once and serves every step, as
  a deployment would.
- per step: N, requests/s and units/s, p50/p95/p99 ms, errors, CPU % (100 = one core) and RSS of
  the server processes (gunicorn master + workers / uvicorn) and of the PostgreSQL backends of our
  database (psutil, CPU between the window's ends), the load generator's own CPU, the machine's CPU
  %, the open connections to the server, and where the first limit is: "connections" (refused,
  reset or timed-out connections), "CPU: the machine" (machine CPU >= 90 %: the server's and
  PostgreSQL's shares say whose), else "workers" (requests queue for gunicorn's threads while CPU
  is left).

Our server is gunicorn as docs/how-to/scaling-out.md starts it (`-k gthread --workers 2 --threads 16
--keep-alive 30 --timeout 60` on this 2-core machine), production settings (no DEBUG, HTTPS marked
by X-Forwarded-Proto, the Redis cache `WORKBENCH_CACHE_URL` the guide asks for, `DJANGO_CONN_MAX_AGE`
at its default), on a scratch database `<DATABASE_URL's name>_capacity` (dropped and made again).
`--workers N --threads M`: other numbers. Pearmut is installed by bench_peers.py's code (PyPI
`pearmut` into `var/peers/pearmut`, Python 3.12 from pyenv).

Where a request's time goes: gunicorn writes each request's time inside it (access log, `%(D)s`:
from the parsed request to the response sent) and every kind of request gets its p50/p95 there
beside the client's; the difference is the wait for a free thread (gthread's queue), connecting,
and the load generator itself.

The load generator shares the machine with the servers (and PostgreSQL): its CPU is reported with
every step, and its event loop's lag (how late a 50 ms sleep wakes, p95 and max) shows whether it
was itself starved; during a step it runs at nice `--client-nice` (-10; the servers keep 0) so that
a long run queue on a shared machine delays the servers, not the clock that times them. One
process is enough: it used 1-6 % of a core for 400 annotators. `--arrival-rate R`: the annotators
of a step arrive over max(30 s, N / R) seconds instead of 30 s (1,000 joins in 30 s is 33 join
pages, Starts and unit pages a second, a burst of its own; the steady state is what the window
measures). `--quick`: think scale 0.05, 10 s windows, 20 and 50 annotators (a smoke test).
`--json FILE` (default `bench/out/capacity-<time>.json`) gets every step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode, urlparse

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _servers import (  # noqa: E402 - bench/ is not a package
    adopt_settings,
    answer_scores,
    backend_pids,
    campaign_options,
    complete_judgements,
    create_dataset,
    free_port,
    gunicorn,
    load_e2e,
    manage,
    percentile,
    production_env,
    scratch_database,
    vacuum_analyze,
)
from bench_peers import Pearmut  # noqa: E402 - bench/ is not a package

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "var" / "capacity"
OUT = ROOT / "bench" / "out"
THINK = (5.0, 30.0)  # seconds, uniform (no per-judgement durations in ../shared/data)
P95_LIMIT_MS = 200.0
UNIT_CONFIG = re.compile(rb'<script id="unit-config" type="application/json">(.*?)</script>', re.S)
CONNECTION_ERRORS = (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError, OSError)


# --- a small asyncio HTTP/1.1 client: one keep-alive connection and its cookies per annotator ------


class AsyncHttp:
    def __init__(self, port: int, headers: dict):
        self.port, self.headers, self.cookies = port, headers, {}
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body=None, headers: dict | None = None):
        """(status, headers with lower-case names, body bytes); dict bodies as JSON; cookies kept."""
        all_headers = {"Host": f"127.0.0.1:{self.port}", **self.headers, **(headers or {})}
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        body = body or b""
        if body or method == "POST":
            all_headers["Content-Length"] = str(len(body))
        if self.cookies:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in all_headers.items()) + "\r\n"
        for attempt in range(2):
            reused = self.writer is not None
            try:
                if self.writer is None:
                    self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
                self.writer.write(head.encode() + body)
                await self.writer.drain()
                status, response_headers, data = await asyncio.wait_for(self._response(method), 60)
                break
            except CONNECTION_ERRORS:
                self.close()
                if attempt or not reused:  # a fresh connection that fails is an error; a stale one is retried
                    raise
        for value in response_headers.get("set-cookie", []):
            key, _, rest = value.partition("=")
            self.cookies[key.strip()] = rest.split(";", 1)[0]
        if response_headers.get("connection", [""])[-1].lower() == "close":
            self.close()
        return status, {k: v[-1] for k, v in response_headers.items()}, data

    async def _response(self, method: str):
        line = await self.reader.readline()
        if not line:
            raise ConnectionResetError("connection closed before the answer")
        status = int(line.split()[1])
        headers: dict[str, list[str]] = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers.setdefault(name.strip().lower(), []).append(value.strip())
        if method == "HEAD" or status in (204, 304):
            return status, headers, b""
        if "chunked" in headers.get("transfer-encoding", [""])[-1].lower():
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            return status, headers, b"".join(parts)
        if "content-length" in headers:
            return status, headers, await self.reader.readexactly(int(headers["content-length"][-1]))
        data = await self.reader.read()
        self.close()
        return status, headers, data

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Recorder:
    """Every request's end time, latency and outcome; and what failed."""

    def __init__(self):
        self.done: list[tuple[float, float, str]] = []  # (monotonic end, ms, kind)
        self.errors: list[tuple[float, str, str]] = []  # (monotonic, kind, message)
        self.units = 0
        self.unit_times: list[float] = []

    async def timed(self, kind: str, coroutine):
        start = time.monotonic()
        try:
            result = await coroutine
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - counted and reported
            self.errors.append((time.monotonic(), kind, f"{type(exc).__name__}: {exc}"[:200]))
            raise
        end = time.monotonic()
        self.done.append((end, (end - start) * 1000, kind))
        return result

    def fail(self, kind: str, message: str):
        self.errors.append((time.monotonic(), kind, message[:200]))
        raise RuntimeError(message)


def think_time(rng: random.Random, scale: float) -> float:
    return rng.uniform(*THINK) * scale


# --- ours --------------------------------------------------------------------------------------


class OursServer:
    """The scratch database and one gunicorn started as the production guide says."""

    label = "ours"

    def __init__(self, workers: int, threads: int, protocol: str, fresh_static: bool = False, reuse_db: bool = False):
        self.workers, self.threads, self.protocol = workers, threads, protocol
        self.dbname, self.url = scratch_database("_capacity", reuse=reuse_db)
        self.env = production_env(
            self.url,
            VAR / "static",
            WORKBENCH_CACHE_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),  # the guide's shared cache
            WORKBENCH_TRUSTED_PROXIES="1",  # behind the TLS proxy, which appends the client's address
        )
        VAR.mkdir(parents=True, exist_ok=True)
        steps = [["migrate", "--noinput", "-v0"], ["collectstatic", "--noinput", "-v0"]]
        if (VAR / "static" / "staticfiles.json").exists() and not fresh_static:
            steps.pop()  # collected by an earlier run (--collectstatic to collect again)
        manage(self.env, *steps)
        adopt_settings(self.env)
        from annotations.models import Project  # lazy: Django is set up just above

        self.project, _ = Project.objects.get_or_create(name="bench-capacity")
        self.port = free_port()
        self.log = open(VAR / "gunicorn.log", "w")
        self.server = gunicorn(
            self.port, workers=workers, threads=threads, env=self.env, log=self.log, access_log=VAR / "access.log"
        )
        wait_port(self.port, self.server)

    def step(self, run: str, items: list[dict], n: int) -> "OursStep":
        from annotations.services.campaigns import campaign_create  # lazy: Django set up in __init__
        from annotations.studies.services import join_link_create  # lazy: Django set up in __init__

        dataset = create_dataset(self.project, run, items)
        campaign = campaign_create(
            dataset=dataset,
            name=run,
            redundancy=3,
            seed=1,
            units_per_batch=1000,
            plan="sync",
            **campaign_options(self.protocol),
        )
        link = join_link_create(campaign=campaign)
        vacuum_analyze()
        warm_up(self.port, f"/join/{link.token}/", {"X-Forwarded-Proto": "https"}, self.server)
        return OursStep(self, campaign.pk, link.token)

    def pids(self) -> list[int]:
        return tree(self.server.pid)

    def access_offset(self) -> int:
        try:
            return (VAR / "access.log").stat().st_size
        except OSError:
            return 0

    def server_times(self, start: int, end: int) -> dict[str, list[float]]:
        """Milliseconds inside gunicorn by request kind, from the access log's lines between two offsets."""
        out: dict[str, list[float]] = {}
        with open(VAR / "access.log", "rb") as log:
            log.seek(start)
            for line in log.read(end - start).decode("latin-1").splitlines():
                parts = line.split()
                if len(parts) != 4 or not parts[3].isdigit():
                    continue
                method, path = parts[0], parts[1]
                kind = (
                    ("join" if method == "GET" else "start")
                    if path.startswith("/join/")
                    else "submit"
                    if path.endswith("/submit/")
                    else "unit-page"
                    if path.endswith("/unit/")
                    else "other"
                )
                out.setdefault(kind, []).append(int(parts[3]) / 1000)
        return out

    def database_pids(self) -> list[int]:
        return backend_pids(self.dbname)

    def stored(self, campaign_id: int) -> int:
        return complete_judgements(campaign_id)

    def close(self):
        stop_process(self.server)
        self.log.close()


class OursStep:
    def __init__(self, server: OursServer, campaign: int, token: str):
        self.server, self.campaign, self.token = server, campaign, token

    def stop(self):
        pass

    async def annotator(self, i: int, rng: random.Random, scale: float, rec: Recorder, tag: str, arrival: float):
        port = self.server.port
        address = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
        http = AsyncHttp(
            port,
            {"X-Forwarded-Proto": "https", "X-Forwarded-For": address, "Referer": f"https://127.0.0.1:{port}/"},
        )
        try:
            await asyncio.sleep(rng.uniform(0, arrival))  # arrivals spread uniformly over `arrival` seconds
            params = {"PROLIFIC_PID": f"{tag}p{i}", "STUDY_ID": "capacity", "SESSION_ID": f"{tag}s{i}"}
            join = f"/join/{self.token}/"
            status, _, data = await rec.timed("join", http.request("GET", f"{join}?{urlencode(params)}"))
            if status != 200:
                rec.fail("join", f"join page {status} {data[:120]!r}")
            form = urlencode({**params, "csrfmiddlewaretoken": http.cookies.get("csrftoken", "")})
            status, headers, data = await rec.timed(
                "start", http.request("POST", join, form, {"Content-Type": "application/x-www-form-urlencoded"})
            )
            if status != 302:
                rec.fail("start", f"start {status} {data[:120]!r}")
            status, _, data = await rec.timed("unit-page", http.request("GET", urlparse(headers["location"]).path))
            match = UNIT_CONFIG.search(data)
            if status != 200 or not match:
                rec.fail("unit-page", f"unit page {status} {data[:120]!r}")
            config = json.loads(match.group(1))
            while config:
                await asyncio.sleep(think_time(rng, scale))
                judgements = [
                    {"criterion": criterion, "output": output["id"], "score": score}
                    for output in config["outputs"]
                    for criterion, score in answer_scores(self.server.protocol, rng).items()
                ]
                ms = int(1000 * THINK[0])
                status, _, data = await rec.timed(
                    "submit",
                    http.request(
                        "POST",
                        config["submit_url"],
                        {"judgements": judgements, "shown_order": config["shown_order"], "time_spent_ms": ms},
                        {"X-CSRFToken": http.cookies.get("csrftoken", "")},
                    ),
                )
                if status != 201:
                    rec.fail("submit", f"submit {status} {data[:120]!r}")
                rec.units += 1
                rec.unit_times.append(time.monotonic())
                unit = json.loads(data).get("unit")
                config = unit["config"] if unit else None
        except (asyncio.CancelledError, RuntimeError):
            pass
        except Exception:  # noqa: BLE001 - already in rec.errors
            pass
        finally:
            http.close()


# --- Pearmut ------------------------------------------------------------------------------------


class PearmutServer:
    """Pearmut from bench_peers.py: a fresh campaign and a fresh `pearmut run` per step."""

    label = "pearmut"

    def __init__(self, protocol: str):
        self.protocol = protocol
        self.tool = Pearmut()
        self.tool_server = None

    def step(self, run: str, items: list[dict], n: int) -> "PearmutStep":
        outputs = [
            {"id": f"{it['id']}-{o['system']}", "mr": it["mr"], "text": o["text"]}
            for it in items
            for o in it["outputs"]
        ]
        import bench_peers  # lazy: only for its run folder

        (bench_peers.VAR / "runs").mkdir(parents=True, exist_ok=True)
        self.tool.start(self.protocol, run, outputs, n)
        wait_port(self.tool.port, self.tool.server)
        page = f"/annotate?campaign_id={quote(self.tool.campaign_id)}&user_id={self.tool.users[0]}"
        warm_up(self.tool.port, page, {}, self.tool.server)
        return PearmutStep(self)

    def pids(self) -> list[int]:
        return tree(self.tool.server.pid)

    def database_pids(self) -> list[int]:
        return []

    def close(self):
        pass


class PearmutStep:
    def __init__(self, server: PearmutServer):
        self.server, self.tool = server, server.tool

    def stop(self):
        self.tool.stop()

    async def annotator(self, i: int, rng: random.Random, scale: float, rec: Recorder, tag: str, arrival: float):
        tool, user = self.tool, self.tool.users[i]
        http = AsyncHttp(tool.port, {"X-Forwarded-For": f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"})
        try:
            await asyncio.sleep(rng.uniform(0, arrival))
            page = f"/annotate?campaign_id={quote(tool.campaign_id)}&user_id={user}"
            status, _, data = await rec.timed("page", http.request("GET", page))
            if status != 200:
                rec.fail("page", f"annotate page {status}")
            while True:
                status, _, data = await rec.timed(
                    "get-next-item",
                    http.request("POST", "/get-next-item", {"campaign_id": tool.campaign_id, "user_id": user}),
                )
                if status != 200:
                    rec.fail("get-next-item", f"get-next-item {status} {data[:120]!r}")
                unit = json.loads(data)
                if unit.get("status") == "goodbye":
                    return
                await asyncio.sleep(think_time(rng, scale))
                annotation = []
                for item in unit["payload"]:
                    responses = {}
                    for model in item["tgt"]:
                        scores = answer_scores(self.server.protocol, rng)
                        if self.server.protocol == "likert":
                            responses[model] = {"score": None, "sliders": scores, "error_spans": [], "textfield": None}
                        else:
                            responses[model] = {"score": scores["quality"], "error_spans": [], "textfield": None}
                    annotation.append(responses)
                now = time.time()
                payload = {
                    "annotation": annotation,
                    "item": unit["payload"],
                    "actions": [{"time": now - THINK[0], "action": "load"}, {"time": now, "action": "submit"}],
                }
                body = {
                    "campaign_id": tool.campaign_id,
                    "user_id": user,
                    "item_i": unit["info"]["item_i"],
                    "payload": payload,
                }
                status, _, data = await rec.timed("log-response", http.request("POST", "/log-response", body))
                if status != 200:
                    rec.fail("log-response", f"log-response {status} {data[:120]!r}")
                rec.units += 1
                rec.unit_times.append(time.monotonic())
        except (asyncio.CancelledError, RuntimeError):
            pass
        except Exception:  # noqa: BLE001 - already in rec.errors
            pass
        finally:
            http.close()


# --- processes -------------------------------------------------------------------------------


def tree(pid: int) -> list[int]:
    try:
        root = psutil.Process(pid)
        return [root.pid] + [c.pid for c in root.children(recursive=True)]
    except psutil.Error:
        return []


def cpu_of(pids: list[int]) -> dict[int, float]:
    out = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            out[pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


def rss_of(pids: list[int]) -> dict[int, int]:
    out = {}
    for pid in pids:
        try:
            out[pid] = psutil.Process(pid).memory_info().rss
        except psutil.Error:
            pass
    return out


def warm_up(port: int, path: str, headers: dict, process: subprocess.Popen, limit: float = 300) -> None:
    """Until `path` answers 200, then 32 more requests on fresh connections: every worker process and
    thread past its first request (gunicorn's workers import the application after the port opens)."""
    import http.client  # lazy: only here

    deadline, answered = time.monotonic() + limit, 0
    while answered < 32:
        if process.poll() is not None:
            sys.exit(f"bench_capacity: the server on port {port} exited (see its log)")
        if time.monotonic() > deadline:
            sys.exit(f"bench_capacity: {path} did not answer 200 within {limit:g} s")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            # From addresses of their own (192.0.2.0/24): the join link's per-address rate stays untouched.
            address = f"192.0.2.{answered % 250 + 1}"
            conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}", "X-Forwarded-For": address, **headers})
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                answered += 1
            else:
                time.sleep(0.5)
        except OSError:
            time.sleep(0.5)
        finally:
            conn.close()


def wait_port(port: int, process: subprocess.Popen, limit: float = 180):
    import socket  # lazy: only here

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"bench_capacity: the server on port {port} exited during start-up (see its log)")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    sys.exit(f"bench_capacity: nothing listens on port {port} after {limit:g} s")


def stop_process(process: subprocess.Popen):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


class RssPeak(threading.Thread):
    """The peak of the server tree's summed RSS and of its largest process, sampled every second."""

    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids, self.peak, self.peak_one = pids, 0, 0
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            rss = rss_of(self.pids())
            if rss:
                self.peak, self.peak_one = max(self.peak, sum(rss.values())), max(self.peak_one, max(rss.values()))
            self.stop_event.wait(1)


class Renice(threading.Thread):
    """`--server-nice`: every second, every thread of the server's processes and its PostgreSQL
    backends gets nice `nice` (new backends, workers and threads included), a stand-in on a shared machine for a server that has
    the machine to itself (the other processes get what it leaves). Root is needed below 0."""

    def __init__(self, server, nice: int):
        super().__init__(daemon=True)
        self.server, self.nice, self.failed = server, nice, ""
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            try:
                pids = self.server.pids() + self.server.database_pids()
            except Exception as exc:  # noqa: BLE001 - reported in the row
                self.failed, pids = f"{type(exc).__name__}: {exc}", []
            for pid in pids:
                try:  # every thread: on Linux a nice value is a thread's (gthread's request threads included)
                    for thread in psutil.Process(pid).threads():
                        if os.getpriority(os.PRIO_PROCESS, thread.id) != self.nice:
                            os.setpriority(os.PRIO_PROCESS, thread.id, self.nice)
                except (psutil.Error, OSError) as exc:
                    self.failed = f"{type(exc).__name__}: {exc}"
            self.stop_event.wait(1)


def connections_to(port: int) -> int:
    try:
        return sum(
            1
            for c in psutil.net_connections(kind="tcp")
            if c.laddr and c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED
        )
    except psutil.Error:
        return -1


# --- one step -----------------------------------------------------------------------------------


def items_for(n: int, base: list[dict], per_annotator: float = 2.5) -> list[dict]:
    """E2E items (their outputs) repeated until there are n * per_annotator outputs, each copy its own item."""
    want, items, total, copy = int(n * per_annotator) + 10, [], 0, 0
    while total < want:
        for item in base:
            outputs = item["outputs"][: max(1, min(len(item["outputs"]), want - total))]
            items.append({**item, "id": f"{item['id']}-c{copy}", "outputs": outputs})
            total += len(outputs)
            if total >= want:
                break
        copy += 1
    return items


def snapshot(server) -> tuple:
    """CPU seconds of the server's processes and of its database backends, and the load generator's
    (in a thread: Django's database calls are not made from the event loop)."""
    return cpu_of(server.pids()), cpu_of(server.database_pids()), psutil.Process().cpu_times()


async def with_priority(coroutine, nice: int):
    """Runs the annotators with this thread's nice value at `nice` (the servers, started before, keep
    theirs): on a machine whose run queue is long, a starved load generator would add its own delays
    to every latency. Root (or CAP_SYS_NICE) is needed below 0; otherwise it runs unchanged."""
    tid = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, tid)
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        pass
    try:
        return await coroutine
    finally:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, before)
        except OSError:
            pass


def arrival_seconds(n: int, scale: float, rate: float | None) -> float:
    """The arrivals' spread: one longest think time, or n / rate seconds if longer (`--arrival-rate`)."""
    return max(THINK[1] * scale, n / rate) if rate else THINK[1] * scale


def run_step(
    server,
    base_items,
    n: int,
    scale: float,
    window: float,
    seed: int,
    rate: float | None = None,
    nice: int = 0,
    server_nice: int = 0,
) -> dict:
    arrival = arrival_seconds(n, scale, rate)
    tag = f"{server.label}-n{n}-{int(time.time())}"
    items = items_for(n, base_items)
    step = server.step(tag, items, n)
    peak = RssPeak(server.pids)
    peak.start()
    renice = Renice(server, server_nice) if server_nice else None
    if renice:
        renice.start()
    marks: dict = {}

    async def lag_monitor(lags: list):
        """How late the event loop wakes a 50 ms sleep: a busy load generator shows here first."""
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.05)
            lags.append((time.monotonic(), (time.monotonic() - before - 0.05) * 1000))

    async def main():
        rec = Recorder()
        start = time.monotonic()
        lags: list = []
        monitor = asyncio.create_task(lag_monitor(lags))
        tasks = [
            asyncio.create_task(step.annotator(i, random.Random(seed * 100_003 + i), scale, rec, tag, arrival))
            for i in range(n)
        ]
        await asyncio.sleep(arrival)  # the arrivals
        marks["start"] = time.monotonic()
        marks["cpu0"] = await asyncio.to_thread(snapshot, server)
        marks["log0"] = server.access_offset() if isinstance(server, OursServer) else 0
        psutil.cpu_percent(None)
        await asyncio.sleep(window / 2)
        # In a thread: scanning the machine's sockets would stall every annotator's event loop.
        marks["connections"] = await asyncio.to_thread(connections_to, step_port(server))
        await asyncio.sleep(window / 2)
        marks["end"] = time.monotonic()
        marks["machine_cpu"] = psutil.cpu_percent(None) * psutil.cpu_count()
        marks["cpu1"] = await asyncio.to_thread(snapshot, server)
        marks["log1"] = server.access_offset() if isinstance(server, OursServer) else 0
        marks["lags"] = [ms for t, ms in lags if marks["start"] <= t <= marks["end"]]
        monitor.cancel()
        marks["db_rss"] = sum(rss_of(marks["cpu1"][1]).values())
        marks["loadavg"] = os.getloadavg()[0]
        pending = set(tasks)
        while pending:  # again until every one ends: Python 3.11's wait_for can swallow a cancel
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=5)
        marks["arrivals_s"] = marks["start"] - start
        return rec

    rec = asyncio.run(with_priority(main(), nice))
    peak.stop_event.set()
    peak.join()
    if renice:
        renice.stop_event.set()
        renice.join()
    stored = server.stored(step.campaign) if isinstance(step, OursStep) else None
    step.stop()
    t0, t1 = marks["start"], marks["end"]
    inside = [ms for end, ms, _ in rec.done if t0 <= end <= t1]
    errors = [e for e in rec.errors if t0 <= e[0] <= t1]
    errors_all = rec.errors
    (s0, d0, g0), (s1, d1, g1) = marks["cpu0"], marks["cpu1"]
    seconds = t1 - t0
    server_cpu = 100 * sum(t - s0.get(p, 0.0) for p, t in s1.items()) / seconds
    db_cpu = 100 * sum(t - d0.get(p, 0.0) for p, t in d1.items()) / seconds
    gen_cpu = 100 * ((g1.user + g1.system) - (g0.user + g0.system)) / seconds
    p95 = percentile(inside, 95)
    units = sum(1 for t in rec.unit_times if t0 <= t <= t1)
    inside_server = server.server_times(marks["log0"], marks["log1"]) if isinstance(server, OursServer) else {}
    row = {
        "tool": server.label,
        "n": n,
        "think_scale": scale,
        "arrival_s": arrival,
        "server_nice": server_nice,
        "server_nice_failed": renice.failed if renice else "",
        "window_s": seconds,
        "requests": len(inside),
        "requests_per_s": len(inside) / seconds,
        "units_per_s": units / seconds,
        "p50_ms": percentile(inside, 50),
        "p95_ms": p95,
        "p99_ms": percentile(inside, 99),
        "max_ms": max(inside) if inside else float("nan"),
        "errors": len(errors),
        "errors_whole_step": len(errors_all),
        "error_samples": sorted({f"{kind}: {message}" for _, kind, message in errors_all})[:5],
        "server_cpu_pct": server_cpu,
        "db_cpu_pct": db_cpu,
        "loadgen_cpu_pct": gen_cpu,
        "loadgen_loop_lag_p95_ms": percentile(marks["lags"], 95),
        "loadgen_loop_lag_max_ms": max(marks["lags"], default=float("nan")),
        "server_p50_ms": percentile([ms for v in inside_server.values() for ms in v], 50),
        "server_p95_ms": percentile([ms for v in inside_server.values() for ms in v], 95),
        "machine_cpu_pct": marks["machine_cpu"],
        "loadavg1": marks["loadavg"],
        "server_rss_mb": peak.peak / 2**20,
        "largest_process_rss_mb": peak.peak_one / 2**20,
        "db_backends_rss_mb": marks["db_rss"] / 2**20,
        "connections": marks["connections"],
        "stored_judgements": stored,
        "by_kind": {
            kind: {
                "n": len(values),
                "p50_ms": percentile(values, 50),
                "p95_ms": percentile(values, 95),
                "server_p50_ms": percentile(inside_server.get(kind, []), 50),
                "server_p95_ms": percentile(inside_server.get(kind, []), 95),
            }
            for kind in sorted({k for _, _, k in rec.done})
            for values in [[ms for end, ms, k in rec.done if k == kind and t0 <= end <= t1]]
        },
    }
    row["held"] = bool(inside) and p95 <= P95_LIMIT_MS and not errors
    row["limit"] = "" if row["held"] else first_limit(row, errors)
    return row


def step_port(server) -> int:
    return server.port if isinstance(server, OursServer) else server.tool.port


def first_limit(row: dict, errors: list) -> str:
    connection_words = ("Connection", "Reset", "Refused", "Timeout", "IncompleteRead", "closed")
    if any(any(w in message for w in connection_words) for _, _, message in errors):
        return "connections"
    if row["machine_cpu_pct"] >= 0.9 * 100 * psutil.cpu_count():
        others = row["machine_cpu_pct"] - row["server_cpu_pct"] - row["db_cpu_pct"] - row["loadgen_cpu_pct"]
        return (
            f"CPU: the machine at {row['machine_cpu_pct']:.0f} % (server {row['server_cpu_pct']:.0f} %, PostgreSQL "
            f"{row['db_cpu_pct']:.0f} %, load generator {row['loadgen_cpu_pct']:.0f} %, other processes {others:.0f} %)"
        )
    if errors:
        return "errors: " + errors[0][2]
    server_p95 = row.get("server_p95_ms", float("nan"))
    if server_p95 == server_p95 and server_p95 >= 0.5 * row["p95_ms"]:
        return (
            f"time inside the server (p95 {server_p95:.0f} of {row['p95_ms']:.0f} ms in gunicorn, the machine's CPU "
            f"at {row['machine_cpu_pct']:.0f} %): waits for a CPU or PostgreSQL, not for a thread"
        )
    return "workers (requests queue for a thread while CPU is left)"


# --- report -------------------------------------------------------------------------------------


def print_row(row: dict):
    print(
        f"| {row['tool']} | {row['n']} | {row['requests_per_s']:.1f} | {row['units_per_s']:.1f} | "
        f"{row['p50_ms']:.1f} / {row['p95_ms']:.1f} / {row['p99_ms']:.1f} | {row['errors']} | "
        f"{row['server_cpu_pct']:.0f} | {row['db_cpu_pct']:.0f} | {row['loadgen_cpu_pct']:.0f} | "
        f"{row['machine_cpu_pct']:.0f} | {row['server_rss_mb']:.0f} ({row['largest_process_rss_mb']:.0f}) | "
        f"{row['db_backends_rss_mb']:.0f} | {row['connections']} | {'yes' if row['held'] else 'no: ' + row['limit']}; over baseline: "
        f"{'yes' if row.get('held_over_baseline') else 'no'} |",
        flush=True,
    )
    kinds = ", ".join(
        f"{k} {v['n']} x {v['p50_ms']:.0f}/{v['p95_ms']:.0f}"
        + (
            f" (in gunicorn {v['server_p50_ms']:.0f}/{v['server_p95_ms']:.0f})"
            if v["server_p50_ms"] == v["server_p50_ms"]
            else ""
        )
        for k, v in row["by_kind"].items()
    )
    print(
        f"<!-- {row['tool']} N={row['n']} by request (n x p50/p95 ms): {kinds}; load {row['loadavg1']:.1f}; "
        f"load generator loop lag p95 {row['loadgen_loop_lag_p95_ms']:.1f} ms (max {row['loadgen_loop_lag_max_ms']:.0f}) -->",
        flush=True,
    )


HEADER = (
    "| tool | N | req/s | units/s | p50 / p95 / p99 ms | errors | server CPU % | PostgreSQL CPU % | "
    "load generator CPU % | machine CPU % | server RSS MB (largest process) | PostgreSQL backends RSS MB | "
    "connections | held |\n| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |"
)


def summary(rows: list[dict], tools: list[str]) -> list[str]:
    lines, held = [], {}
    for tool in tools:
        ok = [r for r in rows if r["tool"] == tool and r["held"] and r["n"] > 1]
        best = max(ok, key=lambda r: r["n"]) if ok else None
        held[tool] = best["n"] if best else 0
        failed = [r for r in rows if r["tool"] == tool and not r["held"] and r["n"] > 1]
        if best:
            per100 = 100 / best["n"]
            lines.append(
                f"{tool}: largest N held {best['n']} (p95 {best['p95_ms']:.1f} ms, {best['requests_per_s']:.1f} req/s); "
                f"per 100 annotators {per100 * (best['server_cpu_pct'] + best['db_cpu_pct']):.1f} % CPU "
                f"(server + PostgreSQL) and {per100 * (best['server_rss_mb'] + best['db_backends_rss_mb']):.0f} MB"
            )
        else:
            lines.append(f"{tool}: no step held")
        if failed:
            lines.append(f"{tool}: first step not held N={failed[0]['n']}: {failed[0]['limit']}")
        else:
            lines.append(f"{tool}: every step held (the ramp did not reach its limit)")
    if len(tools) == 2 and held[tools[1]]:
        lines.append(f"ratio {tools[0]} / {tools[1]} of the largest N held: {held[tools[0]] / held[tools[1]]:.2f}")
    over = {}
    for tool in tools:
        ok = [r for r in rows if r["tool"] == tool and r["n"] > 1 and r.get("held_over_baseline")]
        over[tool] = max((r["n"] for r in ok), default=0)
        base = next((r["p95_ms"] for r in rows if r["tool"] == tool and r["n"] == 1), float("nan"))
        lines.append(
            f"{tool}: one annotator alone p95 {base:.1f} ms; largest N held at p95 <= 200 ms over that: {over[tool]}"
        )
    if len(tools) == 2 and over[tools[1]]:
        lines.append(f"ratio {tools[0]} / {tools[1]} over the baseline: {over[tools[0]] / over[tools[1]]:.2f}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default="100,200,400,700,1000,1500,2000,3000,4000")
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--think-scale", type=float, default=1.0)
    parser.add_argument("--tools", default="ours,pearmut")
    parser.add_argument("--protocol", default="likert", choices=("likert", "esa"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument(
        "--arrival-rate",
        type=float,
        default=None,
        help="annotators arriving per second at most (arrivals over max(30 s, N / rate)); default: all within 30 s",
    )
    parser.add_argument(
        "--client-nice", type=int, default=-10, help="the load generator's nice value during a step (0: unchanged)"
    )
    parser.add_argument(
        "--server-nice",
        type=int,
        default=0,
        help="the servers' and their PostgreSQL backends' nice value during a step (0: unchanged)",
    )
    parser.add_argument("--skip-alone", action="store_true", help="no one-annotator baseline step first")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reuse-db", action="store_true", help="keep the scratch database of an earlier run")
    parser.add_argument("--collectstatic", action="store_true", help="collect the static files again")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.quick:
        args.steps, args.window, args.think_scale = "20,50", 10.0, 0.05
    steps = [int(s) for s in args.steps.split(",")]
    tools = args.tools.split(",")
    base = load_e2e(2000)
    out = Path(args.json) if args.json else OUT / f"capacity-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    print(
        f"think {THINK[0]:g}-{THINK[1]:g} s x {args.think_scale:g}, arrivals over "
        f"{f'max({THINK[1] * args.think_scale:g} s, N / {args.arrival_rate:g}/s)' if args.arrival_rate else f'{THINK[1] * args.think_scale:g} s'}, "
        f"window {args.window:g} s, {args.protocol}, gunicorn {args.workers} x {args.threads}, "
        f"{psutil.cpu_count()} CPUs",
        flush=True,
    )
    print(HEADER, flush=True)
    # Interleaved: every step runs each tool still holding, in turn (a run cut short still has both sides).
    servers = {
        tool: OursServer(args.workers, args.threads, args.protocol, args.collectstatic, args.reuse_db)
        if tool == "ours"
        else PearmutServer(args.protocol)
        for tool in tools
    }
    # First one annotator alone: the machine's own latency at no load (a busy shared machine's
    # scheduling delays every database round trip). A tool's ramp goes on while its steps hold the
    # strict bar or the bar over that baseline (p95 <= 200 ms + the baseline's p95), without errors.
    active, baseline = list(tools), {}
    try:
        for k, n in enumerate(([] if args.skip_alone else [1]) + steps):
            for tool in list(active):
                row = run_step(
                    servers[tool],
                    base,
                    n,
                    args.think_scale,
                    args.window,
                    seed=k + 1,
                    rate=args.arrival_rate,
                    nice=args.client_nice,
                    server_nice=args.server_nice,
                )
                if n == 1:
                    baseline[tool] = row["p95_ms"]
                row["baseline_p95_ms"] = baseline.setdefault(tool, 0.0)
                row["held_over_baseline"] = (
                    bool(row["requests"]) and not row["errors"] and (row["p95_ms"] <= P95_LIMIT_MS + baseline[tool])
                )
                rows.append(row)
                print_row(row)
                out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
                if n > 1 and not (row["held"] or row["held_over_baseline"]):
                    active.remove(tool)
            if not active:
                break
    finally:
        for server in servers.values():
            server.close()
    for line in summary(rows, tools):
        print(line)
    print(f"json: {out}")


if __name__ == "__main__":
    main()
