"""The Django project.

The Celery app (`workbench.celery`) is loaded when Django starts (`annotations.apps`) and by
`celery -A workbench`, not by importing this package: the pure libraries that import from it
(`metrics.scorers` raises `workbench.exceptions.DomainError`s) and `python -m metrics.score` would
otherwise pay for importing Celery, kombu and part of Django before scoring a line.
"""


def __getattr__(name: str):
    if name == "celery_app":
        from .celery import app  # lazy: Celery loads on first use, not with the package

        return app
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
