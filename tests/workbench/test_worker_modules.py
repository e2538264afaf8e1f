"""What a web worker holds for the annotation path (issue 45 part 5).

Every gunicorn worker imports the whole application; what it imports at start-up or on the
annotation path stays in its memory for its life, once per worker. The heavy libraries below
serve pages and tasks a crowd annotator never reaches (analysis, API docs, metric runs, the
broker's client), so they load on first use there. Pinned by the modules present after a fresh
process imported the WSGI application and served a join visitor three units, not by megabytes.
"""

import json
import os
import secrets
import subprocess
import sys

from django.db import connection

from annotations.services.campaigns import campaign_create
from annotations.studies.services import join_link_create
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.conftest import ROOT

SCRIPT = ROOT / "tests" / "workbench" / "wsgi_annotator.py"


def production_env(static_root) -> dict:
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "WORKBENCH_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="workbench.settings.base",
        DJANGO_READ_DOT_ENV_FILE="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        # The pages name their static files by the manifest collectstatic writes, as in production
        # (`collected_static`, tests/conftest.py: collected once per session).
        WORKBENCH_STATIC_ROOT=str(static_root),
    )
    return env


def test_a_web_worker_serving_annotators_never_loads_the_heavy_libraries(transactional_db, collected_static):
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"sys-{k}") for k in range(2)]
    for i in range(4):
        item = ItemFactory(dataset=dataset)
        for system in systems:
            OutputFactory(item=item, system=system)
    campaign = campaign_create(
        dataset=dataset, name="memory", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5
    )
    link = join_link_create(campaign=campaign)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), link.token, "3"],
        cwd=ROOT,
        env=production_env(collected_static),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["units"] == 3  # the path was really served: join, unit page, three submits
    assert found["heavy"] == []
