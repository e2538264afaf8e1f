"""What a web process does once at start, so that its first request does not (issue 45).

Django imports the URLconf (every view module and what they import: DRF, drf-spectacular, the
analysis pages' modules), fills the URL resolver's reverse tables and compiles each template on
the first request that needs them. At 1M outputs that made the first request of a process 2-3 s
(`bench/bench_pages.py`, "project page" first load), paid by whichever researcher came first
after each gunicorn worker (re)start. `warm_up` does the same work while the process starts
(`workbench.wsgi` calls it), where nobody waits on it.

It loads nothing a request would not load anyway: the URLconf is imported by the first request of
any kind, annotators' included, and the templates compiled here are those of the staff pages'
frame (`base.html` and the template tags every page loads), whose modules are already imported by
the URLconf. The heavy libraries stay deferred (tests/workbench/test_worker_modules.py).
"""

from __future__ import annotations

from django.template import engines
from django.urls import get_resolver

# The frame every staff page extends: compiled (and its tag libraries loaded) once per process,
# kept by the cached template loader.
FRAME_TEMPLATES = ("base.html",)


def warm_up() -> None:
    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 - imports the URLconf and with it every view module
    # `reverse` fills these on first use, walking every included URLconf (a third of a second).
    resolver.reverse_dict  # noqa: B018
    resolver.namespace_dict  # noqa: B018
    for engine in engines.all():
        for name in FRAME_TEMPLATES:
            engine.get_template(name)
