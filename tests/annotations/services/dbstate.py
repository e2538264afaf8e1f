"""Row counts of every table, to assert that a failed import wrote nothing."""

from django.apps import apps


def table_counts() -> dict[str, int]:
    counts = {}
    for app_label in ("annotations", "auth"):
        for model in apps.get_app_config(app_label).get_models():
            counts[model._meta.db_table] = model.objects.count()
    return counts
