"""A fork server for the tutorials' `manage.py` commands: Django is imported once, each command runs in
a fresh fork of that process.

The tutorials start about sixty `.venv/bin/python manage.py ...` commands; each new interpreter spent
most of its CPU importing Django, the apps and the analysis libraries before doing its work. Here the
tutorial's folder holds a `.venv/bin/python` stand-in: `manage.py ...` is handed, with the caller's
stdin, stdout and stderr (the descriptors themselves), its working directory, environment and
arguments, to this server, which forks; the child runs the very `manage.py` of the folder as
`__main__` with those arguments, and its exit status is the caller's. Anything else
(`.venv/bin/python - <<EOF`) runs the real interpreter. So the blocks run as written, by bash, and
every command does its work in a process of its own that nothing ran in before: only the imports
are done ahead, never a query, a setting or a command. The start-up of a fresh `manage.py` process is
tested elsewhere (tests/annotations/commands/test_import_commands.py and test_import_commands_hostile.py
run the commands as subprocesses; tests/workbench/test_deploy.py runs `check`).

Run as `python tests/docs/forkserver.py SOCKET` with the environment of the commands; it prints
`ready` once it listens.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import socket
import struct
import sys
import traceback

HEADER = struct.Struct("!Q")  # the length of the JSON request that follows the descriptors


def stand_in(socket_path: str, python: str) -> str:
    """The text of the `.venv/bin/python` stand-in: stdlib only, started without site (`-S`)."""
    return f"""#!{python} -S
import json, os, socket, struct, sys
if sys.argv[1:2] != ["manage.py"]:
    os.execv({python!r}, [{python!r}, *sys.argv[1:]])
request = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.connect({socket_path!r})
socket.send_fds(server, [struct.pack("!Q", len(request))], [0, 1, 2])
server.sendall(request)
answer = b""
while chunk := server.recv(64):
    answer += chunk
if not answer:
    sys.exit("the tutorial fork server's child ended without an exit status")
sys.exit(int(answer))
"""


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the caller hung up")
        data += chunk
    return data


def _run_command(conn: socket.socket, fds: list[int], request: dict) -> None:
    """In the child: become the caller's `python manage.py ...` process, then report its exit status."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as in a fresh process
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    script = os.path.join(request["cwd"], request["argv"][0])
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.realpath(script))  # as `python manage.py` sets it
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    conn.sendall(str(code).encode())


def _preload() -> None:
    """Everything a command imports: Django and its apps, every command of the project's apps, and the
    libraries the analyses import on first use. No connection stays open and no thread runs: a fork
    copies neither."""
    import threading

    import django

    django.setup()
    from django.core.management import get_commands, load_command_class
    from django.db import connections

    for name, app in get_commands().items():
        if app in ("annotations", "metrics"):
            load_command_class(app, name)
    import numpy  # noqa: F401
    import scipy.stats  # noqa: F401

    connections.close_all()
    assert threading.active_count() == 1, threading.enumerate()


def _reap(block: bool) -> None:
    """Waits for finished children (each reports its exit status itself), so their CPU time counts in
    this process's children's, as a command's would in its caller's; `block`: for all of them."""
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(socket_path: str) -> None:
    _preload()
    # SIGTERM (the test's end): wait for the children, then exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(8)
    print("ready", flush=True)
    try:
        _accept(listener)
    finally:
        _reap(block=True)


def _accept(listener: socket.socket) -> None:
    while True:
        _reap(block=False)
        conn, _ = listener.accept()
        header, fds, _, _ = socket.recv_fds(conn, HEADER.size, 3)
        request = json.loads(_read_exactly(conn, HEADER.unpack(header)[0]))
        if os.fork() == 0:
            listener.close()
            try:
                _run_command(conn, fds, request)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
