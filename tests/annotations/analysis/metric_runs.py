"""Done metric runs for tests, scored with the metrics library directly.

Stand-in for the public `run_metric --sync` command until the metric-runs
issue is merged: the scores are the library's (sacrebleu / jiwer equivalents),
stored the way a finished run stores them.
"""
from django.utils import timezone

from annotations.models import Dataset, Output
from metrics.models import MetricRun, OutputScore, RunStatus
from metrics.scorers.registry import get_metric


def score_dataset(dataset_name: str, metric_name: str, **options) -> MetricRun:
    try:
        from django.core.management import call_command, get_commands
        if "run_metric" in get_commands():
            import io
            import json
            out = io.StringIO()
            args = ["run_metric", "--dataset", dataset_name, "--metric", metric_name, "--sync", "--json"]
            for k, v in options.items():
                args += ["--option", f"{k}={v}"]
            call_command(*args, stdout=out)
            return MetricRun.objects.get(pk=json.loads(out.getvalue())["run"])
    except ImportError:  # pragma: no cover
        pass
    dataset = Dataset.objects.get(name=dataset_name)
    metric = get_metric(metric_name, **options)
    outputs = list(Output.objects.filter(item__dataset=dataset).select_related("item", "system")
                   .prefetch_related("item__references").order_by("id"))
    hyps = [o.text for o in outputs]
    refs = [[r.text for r in o.item.references.all()] for o in outputs]
    srcs = [o.item.source for o in outputs]
    segments = metric.score(hyps, refs, srcs)
    systems = {}
    for name in sorted({o.system.name for o in outputs}):
        chosen = [s for s, o in zip(segments, outputs) if o.system.name == name]
        systems[name] = metric.corpus_score(chosen).score
    run = MetricRun.objects.create(
        dataset=dataset, metric=metric_name, options=options, signature=metric.signature(),
        higher_is_better=metric.higher_is_better, status=RunStatus.DONE, sync=True, total=len(outputs),
        done=len(outputs), started_at=timezone.now(), finished_at=timezone.now(),
        corpus={"score": metric.corpus_score(segments).score, "systems": systems})
    OutputScore.objects.bulk_create(
        OutputScore(run=run, output=o, score=s.score, extra=s.extra, stats=s.stats) for o, s in zip(outputs, segments))
    return run
