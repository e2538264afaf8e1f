"""Done metric runs for tests, through the public `run_metric --sync` command."""

import io
import json

from django.core.management import call_command

from metrics.models import MetricRun


def score_dataset(dataset_name: str, metric_name: str, **options) -> MetricRun:
    out = io.StringIO()
    args = ["run_metric", "--dataset", dataset_name, "--metric", metric_name, "--sync", "--no-progress"]
    for k, v in options.items():
        args += ["--option", f"{k}={v}"]
    call_command(*args, stdout=out, stderr=io.StringIO())
    return MetricRun.objects.get(pk=json.loads(out.getvalue())["run"])
