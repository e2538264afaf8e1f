"""Metrics by name. Entries are import paths, so listing metrics imports
neither torch nor any model: a module is imported when its metric is used."""

from __future__ import annotations

import importlib
from typing import Any

from metrics.scorers.base import Metric
from metrics.scorers.errors import UnknownMetric

_REGISTRY: dict[str, str] = {
    "bleu": "metrics.scorers.sacrebleu_metrics:BLEUMetric",
    "chrf": "metrics.scorers.sacrebleu_metrics:CHRFMetric",
    "ter": "metrics.scorers.sacrebleu_metrics:TERMetric",
    "rouge": "metrics.scorers.rouge:RougeMetric",
    "wer": "metrics.scorers.errorrate:WERMetric",
    "cer": "metrics.scorers.errorrate:CERMetric",
    "sari": "metrics.scorers.sari:SARIMetric",
    "distinct-n": "metrics.scorers.diversity:DistinctNMetric",
    "self-bleu": "metrics.scorers.diversity:SelfBLEUMetric",
    "ttr": "metrics.scorers.diversity:TypeTokenRatioMetric",
    "bertscore": "metrics.scorers.bertscore:BERTScoreMetric",
    "semdist": "metrics.scorers.semdist:SemDistMetric",
    "simplicity-bertscore": "metrics.scorers.simplicity:SimplicityBERTScoreMetric",
    "relbertscore": "metrics.scorers.simplicity:RelBERTScoreMetric",
    "yisi0": "metrics.scorers.yisi:YiSi0Metric",
    "yisi1": "metrics.scorers.yisi:YiSi1Metric",
    "yisi2": "metrics.scorers.yisi:YiSi2Metric",
    "nli": "metrics.scorers.nli:NLIMetric",
    "minwed": "metrics.scorers.mined:MinWEDMetric",
    "mincer": "metrics.scorers.mined:MinCERMetric",
    "llm-judge": "metrics.scorers.llm_judge:LLMJudgeMetric",
    "comet": "metrics.scorers.comet:CometMetric",
    "cometkiwi": "metrics.scorers.comet:CometKiwiMetric",
    "xcomet": "metrics.scorers.comet:XCometMetric",
    "metricx": "metrics.scorers.metricx:MetricXMetric",
}


def register(name: str, target: str) -> None:
    """Plug in a new metric: `register("mymetric", "pkg.module:MyMetric")`."""
    _REGISTRY[name] = target


def available() -> list[str]:
    return sorted(_REGISTRY)


def metric_class(name: str) -> type[Metric]:
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise UnknownMetric(f"unknown metric {name!r}; available: {', '.join(available())}") from None
    module_name, _, class_name = target.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def get_metric(name: str, **options: Any) -> Metric:
    return metric_class(name)(**options)
