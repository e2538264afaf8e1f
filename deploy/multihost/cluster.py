"""The production set-up on several "hosts" of one Linux machine, for the multi-host test and to try it.

Each host is a network namespace of its own (`ip netns`), joined to the root namespace by a veth
pair on a bridge (10.245.N.0/24, N picked free): gunicorn runs in the web hosts, a Celery worker in
each worker host, and HAProxy in the root namespace balances HTTP over the web hosts. PostgreSQL and
Redis are the machine's own: when they listen only on loopback (as on a developer machine) HAProxy
also relays TCP from the bridge address to them, the way a private network route reaches a managed
database; nothing of theirs is restarted or reconfigured. The hosts share nothing but the database,
the broker and the settings they are given, as separate machines would.

Python, not shell: the test drives it as a context manager (`with Cluster(...) as cluster:`), whose
exit tears everything down, also when starting failed half-way; the state file under
var/multihost/<id>/ lets `down` (or the next start) remove what a killed run left behind.

    sudo .venv/bin/python -m deploy.multihost.cluster up      # until Ctrl-C; prints the proxy's URL
    sudo .venv/bin/python -m deploy.multihost.cluster down    # what killed runs left behind

Root, iproute2 and HAProxy (`make haproxy`) are needed: `missing_requirements()` says what lacks.
No Django here: the processes it starts load the application.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "var" / "multihost"
PREFIX = "wbm"  # namespaces, links and the bridge this module made start with it
PROXY_PORT = 18080
RELAY_PORT_BASE = 15400
PGBOUNCER_PORT = 16432
WEB_PORT = 8000
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# No proxy from the environment between this module and the hosts it started.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ClusterError(RuntimeError):
    pass


def missing_requirements(pgbouncer: bool = False) -> str | None:
    """Why this machine cannot build a cluster (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth pairs, a bridge)"
    if not shutil.which("ip"):
        return "iproute2's `ip` is not installed"
    if not shutil.which("haproxy"):
        return "HAProxy is not installed (`make haproxy` installs Debian's)"
    if pgbouncer and not shutil.which("pgbouncer"):
        return "PgBouncer is not installed (`make haproxy` installs Debian's)"
    probe = f"{PREFIX}probe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def wait_for(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.2):
    """Poll until `predicate` answers something truthy (returned); ClusterError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def _run(*args: str) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True)
    if done.returncode:
        raise ClusterError(f"{' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _free_subnet() -> int:
    """A third octet N such that no interface of the machine has an address in 10.245.N.0/24."""
    used = set()
    for line in _run("ip", "-4", "-o", "addr", "show").splitlines():
        address = line.split()[3]
        if address.startswith("10.245."):
            used.add(int(address.split(".")[2]))
    free = [n for n in range(16, 250) if n not in used]
    if not free:
        raise ClusterError("no free 10.245.N.0/24 subnet")
    return free[secrets.randbelow(len(free))]


@dataclass
class Host:
    name: str  # web1, worker2...
    role: str  # "web" or "worker"
    namespace: str
    address: str
    log: Path
    pid: int | None = None

    @property
    def url(self) -> str:
        return f"http://{self.address}:{WEB_PORT}"


@dataclass
class Cluster:
    """`webs` gunicorn hosts and `workers` Celery hosts behind HAProxy, on the given database and broker.

    The URLs are as seen from the root namespace (where the caller is); loopback ones are relayed.
    `env` is what every host shares beyond them (DJANGO_SECRET_KEY, DJANGO_SETTINGS_MODULE...).
    """

    database_url: str
    broker_url: str
    result_backend: str = ""
    cache_url: str = ""
    env: dict[str, str] = field(default_factory=dict)
    webs: int = 2
    workers: int = 2
    gunicorn_workers: int = 1
    # As the production guide starts gunicorn (docs/how-to/scaling-out.md: `--threads 16`): a thread is
    # held for a request's whole time in the server, which grows with the host's load, and 4 threads
    # per worker queued requests at 400 crowd annotators (bench/README.md). Each thread keeps at most
    # one PostgreSQL connection: webs x gunicorn_workers x 16 must stay under `max_connections`, else
    # `pgbouncer=True`.
    gunicorn_threads: int = 16
    queues: str = "cpu,gpu"
    # Where `collectstatic` writes the hashed, compressed files that WhiteNoise serves on every web host
    # (one release, the same files everywhere); kept between runs, so later runs only check them.
    static_root: Path = RUNS / "static"
    # The hosts reach PostgreSQL through PgBouncer in transaction mode (in the root namespace) with the
    # Django settings that mode needs, instead of a plain TCP relay.
    pgbouncer: bool = False
    start_timeout: float = 180.0

    def __post_init__(self) -> None:
        self.id = secrets.token_hex(2)
        self.dir = RUNS / self.id
        self.subnet = 0
        self.bridge = f"{PREFIX}{self.id}br"
        self.hosts: list[Host] = []
        self.relays: dict[tuple[str, int], int] = {}
        self.haproxy_pid: int | None = None
        self._procs: list[subprocess.Popen] = []
        self.started: list[subprocess.Popen] = []  # every process it started, kept after `stop()`
        self._logs: list[io.TextIOBase] = []

    # --- addresses ---------------------------------------------------------------------------------------
    @property
    def gateway(self) -> str:
        return f"10.245.{self.subnet}.1"

    @property
    def proxy_url(self) -> str:
        return f"http://{self.gateway}:{PROXY_PORT}"

    @property
    def web_hosts(self) -> list[Host]:
        return [h for h in self.hosts if h.role == "web"]

    @property
    def worker_hosts(self) -> list[Host]:
        return [h for h in self.hosts if h.role == "worker"]

    def worker_name(self, host: Host) -> str:
        """The Celery node name of a worker host (what a chunk's `worker` label starts with)."""
        return f"{host.name}@mh-{self.id}"

    def _through_relay(self, url: str) -> str:
        """`url` as the hosts reach it: a loopback server through its relay on the gateway."""
        if not url:
            return url
        parts = urlsplit(url)
        if parts.hostname not in LOOPBACK:
            return url
        default = {"postgres": 5432, "postgresql": 5432, "redis": 6379, "rediss": 6379}.get(parts.scheme, 0)
        target = (parts.hostname, parts.port or default)
        port = self.relays.setdefault(target, RELAY_PORT_BASE + len(self.relays))
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo + '@' if userinfo else ''}{self.gateway}:{port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    def _through_pgbouncer(self, url: str) -> str:
        parts = urlsplit(url)
        self.pgbouncer_target = (parts.hostname or "127.0.0.1", parts.port or 5432, parts.username or "postgres")
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo + '@' if userinfo else ''}{self.gateway}:{PGBOUNCER_PORT}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    def host_env(self) -> dict[str, str]:
        """The environment every host runs with: the shared settings, the services through the relays."""
        # A production host's environment: none of the caller's Django settings (a test's settings module,
        # DJANGO_DEBUG), only what `env` says.
        env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
        env["DJANGO_SETTINGS_MODULE"] = "workbench.settings.base"
        env.update(self.env)
        env.update(
            DATABASE_URL=self._through_pgbouncer(self.database_url)
            if self.pgbouncer
            else self._through_relay(self.database_url),
            CELERY_BROKER_URL=self._through_relay(self.broker_url),
            CELERY_RESULT_BACKEND=self._through_relay(self.result_backend),
            DJANGO_READ_DOT_ENV_FILE="0",
            # HAProxy appends the client's address to X-Forwarded-For: throttles and lock-outs count
            # clients, not the proxy (workbench.security.client_ip).
            WORKBENCH_TRUSTED_PROXIES="1",
            PYTHONUNBUFFERED="1",
        )
        if self.pgbouncer:
            # A server connection belongs to a client for one transaction only: nothing may outlive it.
            env.update(
                DJANGO_CONN_MAX_AGE="0", WORKBENCH_DB_PREPARE_THRESHOLD="0", DJANGO_DISABLE_SERVER_SIDE_CURSORS="1"
            )
        if self.cache_url:
            env["WORKBENCH_CACHE_URL"] = self._through_relay(self.cache_url)
        hosts = {self.gateway, *env.get("DJANGO_ALLOWED_HOSTS", "").split(",")} - {""}
        env["WORKBENCH_STATIC_ROOT"] = str(self.static_root)
        env["DJANGO_ALLOWED_HOSTS"] = ",".join(sorted(hosts))
        origins = {f"https://{self.gateway}:{PROXY_PORT}", *env.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",")}
        env["DJANGO_CSRF_TRUSTED_ORIGINS"] = ",".join(sorted(origins - {""}))
        return env

    # --- life cycle ----------------------------------------------------------------------------------------
    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        reap_stale()
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self.subnet = _free_subnet()
            self._save_state()
            self._network()
            env = self.host_env()  # fixes the relays before HAProxy's configuration is written
            self._collect_static(env)
            self._proxy()
            if self.pgbouncer:
                self._pgbouncer()
            for host in self.hosts:
                self._spawn(host, env)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _network(self) -> None:
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        roles = [("web", i + 1) for i in range(self.webs)] + [("worker", i + 1) for i in range(self.workers)]
        for index, (role, number) in enumerate(roles):
            name = f"{role}{number}"
            host = Host(
                name=name,
                role=role,
                namespace=f"{PREFIX}-{self.id}-{name}",
                address=f"10.245.{self.subnet}.{10 + index}",
                log=self.dir / f"{name}.log",
            )
            self.hosts.append(host)
            self._save_state()
            outer, inner = f"{PREFIX}{self.id}h{index}", f"{PREFIX}{self.id}n{index}"
            _run("ip", "netns", "add", host.namespace)
            _run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            _run("ip", "link", "set", inner, "netns", host.namespace)
            _run("ip", "link", "set", outer, "master", self.bridge)
            _run("ip", "link", "set", outer, "up")
            _run("ip", "-n", host.namespace, "link", "set", "lo", "up")
            _run("ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", inner)
            _run("ip", "-n", host.namespace, "link", "set", inner, "up")
            _run("ip", "-n", host.namespace, "route", "add", "default", "via", self.gateway)

    def _collect_static(self, env: dict[str, str]) -> None:
        done = subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise ClusterError(f"collectstatic failed: {done.stderr.strip()[-2000:]}")

    def haproxy_config(self) -> str:
        webs = "\n".join(
            f"    server {h.name} {h.address}:{WEB_PORT} maxconn 32" for h in self.hosts if h.role == "web"
        )
        relays = "\n".join(
            f"listen relay-{port}\n    mode tcp\n    bind {self.gateway}:{port}\n"
            f"    timeout client 1h\n    timeout server 1h\n    server upstream {host}:{upstream}\n"
            for (host, upstream), port in self.relays.items()
        )
        return f"""global
    maxconn 4096
    stats socket {self.dir / "haproxy.sock"} mode 600 level admin

defaults
    timeout connect 5s
    timeout client 120s
    timeout server 120s

frontend web
    mode http
    bind {self.gateway}:{PROXY_PORT}
    option http-keep-alive
    option forwardfor
    # TLS would end here in production: the proxy, not the client, says how the request came.
    http-request set-header X-Forwarded-Proto https
    default_backend webs

backend webs
    mode http
    balance roundrobin
    http-reuse safe
{webs}

{relays}"""

    def _proxy(self) -> None:
        config = self.dir / "haproxy.cfg"
        config.write_text(self.haproxy_config())
        _run("haproxy", "-c", "-q", "-f", str(config))
        proc = self._popen(["haproxy", "-db", "-f", str(config)], self.dir / "haproxy.log", os.environ.copy())
        self.haproxy_pid = proc.pid
        self._save_state()
        ports = [PROXY_PORT, *self.relays.values()]
        wait_for(lambda: all(_listening(self.gateway, p) for p in ports) or _exited(proc), 30, "HAProxy to listen")
        if proc.poll() is not None:
            raise ClusterError(f"haproxy exited with {proc.returncode}; see {self.dir / 'haproxy.log'}")

    def _pgbouncer(self) -> None:
        host, port, user = self.pgbouncer_target
        # PgBouncer refuses to run as root: it drops to the `postgres` user, which must read these files.
        config, users = self.dir / "pgbouncer.ini", self.dir / "userlist.txt"
        users.write_text(f'"{user}" ""\n')
        config.write_text(
            f"""[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = {self.gateway}
listen_port = {PGBOUNCER_PORT}
unix_socket_dir =
auth_type = trust
auth_file = {users}
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 8
reserve_pool_size = 2
ignore_startup_parameters = extra_float_digits,options
log_connections = 0
log_disconnections = 0
"""
        )
        for path in (self.dir, config, users):
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        proc = self._popen(["pgbouncer", "-u", "postgres", str(config)], self.dir / "pgbouncer.log", os.environ.copy())
        wait_for(lambda: _listening(self.gateway, PGBOUNCER_PORT) or _exited(proc), 30, "PgBouncer to listen")
        if proc.poll() is not None:
            raise ClusterError(f"pgbouncer exited with {proc.returncode}: {_tail(self.dir / 'pgbouncer.log')}")

    def _spawn(self, host: Host, env: dict[str, str]) -> None:
        if host.role == "web":
            command = [
                sys.executable, "-m", "gunicorn", "workbench.wsgi",
                "-b", f"{host.address}:{WEB_PORT}", "-k", "gthread",
                "--workers", str(self.gunicorn_workers), "--threads", str(self.gunicorn_threads),
                "--keep-alive", "30", "--timeout", "120",
            ]  # fmt: skip
        else:
            command = [
                sys.executable, "-m", "celery", "-A", "workbench", "worker", "-Q", self.queues,
                "--pool", "solo", "-n", self.worker_name(host), "--loglevel", "INFO",
            ]  # fmt: skip
        proc = self._popen(["ip", "netns", "exec", host.namespace, *command], host.log, env)
        host.pid = proc.pid
        self._save_state()

    def _popen(self, command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
        handle = open(log, "a")
        self._logs.append(handle)
        # A session of its own: stopping it ends its children too (gunicorn's workers), and only them.
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
        self._procs.append(proc)
        self.started.append(proc)
        return proc

    def _wait_ready(self) -> None:
        procs = {p.pid: p for p in self._procs}

        def alive(host: Host) -> None:
            proc = procs[host.pid]
            if proc.poll() is not None:
                raise ClusterError(f"{host.name} exited with {proc.returncode}: {_tail(host.log)}")

        for host in self.hosts:
            if host.role == "web":
                wait_for(
                    lambda: alive(host) or self._answers(host.url),
                    self.start_timeout,
                    f"{host.name} to answer HTTP (log {host.log})",
                )
            else:
                wait_for(
                    lambda: alive(host) or " ready." in host.log.read_text(errors="replace"),
                    self.start_timeout,
                    f"{host.name}'s Celery worker to be ready (log {host.log})",
                )
        wait_for(lambda: self._answers(self.proxy_url), 30, "the proxy to answer")

    def _answers(self, base: str) -> bool:
        request = urllib.request.Request(
            f"{base}/accounts/login/", headers={"Host": self.gateway, "X-Forwarded-Proto": "https"}
        )
        try:
            with _HTTP.open(request, timeout=5) as response:
                return response.status < 500
        except urllib.error.HTTPError as error:
            return error.code < 500
        except OSError:
            return False

    def proxy_stats(self) -> dict[str, int]:
        """Requests HAProxy sent to each web host so far (its stats socket's `stot` per server)."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(self.dir / "haproxy.sock"))
            sock.sendall(b"show stat\n")
            data = b"".join(iter(lambda: sock.recv(65536), b""))
        rows = csv.DictReader(io.StringIO(data.decode().lstrip("# ")))
        return {row["svname"]: int(row["stot"]) for row in rows if row["pxname"] == "webs" and row["svname"] in {
            h.name for h in self.web_hosts}}  # fmt: skip

    def stop(self) -> None:
        """Stop every process this cluster started (workers first: a warm shutdown ends the task in hand),
        then remove its namespaces and bridge. Safe to call twice and after a failed start."""
        errors = []
        # The hosts first, HAProxy and PgBouncer last: a worker's warm shutdown still reaches PostgreSQL.
        for proc in reversed(self._procs):
            with contextlib.suppress(Exception):
                _stop_process(proc)
        for handle in self._logs:
            handle.close()
        self._procs, self._logs = [], []
        errors += _remove_network(self.id)
        with contextlib.suppress(FileNotFoundError):
            (self.dir / "state.json").unlink()
        if errors:
            raise ClusterError("; ".join(errors))

    def _save_state(self) -> None:
        state = {
            "owner": os.getpid(),
            "pids": [p.pid for p in self._procs],
            "namespaces": [h.namespace for h in self.hosts],
            "bridge": self.bridge,
        }
        (self.dir / "state.json").write_text(json.dumps(state))


def _listening(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


def _exited(proc: subprocess.Popen) -> bool:
    return proc.poll() is not None


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    # Children left in the group (a gunicorn worker whose master died first).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _remove_network(cluster_id: str) -> list[str]:
    """Delete the namespaces and the bridge of cluster `cluster_id` (the veth pairs go with them)."""
    errors = []
    namespaces = [line.split()[0] for line in _run("ip", "netns", "list").splitlines() if line.strip()]
    for namespace in namespaces:
        if namespace.startswith(f"{PREFIX}-{cluster_id}-"):
            try:
                _run("ip", "netns", "del", namespace)
            except ClusterError as error:
                errors.append(str(error))
    links = _run("ip", "-o", "link", "show").splitlines()
    for line in links:
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(f"{PREFIX}{cluster_id}"):
            with contextlib.suppress(ClusterError):
                _run("ip", "link", "del", name)
    return errors


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_stale(everything: bool = False) -> list[str]:
    """Tear down what runs whose owner process is gone left behind (all of them with `everything`):
    their own processes (by the pids they recorded), namespaces and bridge. Answers their ids."""
    reaped = []
    for state_file in sorted(RUNS.glob("*/state.json")):
        state = json.loads(state_file.read_text())
        if not everything and _pid_alive(state["owner"]):
            continue
        for pid in state["pids"]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        _remove_network(state_file.parent.name)
        state_file.unlink()
        reaped.append(state_file.parent.name)
    return reaped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a cluster on DATABASE_URL and CELERY_BROKER_URL; Ctrl-C stops it")
    up.add_argument("--webs", type=int, default=2)
    up.add_argument("--workers", type=int, default=2)
    up.add_argument("--gunicorn-workers", type=int, default=2)
    up.add_argument("--threads", type=int, default=16, help="gunicorn threads per worker (the production guide's 16)")
    up.add_argument("--pgbouncer", action="store_true", help="PostgreSQL through PgBouncer in transaction mode")
    sub.add_parser("down", help="tear down what earlier runs left (namespaces, bridge, processes)")
    args = parser.parse_args(argv)
    if args.command == "down":
        print("removed:", ", ".join(reap_stale(everything=True)) or "nothing")
        return 0
    if why := missing_requirements(pgbouncer=args.pgbouncer):
        print(f"cannot start: {why}", file=sys.stderr)
        return 2
    redis = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    cluster = Cluster(
        database_url=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workbench"),
        broker_url=redis,
        result_backend=os.environ.get("CELERY_RESULT_BACKEND", ""),
        cache_url=os.environ.get("WORKBENCH_CACHE_URL", redis),
        env={"DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50)},
        webs=args.webs,
        workers=args.workers,
        gunicorn_workers=args.gunicorn_workers,
        gunicorn_threads=args.threads,
        pgbouncer=args.pgbouncer,
    )
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    with cluster:
        print(f"workbench on {cluster.proxy_url}/ (HTTPS as far as Django knows); logs in {cluster.dir}")
        for host in cluster.hosts:
            print(f"  {host.name:8} {host.namespace:20} {host.address}")
        with contextlib.suppress(KeyboardInterrupt):
            while not stopping:
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
