"""The production set-up of docs/how-to/scaling-out.md, run as written: collectstatic, then its
gunicorn command with production settings (DJANGO_DEBUG unset), behind a
TLS-terminating proxy that sets X-Forwarded-Proto (a small one started
here). A real browser then finds styled pages, working API docs, the
favicon, and nothing blocked by the Content-Security-Policy.
"""

import os
import re
import secrets
import select
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connection

from tests.browser.conftest import Snapshot, log_in, next_screen, open_unit
from tests.browser.test_csp_and_layout import LISTEN
from tests.conftest import ROOT
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


# The production set-up users are told to run (the how-to the README links to).
PRODUCTION_GUIDE = ROOT / "docs" / "how-to" / "scaling-out.md"


def readme_command(prefix: str) -> list[str]:
    """The guide's shell line that starts with `prefix` (so the test runs what users are told to run)."""
    for line in PRODUCTION_GUIDE.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith(prefix):
            return shlex.split(line.split("#")[0])
    raise AssertionError(f"{PRODUCTION_GUIDE.relative_to(ROOT)} has no command starting with {prefix!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TLSProxy(threading.Thread):
    """Terminates TLS and forwards to the app with `X-Forwarded-Proto: https`, as nginx would.

    Like nginx's default (HTTP/1.0 to the upstream), each upstream connection
    carries one request (`Connection: close`), so adding the header to the
    head of each connection's request is enough, even with gunicorn's
    keep-alive gthread workers.
    """

    def __init__(self, cert: Path, key: Path, upstream: int):
        super().__init__(daemon=True)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()

    def run(self):
        self.listener.settimeout(0.5)
        while not self.stopped.is_set():
            try:
                raw, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed by stop()
                return
            threading.Thread(target=self.serve, args=(raw,), daemon=True).start()

    def serve(self, raw: socket.socket):
        client = upstream = None
        try:
            client = self.context.wrap_socket(raw, server_side=True)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            request_line, rest = head.split(b"\r\n", 1)
            # Whatever the client claims is replaced, as a proxy must.
            rest = re.sub(rb"(?im)^(x-forwarded-proto|connection):.*\r\n", b"", rest)
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            upstream.sendall(request_line + b"\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n" + rest)
            sockets = [client, upstream]
            while True:
                readable, _, _ = select.select(sockets, [], [], 30)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is client else client).sendall(data)
        except (OSError, ssl.SSLError):
            return
        finally:
            for sock in (upstream, client or raw):
                if sock is not None:
                    sock.close()

    def stop(self):
        self.stopped.set()
        self.listener.close()


def _production_env(static_root: Path) -> dict:
    """The environment of a production host: none of the tests' DJANGO_/WORKBENCH_ settings."""
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "WORKBENCH_"))}
    env.update(
        DJANGO_READ_DOT_ENV_FILE="0",  # a production host has no `make run` .env
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        WORKBENCH_STATIC_ROOT=str(static_root),
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
    )
    return env


