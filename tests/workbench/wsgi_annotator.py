"""One crowd annotator served by the WSGI application, in a fresh process: what a web worker loads.

    python tests/workbench/wsgi_annotator.py JOIN_TOKEN UNITS

Imports `workbench.wsgi` as gunicorn does, then walks a join link as the browser does (the join
page, its Start button, the unit page, UNITS submits through the page's JSON submit), calling the
application directly with WSGI environs (no test client: `django.test` would itself load modules
the check looks for). Prints one JSON line: the heavy modules in `sys.modules`, the units stored,
the process's RSS (MB) after importing the application and after serving. Used by
tests/workbench/test_worker_modules.py and bench_capacity.py's memory figure (the environment
gives the production settings and the database).
"""

from __future__ import annotations

import io
import json
import re
import sys
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# Libraries a web worker does not need for the annotation path (pages and tasks that need them
# import them on first use: workbench.lazy, workbench.broker). Still loaded at start-up, and not
# listed: drf_spectacular's AutoSchema with django.test and jinja2 (about 8 MB; every
# `extend_schema` decorator of the API modules builds its schema class at import) and the Redis
# client (the production cache needs it anyway).
HEAVY = ("torch", "transformers", "scipy", "pandas", "plotly", "sklearn", "sacrebleu", "numpy", "celery.app")
UNIT_CONFIG = re.compile(r'<script id="unit-config" type="application/json">(.*?)</script>', re.S)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Browser:
    def __init__(self, application):
        self.app, self.cookies = application, {}

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
            "HTTP_X_FORWARDED_PROTO": "https",  # behind the TLS proxy
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


def main(token: str, units: int) -> None:
    from workbench.wsgi import application  # lazy: the measured import, after the RSS baseline

    after_import = rss_mb()
    browser = Browser(application)
    join = f"/join/{token}/"
    status, _, _ = browser.request("GET", join + "?annotator=probe-1")
    assert status == 200, status
    form = urlencode({"annotator": "probe-1", "csrfmiddlewaretoken": browser.cookies["csrftoken"]}).encode()
    status, location, page = browser.request("POST", join, form, "application/x-www-form-urlencoded")
    assert status == 302, (status, page[:300])
    status, _, page = browser.request("GET", urlsplit(location).path)
    assert status == 200, (status, page[:300])
    config = json.loads(UNIT_CONFIG.search(page).group(1))
    stored = 0
    for _ in range(units):
        judgements = [
            {
                "criterion": criterion["name"] if isinstance(criterion, dict) else criterion,
                "output": o["id"],
                "score": 3,
            }
            for o in config["outputs"]
            for criterion in config["criteria"]
        ]
        body = json.dumps({"judgements": judgements, "shown_order": config["shown_order"], "time_spent_ms": 9000})
        status, _, answer = browser.request(
            "POST",
            config["submit_url"],
            body.encode(),
            "application/json",
            {"X-CSRFToken": browser.cookies["csrftoken"]},
        )
        assert status == 201, (status, answer[:300])
        stored += 1
        unit = json.loads(answer).get("unit")
        if not unit:
            break
        config = unit["config"]
    loaded = sorted(m for m in HEAVY if m in sys.modules)
    print(json.dumps({"heavy": loaded, "units": stored, "rss_import_mb": after_import, "rss_mb": rss_mb()}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
