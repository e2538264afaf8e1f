import sys

from django.apps import AppConfig


def token_rows_on_change(sender, instance, **kwargs) -> None:
    """Drops a saved or deleted token's or user's cached rows, where a cache is: it lives in
    annotations.permissions, so a process that never imported that module (a management command) has
    none. Importing it only to find it empty would cost every command DRF's import (~0.25 s of CPU)."""
    permissions = sys.modules.get("annotations.permissions")
    if permissions is not None:
        permissions.token_rows_on_change(sender, instance, **kwargs)


class AnnotationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotations"

    def ready(self) -> None:
        # The Celery app is not loaded here: the web process sends tasks by name through
        # workbench.broker, which loads it on the first send (issue 45: a web worker's memory);
        # `celery -A workbench` loads it in the worker.
        # The API's token lookups are cached a few seconds (annotations.permissions): a token or
        # user saved or deleted here is looked up afresh at once.
        from django.contrib.auth import get_user_model  # lazy: Django app registry not ready before ready()
        from django.db.models.signals import post_delete, post_save  # lazy: app registry not ready
        from rest_framework.authtoken.models import Token  # lazy: Django app registry not ready before ready()

        for model in (Token, get_user_model()):
            post_save.connect(token_rows_on_change, sender=model, dispatch_uid=f"token-rows-{model._meta.label}")
            post_delete.connect(token_rows_on_change, sender=model, dispatch_uid=f"token-rows-del-{model._meta.label}")
        # So is the user of a session (workbench.auth).
        from workbench.auth import user_rows_on_change  # lazy: Django app registry not ready before ready()

        post_save.connect(user_rows_on_change, sender=get_user_model(), dispatch_uid="session-user-rows")
        post_delete.connect(user_rows_on_change, sender=get_user_model(), dispatch_uid="session-user-rows-del")
