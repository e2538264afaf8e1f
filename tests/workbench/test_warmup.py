"""A web process does its first request's one-off work while it starts (issue 45, workbench.warmup).

At 1M outputs the first request of a process took 2-3 s (bench_pages, "project page" first load): it
imported the URLconf and every view, filled the URL resolver's reverse tables and compiled the frame
template. Pinned by what a fresh process holds once it imported the WSGI application, before any
request: not by time."""

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

PROBE = """
import json, sys
import workbench.wsgi  # what gunicorn imports
from django.template import engines
from django.urls import get_resolver

resolver = get_resolver()
loader = engines["django"].engine.template_loaders[0]
print(json.dumps({
    "urlconf": "workbench.urls" in sys.modules,
    "views": "annotations.views" in sys.modules and "annotations.apis.campaigns" in sys.modules,
    "reverse": resolver._populated,
    "frame": "base.html" in loader.get_template_cache,
}))
"""


def test_the_wsgi_application_is_warm_before_its_first_request():
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="workbench.settings.test")
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "urlconf": True,
        "views": True,
        "reverse": True,
        "frame": True,
    }
