"""The annotation hot path side by side with the peers: Pearmut and Potato, one load generator.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/h_peers .venv/bin/python bench/bench_peers.py [--quick]

What it does:
- installs Pearmut (PyPI `pearmut`, Python >= 3.12, from pyenv) and Potato (PyPI
  `potato-annotation`) into their own virtual environments under `var/peers/`
  (made on the first run, reused after; pip from the package registry only);
- reads E2E NLG Challenge outputs (`$WORKBENCH_SHARED_DATA/e2e-human/quality.csv`:
  meaning representation + 5 system outputs a row; Dusek et al. 2020) until it
  has `--outputs` (500) distinct outputs;
- sets up the same two campaigns in every tool, 3 annotators per output:
  Likert (2 criteria, 1-6: two judgements per output) and ESA (a 0-100 score
  with error spans: one judgement per output), with `--annotators` (50)
  annotators; a fresh campaign (and a fresh server) for every run;
- drives every tool with the same load generator: one thread per annotator, its
  own keep-alive connection and cookies, looping fetch a unit / think / submit,
  through the requests each tool's annotator page makes (below); with no think
  time and with `--think` (1 s); the annotators' first requests are spread over
  one think time;
- counts what each tool stored afterwards from its own storage (our database;
  Pearmut's `data/annotations/<campaign>.jsonl`; Potato's per-user
  `user_state.json`), not from the client's count;
- prints per tool and run: judgements/s, fetch and submit p50/p95, server CPU
  ms per judgement (utime+stime from /proc/<pid>/stat of the server process
  tree, before and after; ours plus the PostgreSQL backends of its database),
  peak RSS of the server tree (sampled every 0.2 s), start-up time from the
  process start to the first annotator page, and the ratios of ours to each
  peer (median over the rounds). Rounds are interleaved: every tool once per
  round, the order reversed every other round (A B B A ...).

The requests of one unit:
- ours, API path (token auth): the first unit by `POST
  /api/campaigns/{id}/next-assignment/`, then per unit one `POST
  /api/assignments/{id}/submit/` with `"next": true`, whose answer carries the
  next unit (the API's one request per unit); fetch time = the first fetch,
  0 after (its cost is in the submit's time);
- ours, page path (session + CSRF, as `static/js/annotate.js` does): the first
  unit by `POST /annotate/campaigns/{id}/` (hands out the unit, 302) + `GET
  /annotate/campaigns/{id}/unit/` (the page, loaded once); then per unit one
  `POST /annotate/assignments/{id}/submit/` (JSON), whose answer carries the
  next unit (the page draws it in place); fetch time = POST + GET for the first
  unit, 0 after (its cost is in the submit's time);
- Pearmut (its page is static and talks JSON): `POST /get-next-item`,
  `POST /log-response`; task-based assignment (Pearmut's way to fix who sees
  what: each output in 3 annotators' task lists);
- Potato: `POST /updateinstance` (the save), then `POST /annotate`
  `{"action": "next_instance"}` + `GET /annotate` (the page reload its script
  does); fetch time = POST + GET; its own assignment
  (`max_annotations_per_item: 3`).

Our server is gunicorn as the README's "Configuration for production" starts it
(`-k gthread --workers 2 --threads 4 --keep-alive 30` on this 2-core machine), production settings
(no DEBUG, requests marked HTTPS by `X-Forwarded-Proto` as the TLS proxy would),
on a scratch database `<DATABASE_URL's name>_peers` (dropped and made again),
with `DJANGO_CONN_MAX_AGE=3600` so that no backend (and its CPU) is lost
mid-run. Pearmut runs as `pearmut run` (uvicorn, one process), Potato as
`potato start` (Flask's threaded server), both as their READMEs say.

`--workers N --threads M`: our gunicorn with other numbers (the README's comparison).
`--tools ...,ours-api-django`: also the API path with the fast lane off (`WORKBENCH_API_FAST_LANE=0`,
every request through Django and DRF), and the ratio of `ours-api` to it.
`--quick`: one round, 20 annotators, 100 outputs, 10 s a run (a smoke test).
`--json FILE` (default `bench/out/peers-<time>.json`) gets every run.

Before the measured runs, one untimed run of our first path (at most 5 s, its first protocol) puts
assignments, enrolments and judgements in the scratch database, as a deployed workbench's database
has them; every run then starts after a `VACUUM (ANALYZE)` (at its campaign's creation) that sees
them. Without it the first of our runs meets tables that were empty when analysed: its prepared
statements run generic plans made for empty tables until autovacuum's next ANALYZE (a minute in a
deployment, the whole of a run here), and PostgreSQL spent about 1 ms more per unit (the own
enrolment's lock 0.85 ms against 0.16, overlap-first's pick 0.67 against 0.37; 504 against 577
judgements/s in a 2-round API run). `--cold-database` measures that state.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode, urlparse

from _servers import (
    CRITERIA,
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

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "var" / "peers"
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
PYTHON312 = [Path("/root/.pyenv/versions/3.12.1/bin/python3"), Path("/root/.pyenv/versions/3.13.0/bin/python3")]


# --- installing the peers ---------------------------------------------------------


def ensure_venv(name: str, package: str, python: Path) -> Path:
    """`var/peers/<name>` with `package` installed (from the registry, once)."""
    venv = VAR / name
    marker = venv / ".installed"
    if marker.exists():
        return venv
    VAR.mkdir(parents=True, exist_ok=True)
    print(f"installing {package} into {venv} ...", file=sys.stderr)
    if not (venv / "bin" / "python").exists():
        subprocess.run([str(python), "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", package], check=True)
    marker.write_text(package + "\n")
    return venv


def python_312() -> Path:
    for candidate in PYTHON312:
        if candidate.exists():
            return candidate
    found = shutil.which("python3.12") or shutil.which("python3.13")
    if not found:
        sys.exit("bench_peers: Pearmut needs Python >= 3.12 and none was found (pyenv 3.12.1 / 3.13.0)")
    return Path(found)


# --- data -----------------------------------------------------------------------


def flat_outputs(items: list[dict]) -> list[dict]:
    return [
        {"id": f"{item['id']}-{o['system']}", "mr": item["mr"], "text": o["text"]}
        for item in items
        for o in item["outputs"]
    ]


# --- process measurements ----------------------------------------------------------


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return out


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    except OSError:
        return 0


class TreeMeter:
    """CPU of a process tree (and extra pids, e.g. database backends) between start and stop,
    and the peak of the tree's summed RSS, sampled every 0.2 s from the process's start."""

    def __init__(self, pid: int, extra=lambda: []):
        self.pid, self.extra = pid, extra
        self.peak, self._stop = 0, threading.Event()
        self.thread = threading.Thread(target=self._sample_rss, daemon=True)
        self.thread.start()

    def _sample_rss(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(rss_bytes(p) for p in descendants(self.pid)))
            self._stop.wait(0.2)

    def cpu(self) -> dict:
        return {
            "server": {p: cpu_seconds(p) for p in descendants(self.pid)},
            "database": {p: cpu_seconds(p) for p in self.extra()},
        }

    def close(self):
        self._stop.set()


def cpu_used(before: dict, after: dict) -> dict:
    return {kind: sum(t - before[kind].get(p, 0.0) for p, t in after[kind].items()) for kind in after}


# --- a small HTTP client with cookies ---------------------------------------------


class Http:
    def __init__(self, port: int, headers: dict | None = None):
        self.port, self.conn, self.cookies = port, None, {}
        self.headers = headers or {}

    def request(self, method: str, path: str, body=None, headers: dict | None = None):
        """(status, response headers, body bytes); JSON for dict/list bodies; cookies kept."""
        all_headers = {**self.headers, **(headers or {})}
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        if self.cookies:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
                self.conn.request(method, path, body=body, headers=all_headers)
                response = self.conn.getresponse()
                data = response.read()
                break
            except (http.client.HTTPException, OSError):
                self.conn = None
                if attempt:
                    raise
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key.strip()] = rest.split(";", 1)[0]
        if response.getheader("Connection", "").lower() == "close":
            self.conn = None
        return response.status, response, data


# --- the tools ---------------------------------------------------------------------


class Tool:
    """A server to start for one run, its annotator clients, and what it stored."""

    label = "?"

    def start(self, protocol: str, run: str, outputs: list[dict], n_annotators: int):
        raise NotImplementedError

    def first_page(self) -> tuple[str, dict]:
        raise NotImplementedError

    def client(self, i: int):
        raise NotImplementedError

    def stored(self) -> int:
        raise NotImplementedError

    def stop(self):
        if self.server.poll() is None:
            self.server.send_signal(signal.SIGINT)
            try:
                self.server.wait(20)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait(10)
        self.log.close()


class Ours(Tool):
    """The workbench behind gunicorn; `path` "api" (token) or "page" (session + CSRF)."""

    def __init__(
        self,
        path: str,
        db: "OurDatabase",
        workers: int = 2,
        threads: int = 4,
        env: dict | None = None,
        label: str | None = None,
    ):
        self.path, self.db = path, db
        self.workers, self.threads = workers, threads
        self.env = env or {}
        self.label = label or f"ours-{path}"

    def start(self, protocol, run, outputs, n_annotators):
        self.protocol = protocol
        self.campaign = self.db.campaign(protocol, run)
        self.port = free_port()
        self.log = open(VAR / "runs" / f"{run}.log", "w")
        self.server = gunicorn(
            self.port, workers=self.workers, threads=self.threads, env={**self.db.env, **self.env}, log=self.log
        )

    def first_page(self):
        return f"/annotate/campaigns/{self.campaign}/", self.db.page_headers(0, self.port)

    def client(self, i):
        return (OursApi if self.path == "api" else OursPage)(self, i)

    def backends(self) -> list[int]:
        return self.db.backends()

    def stored(self):
        return self.db.count(self.campaign)


class OursApi:
    def __init__(self, tool: Ours, i: int):
        self.tool, self.rng = tool, random.Random(i)
        self.http = Http(tool.port, {"Authorization": f"Token {tool.db.tokens[i]}", "X-Forwarded-Proto": "https"})

    def open(self):
        self.next_unit = None

    def fetch(self):
        if self.next_unit is not None:  # came with the last submit's answer
            unit, self.next_unit = self.next_unit, None
            return unit
        status, _, data = self.http.request("POST", f"/api/campaigns/{self.tool.campaign}/next-assignment/")
        if status == 204:
            return None
        if status not in (200, 201):
            raise RuntimeError(f"fetch {status} {data[:200]!r}")
        return json.loads(data)

    def submit(self, unit):
        judgements = []
        for output in unit["item"]["outputs"]:
            for criterion, score in answer_scores(self.tool.protocol, self.rng).items():
                answer = {"criterion": criterion, "output": output["id"], "score": score}
                if self.tool.protocol == "esa":
                    answer["spans"] = [{"start": 4, "end": 9, "severity": "minor"}]
                judgements.append(answer)
        status, _, data = self.http.request(
            "POST",
            f"/api/assignments/{unit['id']}/submit/",
            {"judgements": judgements, "shown_order": unit["shown_order"], "time_spent_ms": 1000, "next": True},
        )
        if status != 201:
            raise RuntimeError(f"submit {status} {data[:200]!r}")
        self.next_unit = json.loads(data).get("next")


UNIT_CONFIG = re.compile(rb'<script id="unit-config" type="application/json">(.*?)</script>', re.S)


class OursPage:
    """What the browser does on the annotate pages (annotations/views/annotate.py, static/js/annotate.js)."""

    def __init__(self, tool: Ours, i: int):
        self.tool, self.rng = tool, random.Random(i)
        self.landing = f"/annotate/campaigns/{tool.campaign}/"
        self.http = Http(tool.port, tool.db.page_headers(i, tool.port))
        self.http.cookies["sessionid"] = tool.db.sessions[i]

    def open(self):  # the landing page, as the annotator opens it (sets the CSRF cookie)
        self.next_unit = None
        status, _, data = self.http.request("GET", self.landing)
        if status != 200:
            raise RuntimeError(f"landing {status} {data[:200]!r}")

    def _csrf(self) -> dict:
        return {"X-CSRFToken": self.http.cookies.get("csrftoken", "")}

    def fetch(self):
        if self.next_unit is not None:  # came with the last submit's answer: the page draws it
            unit, self.next_unit = self.next_unit, None
            return unit
        status, response, data = self.http.request(
            "POST",
            self.landing,
            f"csrfmiddlewaretoken={self.http.cookies.get('csrftoken', '')}",
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        if status == 200:  # the "finished" page: nothing left
            return None
        if status != 302:
            raise RuntimeError(f"start {status} {data[:200]!r}")
        location = urlparse(response.getheader("Location")).path
        status, _, data = self.http.request("GET", location)
        match = UNIT_CONFIG.search(data)
        if status != 200 or not match:
            raise RuntimeError(f"unit page {status} {data[:200]!r}")
        return json.loads(match.group(1))

    def submit(self, config):
        judgements = []
        for output in config["outputs"]:
            for criterion, score in answer_scores(self.tool.protocol, self.rng).items():
                answer = {"criterion": criterion, "output": output["id"], "score": score}
                if self.tool.protocol == "esa":
                    answer["spans"] = [{"start": 4, "end": 9, "severity": "minor"}]
                judgements.append(answer)
        status, _, data = self.http.request(
            "POST",
            config["submit_url"],
            {"judgements": judgements, "shown_order": config["shown_order"], "time_spent_ms": 1000},
            self._csrf(),
        )
        if status != 201:
            raise RuntimeError(f"submit {status} {data[:200]!r}")
        unit = json.loads(data).get("unit")
        self.next_unit = unit["config"] if unit else None


class OurDatabase:
    """The scratch database: the E2E dataset, annotator accounts with tokens and sessions."""

    def __init__(self, items: list[dict], n_annotators: int):
        self.name, self.url = scratch_database("_peers")
        # Production settings; connections kept, so that no backend (and its CPU) is lost mid-run.
        self.env = production_env(self.url, VAR / "static", DJANGO_CONN_MAX_AGE="3600")
        manage(self.env, ["migrate", "--noinput", "-v0"], ["collectstatic", "--noinput", "-v0"])
        adopt_settings(self.env)
        from django.conf import settings
        from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
        from django.contrib.sessions.backends.db import SessionStore
        from django.utils.module_loading import import_string
        from rest_framework.authtoken.models import Token

        from annotations.models import Membership, Project

        # Django's database sessions (workbench.sessions reads the same table).
        assert settings.SESSION_ENGINE in ("django.contrib.sessions.backends.db", "workbench.sessions"), (
            settings.SESSION_ENGINE
        )
        self.project = Project.objects.create(name="bench-peers")
        self.dataset = create_dataset(self.project, "e2e", items)
        User = get_user_model()
        # The backend a password login records (the first one that loads users: not the lock-out guard).
        backend = next(path for path in settings.AUTHENTICATION_BACKENDS if hasattr(import_string(path), "get_user"))
        self.tokens, self.sessions = [], []
        for i in range(n_annotators):
            user = User.objects.create_user(username=f"peer-{i:03d}", password=None)
            Membership.objects.create(project=self.project, user=user, role=Membership.Role.ANNOTATOR)
            self.tokens.append(Token.objects.create(user=user).key)
            session = SessionStore()  # a logged-in browser session, without paying for a password hash
            session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(user.pk), backend
            session[HASH_SESSION_KEY] = user.get_session_auth_hash()
            session.create()
            self.sessions.append(session.session_key)

    def page_headers(self, i: int, port: int) -> dict:
        # Behind the TLS proxy: it marks the request HTTPS; the browser sends the Referer CSRF checks.
        return {"X-Forwarded-Proto": "https", "Referer": f"https://127.0.0.1:{port}/annotate/"}

    def campaign(self, protocol: str, run: str) -> int:
        from annotations.services.campaigns import campaign_create

        campaign = campaign_create(dataset=self.dataset, name=run, redundancy=3, seed=1, **campaign_options(protocol))
        vacuum_analyze()
        return campaign.pk

    def backends(self) -> list[int]:
        return backend_pids(self.name)

    def count(self, campaign_id: int) -> int:
        return complete_judgements(campaign_id)


class Pearmut(Tool):
    label = "pearmut"

    def __init__(self):
        self.venv = ensure_venv("pearmut", "pearmut", python_312())

    def start(self, protocol, run, outputs, n_annotators):
        self.protocol, self.campaign_id = protocol, run
        self.root = VAR / "runs" / run
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        users = [f"peer-{i:03d}" for i in range(n_annotators)]
        tasks = [[] for _ in users]
        for r in range(3):  # each output in 3 different annotators' lists (Pearmut's task-based assignment)
            for j, output in enumerate(outputs):
                tasks[(j + r) % n_annotators].append([{"src": output["mr"], "tgt": {"out": output["text"]}}])
        info = {"assignment": "task-based", "users": users, "shuffle": False}
        if protocol == "likert":
            info.update(protocol="DA", sliders=[{"name": c, "min": 1, "max": 6, "step": 1} for c in CRITERIA["likert"]])
        else:
            info.update(protocol="ESA")
        spec = self.root / "campaign.json"
        spec.write_text(json.dumps({"campaign_id": run, "info": info, "data": tasks}))
        env = {**os.environ, "PEARMUT_ROOT": str(self.root)}
        subprocess.run(
            [str(self.venv / "bin" / "pearmut"), "add", str(spec)],
            cwd=self.root,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self.users = users
        self.port = free_port()
        self.log = open(self.root / "server.log", "w")
        self.server = subprocess.Popen(
            [str(self.venv / "bin" / "pearmut"), "run", "--port", str(self.port)],
            cwd=self.root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def first_page(self):
        return f"/annotate?campaign_id={quote(self.campaign_id)}&user_id={self.users[0]}", {}

    def client(self, i):
        return PearmutClient(self, i)

    def backends(self):
        return []

    def stored(self):
        path = self.root / "data" / "annotations" / f"{self.campaign_id}.jsonl"
        latest = {}
        for line in path.read_text().splitlines() if path.exists() else []:
            entry = json.loads(line)
            latest[(entry["user_id"], str(entry["item_i"]))] = entry  # a re-save replaces
        n = 0
        for entry in latest.values():
            for item in entry.get("annotation") or []:
                for response in (item or {}).values():
                    if self.protocol == "likert":
                        n += sum(v is not None for v in (response.get("sliders") or {}).values())
                    else:
                        n += response.get("score") is not None
        return n


class PearmutClient:
    def __init__(self, tool: Pearmut, i: int):
        self.tool, self.user, self.rng = tool, tool.users[i], random.Random(i)
        self.http = Http(tool.port)

    def open(self):
        status, _, _ = self.http.request(
            "GET", f"/annotate?campaign_id={quote(self.tool.campaign_id)}&user_id={self.user}"
        )
        if status != 200:
            raise RuntimeError(f"annotate page {status}")

    def fetch(self):
        status, _, data = self.http.request(
            "POST", "/get-next-item", {"campaign_id": self.tool.campaign_id, "user_id": self.user}
        )
        if status != 200:
            raise RuntimeError(f"get-next-item {status} {data[:200]!r}")
        body = json.loads(data)
        return None if body.get("status") == "goodbye" else body

    def submit(self, unit):
        annotation = []
        for item in unit["payload"]:
            responses = {}
            for model, text in item["tgt"].items():
                scores = answer_scores(self.tool.protocol, self.rng)
                if self.tool.protocol == "likert":
                    responses[model] = {"score": None, "sliders": scores, "error_spans": [], "textfield": None}
                else:
                    responses[model] = {
                        "score": scores["quality"],
                        "error_spans": [{"start_i": 4, "end_i": 9, "category": None, "severity": "minor"}],
                        "textfield": None,
                    }
            annotation.append(responses)
        now = time.time()
        payload = {
            "annotation": annotation,
            "item": unit["payload"],
            "actions": [{"time": now - 1, "action": "load"}, {"time": now, "action": "submit"}],
        }
        status, _, data = self.http.request(
            "POST",
            "/log-response",
            {
                "campaign_id": self.tool.campaign_id,
                "user_id": self.user,
                "item_i": unit["info"]["item_i"],
                "payload": payload,
            },
        )
        if status != 200:
            raise RuntimeError(f"log-response {status} {data[:200]!r}")


class Potato(Tool):
    label = "potato"

    def __init__(self):
        self.venv = ensure_venv("potato", "potato-annotation", Path(sys.executable).resolve())

    def start(self, protocol, run, outputs, n_annotators):
        self.protocol = protocol
        self.root = VAR / "runs" / run
        shutil.rmtree(self.root, ignore_errors=True)
        (self.root / "data").mkdir(parents=True)
        with open(self.root / "data" / "outputs.jsonl", "w") as f:
            for output in outputs:
                f.write(json.dumps({"id": output["id"], "text": output["text"], "mr": output["mr"]}) + "\n")
        if protocol == "likert":
            schemes = [
                {
                    "annotation_type": "likert",
                    "name": c,
                    "description": c,
                    "size": 6,
                    "min_label": "1",
                    "max_label": "6",
                }
                for c in CRITERIA["likert"]
            ]
        else:
            schemes = [
                {
                    "annotation_type": "slider",
                    "name": "quality",
                    "description": "quality",
                    "min_value": 0,
                    "max_value": 100,
                    "starting_value": 50,
                },
                {
                    "annotation_type": "span",
                    "name": "errors",
                    "description": "error spans",
                    "labels": ["minor", "major"],
                },
            ]
        self.port = free_port()
        config = {
            "annotation_task_name": run,
            "task_dir": str(self.root),
            "output_annotation_dir": str(self.root / "annotation_output"),
            "output_annotation_format": "jsonl",
            "data_files": ["data/outputs.jsonl"],
            "item_properties": {"id_key": "id", "text_key": "text"},
            "port": self.port,
            "require_password": False,
            "user_config": {"allow_all_users": True, "users": []},
            "max_annotations_per_item": 3,
            "max_annotations_per_user": -(-3 * len(outputs) // n_annotators),
            "annotation_schemes": schemes,
        }
        (self.root / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
        self.log = open(self.root / "server.log", "w")
        self.server = subprocess.Popen(
            [str(self.venv / "bin" / "potato"), "start", "config.yaml", "-p", str(self.port)],
            cwd=self.root,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def first_page(self):
        return "/", {}

    def client(self, i):
        return PotatoClient(self, i)

    def backends(self):
        return []

    def stored(self):
        schemas = set(CRITERIA[self.protocol])
        n = 0
        for state in (self.root / "annotation_output").glob("*/user_state.json"):
            values = json.loads(state.read_text()).get("instance_id_to_label_to_value") or {}
            for pairs in values.values():
                n += len({label["schema"] for label, _ in pairs if label.get("schema") in schemas})
        return n


POTATO_INSTANCE = re.compile(rb'name="instance_id" type="hidden" value="([^"]*)"')


class PotatoClient:
    def __init__(self, tool: Potato, i: int):
        self.tool, self.user, self.rng = tool, f"peer-{i:03d}", random.Random(i)
        self.http = Http(tool.port)
        self.page, self.done = None, set()

    def open(self):  # sign up and log in (no password required), as the login page's forms do
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        for path, action in (("/register", "signup"), ("/auth", "login")):
            self.http.request("POST", path, urlencode({"action": action, "email": self.user, "pass": "x"}), form)

    def fetch(self):
        if self.page is not None:  # the page's script: navigate to the next instance, then reload the page
            status, _, data = self.http.request(
                "POST", "/annotate", {"action": "next_instance", "instance_id": self.page}, {"X-Potato-Navigation": "1"}
            )
            if status == 302:  # after the last of this annotator's instances: to the done page
                return None
            if status != 200:
                raise RuntimeError(f"next_instance {status} {data[:200]!r}")
        status, _, data = self.http.request("GET", "/annotate")
        match = POTATO_INSTANCE.search(data)
        if status != 200:
            raise RuntimeError(f"annotate page {status} {data[:200]!r}")
        if not match or match.group(1).decode() in self.done:
            return None  # the last instance again (or the done page): nothing left
        self.page = match.group(1).decode()
        return self.page

    def submit(self, instance):
        scores = answer_scores(self.tool.protocol, self.rng)
        if self.tool.protocol == "likert":
            annotations = {f"{c}:{v}": str(v) for c, v in scores.items()}
            spans = []
        else:
            annotations = {"quality:quality": str(scores["quality"])}
            # `value` is the covered text, as the page's script sends it (a span without one is a deletion).
            spans = [{"schema": "errors", "name": "minor", "title": "minor", "start": 4, "end": 9, "value": "Eagle"}]
        status, _, data = self.http.request(
            "POST",
            "/updateinstance",
            {
                "instance_id": instance,
                "annotations": annotations,
                "span_annotations": spans,
                "client_timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
            },
        )
        if status != 200 or b'"error"' in data[:200]:
            raise RuntimeError(f"updateinstance {status} {data[:200]!r}")
        self.done.add(instance)


# --- one run -----------------------------------------------------------------------


class Annotator(threading.Thread):
    def __init__(self, client, think: float, deadline: float, seed: int):
        super().__init__(daemon=True)
        self.client, self.think, self.deadline = client, think, deadline
        self.rng = random.Random(seed)
        self.fetch_ms, self.submit_ms, self.errors = [], [], []

    def run(self):
        if self.think:  # arrivals spread over one think time, not all in the same millisecond
            time.sleep(self.rng.uniform(0, self.think))
        try:
            while time.monotonic() < self.deadline:
                start = time.perf_counter()
                unit = self.client.fetch()
                self.fetch_ms.append((time.perf_counter() - start) * 1000)
                if unit is None:
                    return
                if self.think:
                    time.sleep(self.think)
                start = time.perf_counter()
                self.client.submit(unit)
                self.submit_ms.append((time.perf_counter() - start) * 1000)
        except Exception as exc:  # reported with the run
            self.errors.append(repr(exc)[:300])


def wait_first_page(tool: Tool, started: float, limit: float = 180) -> float:
    path, headers = tool.first_page()
    http = Http(tool.port, headers)
    if isinstance(tool, Ours):
        http.cookies["sessionid"] = tool.db.sessions[0]
    while time.monotonic() - started < limit:
        if tool.server.poll() is not None:
            raise RuntimeError(f"{tool.label} exited during start-up (see its log)")
        try:
            status, _, _ = http.request("GET", path)
            if status == 200:
                return time.monotonic() - started
        except OSError:
            pass
        http.conn = None
        time.sleep(0.05)
    raise RuntimeError(f"{tool.label}: no first page after {limit:g} s")


def warm_up(tool: Tool, requests: int = 48) -> None:
    """Every server process and thread past its first request (imports, connections), as
    bench_annotation.py does: 48 requests on fresh connections (at least 3 per gunicorn thread
    up to 4 workers x 4 threads) to the path its annotators use first; the peers get the same."""
    path, headers = tool.first_page()
    if isinstance(tool, Ours) and tool.path == "api":  # any answer will do: it runs the API's machinery
        path, headers = (
            f"/api/campaigns/{tool.campaign}/",
            {"Authorization": f"Token {tool.db.tokens[0]}", "X-Forwarded-Proto": "https"},
        )
    for _ in range(requests):
        http = Http(tool.port, headers)
        if isinstance(tool, Ours):
            http.cookies["sessionid"] = tool.db.sessions[0]
        http.request("GET", path)
        http.conn.close() if http.conn else None


def run_one(tool: Tool, protocol: str, think: float, outputs: list[dict], n: int, seconds: float, tag: str) -> dict:
    run = f"{tool.label}-{protocol}-t{think:g}-{tag}"
    (VAR / "runs").mkdir(parents=True, exist_ok=True)
    tool.start(protocol, run, outputs, n)
    started = time.monotonic()
    meter = TreeMeter(tool.server.pid, tool.backends)
    try:
        startup = wait_first_page(tool, started)
        warm_up(tool)
        clients = [tool.client(i) for i in range(n)]
        for c in clients:
            c.open()
        stored0 = tool.stored() if isinstance(tool, Ours) else 0
        time.sleep(0.5)
        before = meter.cpu()
        deadline = time.monotonic() + seconds
        workers = [Annotator(c, think, deadline, i) for i, c in enumerate(clients)]
        start = time.monotonic()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.monotonic() - start
        cpu = cpu_used(before, meter.cpu())
    except BaseException:
        meter.close()
        tool.stop()
        raise
    meter.close()
    if not isinstance(tool, Ours):
        tool.stop()  # the peers' files are read after they have shut down cleanly
    stored = tool.stored() - stored0
    if isinstance(tool, Ours):
        tool.stop()
    fetch = [ms for w in workers for ms in w.fetch_ms]
    submit = [ms for w in workers for ms in w.submit_ms]
    errors = [e for w in workers for e in w.errors]
    server_cpu = cpu["server"] + cpu["database"]
    return {
        "tool": tool.label,
        "protocol": protocol,
        "think": think,
        "run": run,
        "judgements": stored,
        "judgements_per_s": stored / elapsed,
        "seconds": elapsed,
        "units_submitted_client": len(submit),
        "fetch_p50": percentile(fetch, 50),
        "fetch_p95": percentile(fetch, 95),
        "submit_p50": percentile(submit, 50),
        "submit_p95": percentile(submit, 95),
        "cpu_s_server": cpu["server"],
        "cpu_s_database": cpu["database"],
        "cpu_ms_per_judgement": 1000 * server_cpu / stored if stored else float("nan"),
        "peak_rss_mb": meter.peak / 2**20,
        "startup_s": startup,
        "load1": float(Path("/proc/loadavg").read_text().split()[0]),
        "n_errors": len(errors),
        "errors": errors[:3],
    }


# --- report ------------------------------------------------------------------------


def median_of(results, tool, protocol, think, key):
    values = [r[key] for r in results if (r["tool"], r["protocol"], r["think"]) == (tool, protocol, think)]
    values = [v for v in values if v == v]  # NaN out
    return statistics.median(values) if values else float("nan")


def report(results: list[dict], tools: list[str]) -> list[dict]:
    keys = [
        "judgements_per_s",
        "fetch_p50",
        "fetch_p95",
        "submit_p50",
        "submit_p95",
        "cpu_ms_per_judgement",
        "peak_rss_mb",
        "startup_s",
    ]
    rows = []
    for think in sorted({r["think"] for r in results}):
        for protocol in ("likert", "esa"):
            for tool in tools:
                row = {
                    "tool": tool,
                    "protocol": protocol,
                    "think": think,
                    "rounds": sum((r["tool"], r["protocol"], r["think"]) == (tool, protocol, think) for r in results),
                    "errors": sum(
                        r["n_errors"]
                        for r in results
                        if (r["tool"], r["protocol"], r["think"]) == (tool, protocol, think)
                    ),
                }
                row.update({k: median_of(results, tool, protocol, think, k) for k in keys})
                rows.append(row)
    print(
        "\nmedians over rounds; ratios: ours / peer for judgements/s (>1: ours faster), "
        "peer / ours for CPU per judgement (>1: ours cheaper)"
    )
    print(
        f"{'think':>5} {'protocol':8} {'tool':15} {'judg/s':>7} {'fetch p50/p95 ms':>17} {'submit p50/p95 ms':>18} "
        f"{'CPU ms/j':>8} {'RSS MB':>7} {'start s':>7} {'err':>4}  ratios api|page vs this peer (j/s; CPU)"
    )
    for row in rows:
        ratios = ""
        if not row["tool"].startswith("ours"):
            parts = []
            for ours in ("ours-api", "ours-page"):
                mine = next(
                    (
                        x
                        for x in rows
                        if (x["tool"], x["protocol"], x["think"]) == (ours, row["protocol"], row["think"])
                    ),
                    None,
                )
                if mine is None:
                    continue
                jps = mine["judgements_per_s"] / row["judgements_per_s"] if row["judgements_per_s"] else float("nan")
                cpu = (
                    row["cpu_ms_per_judgement"] / mine["cpu_ms_per_judgement"]
                    if mine["cpu_ms_per_judgement"]
                    else float("nan")
                )
                row[f"ratio_{ours}_jps"], row[f"ratio_{ours}_cpu"] = jps, cpu
                parts.append(f"{ours[5:]} {jps:.2f}x; {cpu:.2f}x")
            ratios = " | ".join(parts)
        print(
            f"{row['think']:5g} {row['protocol']:8} {row['tool']:15} {row['judgements_per_s']:7.1f} "
            f"{row['fetch_p50']:7.1f}/{row['fetch_p95']:<8.1f} {row['submit_p50']:8.1f}/{row['submit_p95']:<8.1f} "
            f"{row['cpu_ms_per_judgement']:8.2f} {row['peak_rss_mb']:7.0f} {row['startup_s']:7.2f} "
            f"{row['errors']:4d}  {ratios}"
        )
    for row in rows:  # the fast lane against its baseline, in the same rounds
        base = next(
            (
                x
                for x in rows
                if x["tool"] == "ours-api-django" and (x["protocol"], x["think"]) == (row["protocol"], row["think"])
            ),
            None,
        )
        if row["tool"] == "ours-api" and base is not None and base["rounds"]:
            row["ratio_lane_jps"] = row["judgements_per_s"] / base["judgements_per_s"]
            row["ratio_lane_cpu"] = base["cpu_ms_per_judgement"] / row["cpu_ms_per_judgement"]
            print(
                f"fast lane, think {row['think']:g} {row['protocol']}: ours-api / ours-api-django "
                f"{row['ratio_lane_jps']:.2f}x judgements/s; CPU per judgement {row['ratio_lane_cpu']:.2f}x cheaper"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round, 20 annotators, 100 outputs, 10 s a run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--outputs", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=60, help="longest run (a run ends earlier when all is done)")
    parser.add_argument("--think", type=float, default=1.0)
    parser.add_argument("--thinks", default="0,1", help="think rounds: 0 (none), 1 (--think)")
    parser.add_argument("--protocols", default="likert,esa")
    parser.add_argument("--tools", default="ours-api,ours-page,pearmut,potato")
    parser.add_argument("--workers", type=int, default=2, help="our gunicorn's --workers (README: the cores, 2 here)")
    parser.add_argument("--threads", type=int, default=4, help="our gunicorn's --threads (README: 4)")
    parser.add_argument("--json", help="results file (default bench/out/peers-<time>.json)")
    parser.add_argument(
        "--cold-database",
        action="store_true",
        help="no untimed warm-up run on our scratch database before the measured ones",
    )
    args = parser.parse_args()

    def interrupted(signum, frame):  # `kill` stops the servers too (run_one stops its tool on any exception)
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)  # ignored in background jobs otherwise
    if args.quick:
        args.rounds, args.annotators, args.outputs, args.seconds = 1, 20, 100, 10
    names = args.tools.split(",")
    unknown = set(names) - {"ours-api", "ours-page", "ours-api-django", "pearmut", "potato"}
    if unknown:
        sys.exit(f"bench_peers: unknown tool(s): {', '.join(sorted(unknown))}")

    items = load_e2e(args.outputs)
    outputs = flat_outputs(items)
    tools: dict[str, Tool] = {}
    if "pearmut" in names:
        tools["pearmut"] = Pearmut()
    if "potato" in names:
        tools["potato"] = Potato()
    if any(n.startswith("ours") for n in names):
        print("setting up our scratch database ...", file=sys.stderr)
        db = OurDatabase(items, args.annotators)
        for path in ("api", "page"):
            if f"ours-{path}" in names:
                tools[f"ours-{path}"] = Ours(path, db, args.workers, args.threads)
        if "ours-api-django" in names:  # the baseline of the fast lane: every request through Django and DRF
            tools["ours-api-django"] = Ours(
                "api", db, args.workers, args.threads, env={"WORKBENCH_API_FAST_LANE": "0"}, label="ours-api-django"
            )
    order = [n for n in names if n in tools]
    ours = [n for n in order if n.startswith("ours")]
    if ours and not args.cold_database:
        # A deployed database has seen campaigns; a fresh one has not, and for its first seconds its
        # prepared statements run generic plans made while the tables were empty (see the docstring).
        print("warming our scratch database up (one untimed run) ...", file=sys.stderr)
        run_one(
            tools[ours[0]],
            args.protocols.split(",")[0],
            0.0,
            outputs,
            args.annotators,
            min(5.0, args.seconds),
            "warmup",
        )
    results = []
    for round_no in range(args.rounds):
        for think in [args.think if t == "1" else 0.0 for t in args.thinks.split(",")]:
            for protocol in args.protocols.split(","):
                for name in order if round_no % 2 == 0 else order[::-1]:  # A B ... then ... B A
                    result = run_one(
                        tools[name], protocol, think, outputs, args.annotators, args.seconds, f"r{round_no}"
                    )
                    result["round"] = round_no
                    results.append(result)
                    print(
                        f"  round {round_no} think {think:g} {protocol} {name}: {result['judgements']} judgements, "
                        f"{result['judgements_per_s']:.1f}/s, CPU {result['cpu_ms_per_judgement']:.2f} ms/j, "
                        f"errors {result['n_errors']} {result['errors'][:1]}",
                        file=sys.stderr,
                    )
    print(
        f"{args.annotators} annotators, {len(outputs)} E2E outputs x 3 annotators, {args.rounds} round(s), "
        f"runs of at most {args.seconds:g} s, {os.cpu_count()} cores; "
        f"load average now {Path('/proc/loadavg').read_text().split()[0]}"
    )
    rows = report(results, order)
    OUT.mkdir(parents=True, exist_ok=True)
    path = Path(args.json) if args.json else OUT / f"peers-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"args": vars(args), "summary": rows, "runs": results}, indent=1))
    print(f"written {path}")


if __name__ == "__main__":
    main()
