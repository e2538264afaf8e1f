"""What the run form offers: metrics with their options and defaults, and the
models a worker can load (the packaged MiniLM plus WORKBENCH_MODELS)."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.conf import settings

from metrics.scorers import available, metric_class
from metrics.scorers.loading import DEFAULT_EMBEDDING_MODEL
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
            "level": cls.level,
            "options": jsonable({k: v for k, v in cls.defaults.items() if k not in cls.speed_options}),
        }
    return out


def model_choices() -> list[str]:
    configured = sorted((getattr(settings, "WORKBENCH_MODELS", None) or {}).keys())
    return [DEFAULT_EMBEDDING_MODEL] + [m for m in configured if m != DEFAULT_EMBEDDING_MODEL]
