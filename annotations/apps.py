from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotations"

    def ready(self) -> None:
        # The project's Celery app, so that the shared tasks of every app send to its broker
        # (workbench/__init__.py no longer imports it: see there).
        import workbench.celery  # noqa: F401
