"""What the run form offers: metrics with their options and defaults, and, for each
model metric, the local models a worker can load that suit it (the packaged MiniLM,
WORKBENCH_MODELS and the model directories under WORKBENCH_MODEL_DIRS, by kind)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.conf import settings

from metrics.scorers import available, metric_class
from metrics.scorers.loading import DEFAULT_EMBEDDING_MODEL, local_models
from metrics.services.common import jsonable


@lru_cache(maxsize=1)
def metric_catalogue() -> dict[str, dict[str, Any]]:
    out = {}
    for name in available():
        try:
            cls = metric_class(name)
        except ImportError:  # library not installed here: not offered
            continue
        out[name] = {
            "uses_model": cls.uses_model,
            "model_kinds": sorted(cls.model_kinds) if "model" in cls.defaults else [],
            "level": cls.level,
            "options": jsonable({k: v for k, v in cls.defaults.items() if k not in cls.speed_options}),
        }
    return out


def model_choices() -> list[str]:
    configured = sorted((getattr(settings, "WORKBENCH_MODELS", None) or {}).keys())
    return [DEFAULT_EMBEDDING_MODEL] + [m for m in configured if m != DEFAULT_EMBEDDING_MODEL]


def models_by_metric() -> dict[str, list[dict]]:
    """{metric: [{"name", "kind", "architecture"}]}: the local models whose kind the metric
    takes (a judge is offered causal LMs only, NLI classifiers, the embedding metrics
    encoders). Listed on each page load: a directory copied in shows without a restart."""
    models = local_models()
    out = {}
    for name, entry in metric_catalogue().items():
        kinds = set(entry["model_kinds"])
        if kinds:
            out[name] = [m for m in models if m["kind"] in kinds or m["kind"] == "unknown"]
    return out