def _manage(env: dict, *step: str) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", *step], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def production_files(tmp_path_factory, collected_static):
    """What does not change between this module's tests, made once: the collected static files
    (collectstatic, as the guide runs it: `collected_static`, once per session) and the proxy's
    TLS certificate. The database does (each test ends flushed): the first test runs the guide's
    `load_demo`, and a snapshot of what it wrote (tests/browser/conftest.py) puts it back for the next."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is absent: it makes the test's TLS certificate")
    root = tmp_path_factory.mktemp("production")
    cert, key = root / "cert.pem", root / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return {"static": collected_static, "cert": cert, "key": key, "demo": None}


@pytest.fixture
def production_server(tmp_path, production_files):
    """gunicorn started by the guide's command line, with production settings, behind the TLS proxy."""
    port = free_port()
    env = _production_env(production_files["static"])
    # The set-up step as an operator runs it (the demo users get production's password hashes), once
    # per module: the same rows, ids and hashes included, are copied back for the next test.
    if production_files["demo"] is None:
        _manage(env, "load_demo")
        connection.ensure_connection()
        production_files["demo"] = Snapshot()
    else:
        production_files["demo"].restore()
    command = readme_command("gunicorn workbench.wsgi")
    bind = command.index("-b") + 1
    command[bind] = f"127.0.0.1:{port}"
    log = open(tmp_path / "gunicorn.log", "w")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    cert, key = production_files["cert"], production_files["key"]
    proxy = TLSProxy(cert, key, port)
    proxy.start()
    try:

        def listening() -> bool:
            assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        wait_until(listening, 60, "gunicorn to listen", interval=0.3)
        yield {"https": f"https://127.0.0.1:{proxy.port}", "http": f"http://127.0.0.1:{port}"}
    finally:
        proxy.stop()
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_readme_production_command_serves_styled_pages_and_api_docs(new_page, production_server, screenshot_dir):
    base = production_server["https"]
    # Plain HTTP straight to gunicorn (no proxy header) is sent to HTTPS.
    request = urllib.request.Request(production_server["http"] + "/accounts/login/", method="GET")
    opener = urllib.request.build_opener(
        type("NoRedirect", (urllib.request.HTTPRedirectHandler,), {"redirect_request": lambda *a, **k: None})
    )
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(request, timeout=60)  # a cap, not a wait: CI may be busy
    assert redirect.value.code == 301 and redirect.value.headers["Location"].startswith("https://")

    # The fixture's page: it waits for `load` after each navigation (styles read after that are the
    # stylesheet's), and fails the test if anything outside `base` is requested.
    page = new_page(base_url=base, ignore_https_errors=True, viewport={"width": 1280, "height": 800})
    page.set_default_timeout(60_000)  # a cap: gunicorn behind the TLS proxy on a busy CI machine
    page.add_init_script(LISTEN)
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    response = page.goto("/accounts/login/")
    assert response.headers["strict-transport-security"].startswith("max-age=")
    assert "default-src 'self'" in response.headers["content-security-policy"]
    # Styled: the stylesheet (collected, hashed, served by WhiteNoise) applies.
    css = page.locator("link[rel=stylesheet][href*=workbench]").get_attribute("href")
    assert re.fullmatch(r"/static/css/workbench\.[0-9a-f]{12}\.css", css), css
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(245, 246, 248)"
    assert page.evaluate("getComputedStyle(document.querySelector('.topbar')).backgroundColor") == "rgb(22, 27, 46)"
    static = page.request.get(css)
    assert static.status == 200 and "max-age=315360000" in static.headers["cache-control"]

    page.get_by_label("Username").fill("demo")
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name="demo-news-de-en").first.click()
    page.locator('[data-stat="items"]').wait_for()
    assert page.evaluate("getComputedStyle(document.querySelector('.stat')).borderRadius") == "10px"
    page.screenshot(path=screenshot_dir / "production-dataset.png", full_page=True)

    page.goto("/api/docs/")
    page.locator(".opblock").first.wait_for()
    assert page.locator(".opblock").count() >= 10
    page.screenshot(path=screenshot_dir / "production-swagger.png")
    page.goto("/api/redoc/")
    page.get_by_text("NLG evaluation workbench API").first.wait_for()
    assert page.request.get("/favicon.ico").status == 200  # after the redirect to the collected icon

    assert page.evaluate("window.__csp") == []
    assert not failed, failed


def test_an_annotator_submits_units_on_the_production_server(new_page, production_server, screenshot_dir):
    """The annotate page's submits as gunicorn serves them behind the TLS proxy: answered by the fast
    lane (annotations.views.submit_lane), with the session, the CSRF header and the browser's Referer
    checked over HTTPS; each answer stored, the next unit drawn in place."""
    from annotations.models import Assignment, Campaign, RatingJudgement

    campaign = Campaign.objects.get(name="Demo restaurants: fluency and adequacy")
    page = new_page(
        base_url=production_server["https"], ignore_https_errors=True, viewport={"width": 390, "height": 844}
    )
    page.set_default_timeout(60_000)  # a cap: gunicorn behind the TLS proxy on a busy CI machine
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    log_in(page, "annot", "annot")
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    documents = []
    page.on("request", lambda r: documents.append(r.url) if r.resource_type == "document" else None)
    done = []
    for step in range(2):
        pk = int(page.locator("body").get_attribute("data-assignment"))
        page.keyboard.press("3")  # fluency 3, then the adequacy slider (focused) one step
        page.keyboard.press("ArrowRight")
        with next_screen(page):
            page.keyboard.press("Enter")
        done.append(pk)
    page.screenshot(path=screenshot_dir / "production-annotate-390.png", full_page=True)
    assert documents == [] and not failed, (documents, failed)
    assignments = Assignment.objects.filter(pk__in=done)
    assert sorted(a.status for a in assignments) == ["done", "done"]
    stored = RatingJudgement.objects.filter(assignment_id__in=done, status="complete", origin="browser")
    scores = {criterion: {j.score for j in stored if j.criterion == criterion} for criterion in ("fluency", "adequacy")}
    assert scores["fluency"] == {3.0} and len(scores["adequacy"]) == 1, scores  # the keys pressed, on every unit
    assert stored.count() == sum(2 * len(a.shown_order) for a in assignments)
