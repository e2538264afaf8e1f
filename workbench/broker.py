"""The Celery app, loaded when a task is first sent (issue 45: a web worker's memory).

The services send tasks by name (`celery_app.send_task(NAME, ...)`). Celery with kombu, click,
billiard and the Redis client is about 10 MB and 200 modules per web worker, and the annotation
requests never send a task: the web process loads it on the first send (a campaign's planning,
an import, an export, a metric run), the Celery worker at its start (`celery -A workbench`).
Every attribute is read from the one app each time, so a test that patches `send_task` on
`workbench.celery.app` patches it here too.
"""

from __future__ import annotations

import importlib


class _LazyCeleryApp:
    def __getattr__(self, name: str):
        return getattr(importlib.import_module("workbench.celery").app, name)

    def __repr__(self) -> str:
        return "<the Celery app of workbench.celery, loaded on first use>"


celery_app = _LazyCeleryApp()
