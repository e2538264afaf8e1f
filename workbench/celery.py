import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings.base")

app = Celery("workbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="workbench.ping")
def ping() -> str:
    """Health check: proves a worker consumes the queue."""
    return "pong"
