"""Metric library. No Django imports anywhere in this package, so it can run
in notebooks, scripts and Celery workers alike."""

from metrics.scorers.base import CorpusResult, Metric, SegmentResult
from metrics.scorers.errors import InputError, MetricError, ModelNotAvailable, OptionError, UnknownMetric
from metrics.scorers.registry import available, get_metric, metric_class, register

__all__ = [
    "CorpusResult",
    "InputError",
    "Metric",
    "MetricError",
    "ModelNotAvailable",
    "OptionError",
    "SegmentResult",
    "UnknownMetric",
    "available",
    "get_metric",
    "metric_class",
    "register",
]
