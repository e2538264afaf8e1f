"""Helpers shared by the run and chunk services."""

from __future__ import annotations

import math
from typing import Any

import psycopg
from django.db import InterfaceError, OperationalError

from metrics.models import MetricRun
from metrics.scorers import get_metric
from metrics.scorers.base import Metric

# Errors worth retrying: the database or the broker was briefly unreachable.
# Everything else (bad options, missing model, bad input, CUDA out of memory)
# fails the run with its message instead of being retried blindly.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)
# psycopg's own, as raised by COPY (run through psycopg's cursor, which Django does not wrap).
TRANSIENT_ERRORS += (psycopg.OperationalError, psycopg.InterfaceError)
try:  # broker connection errors (kombu wraps redis/amqp ones in its OperationalError)
    from kombu.exceptions import OperationalError as KombuOperationalError
    from redis.exceptions import ConnectionError as RedisConnectionError, TimeoutError as RedisTimeoutError

    TRANSIENT_ERRORS += (KombuOperationalError, RedisConnectionError, RedisTimeoutError)
except ImportError:  # pragma: no cover - kombu and redis are requirements
    pass


def build_metric(run: MetricRun) -> Metric:
    """The run's metric with its stored options and shared state loaded."""
    metric = get_metric(run.metric, **(run.options or {}))
    return metric


def metric_inputs(metric: Metric, inputs) -> dict[str, Any]:
    """Keyword arguments for score()/corpus_state(): only what the metric reads,
    so items without references do not break reference-free metrics."""
    refs = inputs.refs if metric.needs_refs or all(inputs.refs) else None
    kwargs = {
        "refs": refs,
        "srcs": inputs.srcs if metric.needs_source else None,
        "data": inputs.data if metric.needs_data else None,
    }
    if getattr(metric, "needs_items", False):  # pairwise judges: which outputs share an item
        kwargs["items"] = inputs.item_ids
    return kwargs


def jsonable(value: Any) -> Any:
    """Plain JSON: NaN/inf become null, numpy/torch values plain numbers and lists."""
    kind = type(value)
    if kind is int or kind is str or value is None:
        return value
    if (kind is list or kind is tuple) and all(type(v) is int for v in value):  # statistics: counts
        return list(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    return value


def one_line(exc: BaseException) -> str:
    """A user-facing message: the exception's first line, no traceback."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:1000]
