"""COMET (Rei et al. 2022) and CometKiwi (Rei et al. 2022b) from local checkpoints, equal to
unbabel-comet 2.2.7 at inference, with torch and transformers only.

A COMET checkpoint is the directory users download from the model hub:
`hparams.yaml` (the architecture) and `checkpoints/model.ckpt` (a Lightning checkpoint whose
`state_dict` holds every weight, the encoder's included). The encoder's config and tokenizer come
from a local directory: option `encoder`, else the hparams' `pretrained_model` name looked up in
WORKBENCH_MODELS (e.g. `{"xlm-roberta-large": "/models/xlm-roberta-large"}`). Nothing is
downloaded.

`comet` (class_identifier `regression_metric`, e.g. Unbabel/wmt22-comet-da): source, output and
reference are encoded separately; every encoder layer is mixed by a layer-wise attention (softmax
or sparsemax of learned scalars, each layer normalised over its real tokens), average-pooled over
the real tokens, and the feed-forward estimator reads
[mt; ref; mt*ref; |mt-ref|; mt*src; |mt-src|].

`cometkiwi` (class_identifier `unified_metric`, e.g. Unbabel/wmt22-cometkiwi-da): one sequence
`<s> mt </s></s> src </s>` (with a reference as a third part when the checkpoint's
`input_segments` name it and the dataset has one: then the score is the mean of the [mt, src],
[mt, ref] and [mt, src, ref] scores, as the reference does), mixed layers, the first token's vector
into the estimator.

Differences from the reference, all below 1e-6 on its tests: identical texts are encoded once
(`comet`), and batches are grouped by length in our own way (padding changes float rounding only).
Inputs longer than the encoder allows are truncated as the reference truncates them, and the
segment says so (`truncated: true`, plus a logged warning), never silently.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from metrics.scorers import files
from metrics.scorers.base import Metric, SegmentResult, Triple
from metrics.scorers.batches import length_batches, pad_batch
from metrics.scorers.errors import InputError, ModelNotAvailable, OptionError
from metrics.scorers.loading import (
    LazyModule,
    compute_dtype_name,
    configured_models,
    pick_device,
    resolve_model_path,
    torch_dtype,
)
from metrics.scorers.progress import step

torch = LazyModule("torch")  # imported on first use (see LazyModule)

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = Path("checkpoints") / "model.ckpt"
MAX_HPARAMS_BYTES = 1 << 20


# ---- the checkpoint -----------------------------------------------------------------------------
def resolve_checkpoint_dir(name: str | None) -> Path:
    """The COMET checkpoint directory (`hparams.yaml` + `checkpoints/model.ckpt`) that `model`
    names: a name in WORKBENCH_MODELS or a directory inside WORKBENCH_MODEL_DIRS."""
    if not name:
        raise OptionError(
            "model: give model=DIR, the COMET checkpoint directory (hparams.yaml + checkpoints/model.ckpt)"
        )
    name = files.check_syntax("model", name)
    configured = configured_models()
    path = Path(configured[name]).expanduser() if name in configured else files.resolve("model", name, kind="model")
    if not (path / "hparams.yaml").is_file() or not (path / CHECKPOINT_FILE).is_file():
        raise ModelNotAvailable(
            f"model {name[:200]!r}: not a COMET checkpoint directory (it needs hparams.yaml and "
            "checkpoints/model.ckpt, as downloaded from the model hub)"
        )
    return path.resolve()


def read_hparams(path: Path) -> dict[str, Any]:
    import yaml  # lazy: yaml loads only when this metric runs

    file = path / "hparams.yaml"
    if file.stat().st_size > MAX_HPARAMS_BYTES:
        raise ModelNotAvailable("hparams.yaml is larger than 1 MB")
    try:
        value = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ModelNotAvailable(f"hparams.yaml is not readable YAML ({type(exc).__name__})") from None
    if not isinstance(value, dict):
        raise ModelNotAvailable("hparams.yaml is not a mapping")
    return value


def file_digest(path: Path) -> str:
    """sha256 of the checkpoint file, first 12 hex digits (the signature's `ckpt` field); computed
    once per file version and process (an xCOMET-XXL checkpoint is tens of GB)."""
    info = path.stat()
    return _digest(str(path), info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=64)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:12]


def sparsemax(weights: torch.Tensor) -> torch.Tensor:
    """Sparsemax of a 1-D tensor (Martins & Astudillo 2016), what entmax.sparsemax computes:
    the Euclidean projection onto the simplex. Written here because it runs once per batch on
    a vector of layer weights; a dependency for it would be heavier than these lines.

    >>> import torch
    >>> sparsemax(torch.tensor([0.0, 0.5, 0.75])).tolist()
    [0.0, 0.375, 0.625]
    """
    z, _ = torch.sort(weights, descending=True)
    cumsum = z.cumsum(0) - 1
    ks = torch.arange(1, z.numel() + 1, device=weights.device, dtype=weights.dtype)
    support = (z - cumsum / ks) > 0
    k = support.sum()
    tau = cumsum[k - 1] / k.to(weights.dtype)
    return torch.clamp(weights - tau, min=0)


def _activation(name: str) -> Any:
    # The reference accepts any torch.nn module named like `name.title()` (Tanh, Sigmoid, ...).
    module = getattr(torch.nn, str(name).title(), None)
    if module is None:
        raise ModelNotAvailable(f"hparams.yaml: unknown activation {name!r}")
    return module()


def feed_forward(in_dim: int, hidden_sizes: Sequence[int], activation: str, final: str | None) -> Any:
    """The estimator as an nn.Sequential whose indices match the reference's `estimator.ff.N`
    (Linear, activation, Dropout per hidden layer, then Linear and the final activation)."""
    nn = torch.nn
    sizes = [in_dim, *[int(h) for h in hidden_sizes]]
    layers: list[Any] = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), _activation(activation), nn.Dropout(0.0)]
    layers.append(nn.Linear(sizes[-1], 1))
    if final:
        layers.append(_activation(final))
    return nn.Sequential(*layers)


@dataclass
class CometModel:
    """A loaded checkpoint: encoder, layer mix and estimator, ready for inference."""

    kind: str
    hparams: dict[str, Any]
    encoder: Any
    tokenizer: Any
    scalars: Any  # layer-mix weights before softmax/sparsemax, or None for a fixed layer
    gamma: Any
    estimator: Any
    device: str
    dtype: Any
    ckpt_digest: str
    encoder_name: str
    tagger: Any = None  # xCOMET: the word-level head (hidden2tag), on hidden state `word_layer`
    word_layer: int | None = None

    @property
    def max_positions(self) -> int:
        # The reference's BERTEncoder.max_positions: position embeddings minus RoBERTa's offset.
        return int(self.encoder.config.max_position_embeddings) - 2

    def encode_layers(self, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The sentence-level token vectors: the learned mix of every hidden state (embeddings
        included), or one layer; float32 from the mix on."""
        return self._mix(self._hidden_states(input_ids, mask), mask)

    def _hidden_states(self, input_ids: torch.Tensor, mask: torch.Tensor) -> tuple:
        out = self.encoder(input_ids=input_ids, attention_mask=mask, output_hidden_states=True, return_dict=True)
        return out.hidden_states

    def encode_tagged(self, input_ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """xCOMET: the first token's mixed vector (for the estimator) and the word-level logits
        (hidden2tag on hidden state `word_layer`, every position), both float32."""
        layers = self._hidden_states(input_ids, mask)
        logits = self.tagger(layers[int(self.word_layer)].float())
        return self._mix(layers, mask)[:, 0, :], logits

    def _mix(self, layers: tuple, mask: torch.Tensor) -> torch.Tensor:
        if self.scalars is None:
            return layers[int(self.hparams.get("layer", self.hparams.get("sent_layer")))].float()
        transform = str(self.hparams.get("layer_transformation") or "softmax")
        weights = sparsemax(self.scalars) if transform == "sparsemax" else torch.softmax(self.scalars, dim=0)
        mask_f = mask.float()
        if not self.hparams.get("layer_norm", True):
            return self.gamma * sum(w * t.float() for w, t in zip(weights, layers))
        broadcast = mask_f.unsqueeze(-1)
        dim = layers[0].shape[-1]
        count = mask_f.sum(1) * dim
        mixed = None
        for w, tensor in zip(weights, layers):
            tensor = tensor.float()
            masked = tensor * broadcast
            mean = (masked.reshape(len(tensor), -1).sum(1) / count).view(-1, 1, 1)
            var = (((masked - mean) * broadcast) ** 2).reshape(len(tensor), -1).sum(1) / count
            normed = (tensor - mean) / torch.sqrt(var + 1e-12).view(-1, 1, 1)
            mixed = w * normed if mixed is None else mixed + w * normed
        return self.gamma * mixed

    def estimate(self, features: torch.Tensor) -> torch.Tensor:
        return self.estimator(features.float()).view(-1)


class _AttributeDict(dict):
    """Stands in for Lightning's AttributeDict, the type of a checkpoint's hyper_parameters, so the
    checkpoint loads with weights_only=True and without Lightning."""


_LIGHTNING_DICTS = [
    (_AttributeDict, "lightning_fabric.utilities.data.AttributeDict"),
    (_AttributeDict, "pytorch_lightning.utilities.parsing.AttributeDict"),
    (_AttributeDict, "lightning.fabric.utilities.data.AttributeDict"),
]


def _read_checkpoint(file: Path) -> dict[str, Any]:
    try:
        # weights_only: a checkpoint is data, never code to run.
        with torch.serialization.safe_globals(_LIGHTNING_DICTS):
            ckpt = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means an unusable file
        raise ModelNotAvailable(f"checkpoints/model.ckpt cannot be read as weights ({type(exc).__name__})") from None
    if not isinstance(ckpt, dict):
        raise ModelNotAvailable("checkpoints/model.ckpt holds no state_dict")
    return ckpt


def _load_model(path: Path, encoder_option: str | None, device: str, dtype_name: str) -> CometModel:
    from transformers import AutoConfig, AutoModel, AutoTokenizer  # lazy: heavy optional dependency (model metrics)

    hparams = read_hparams(path)
    kind = str(hparams.get("class_identifier") or "")
    ckpt = _read_checkpoint(path / CHECKPOINT_FILE)
    if isinstance(ckpt.get("hyper_parameters"), dict):
        # The reference builds the model from the checkpoint's hyper_parameters; hparams.yaml only
        # names the class (comet.models.load_from_checkpoint with reload_hparams=False).
        hparams = {**ckpt["hyper_parameters"], "class_identifier": kind}
    if kind not in ("regression_metric", "unified_metric", "xcomet_metric"):
        raise ModelNotAvailable(
            f"hparams.yaml: class_identifier {kind!r} is not supported (regression_metric: COMET-22, "
            "unified_metric: CometKiwi, xcomet_metric: xCOMET)"
        )
    if kind == "unified_metric" and hparams.get("word_level_training"):
        raise ModelNotAvailable(
            "a unified_metric with word-level tagging is not supported: xCOMET checkpoints are xcomet_metric"
        )
    encoder_name = encoder_option or str(hparams.get("pretrained_model") or "")
    encoder_dir = resolve_model_path(encoder_name)
    try:
        config = AutoConfig.from_pretrained(str(encoder_dir), local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir), use_fast=True, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailable(f"encoder {encoder_name!r}: cannot load its config or tokenizer ({exc})") from None
    if config.model_type not in ("xlm-roberta", "xlm-roberta-xl"):
        raise ModelNotAvailable(f"encoder {encoder_name!r} is {config.model_type}; COMET checkpoints use XLM-R")
    if str(hparams.get("encoder_model") or "") == "XLM-RoBERTa-XL":
        # xCOMET's encoder (facebook/xlm-roberta-xl, pre-layer-norm): built as the reference's
        # XLMRXLEncoder builds it, from the directory's config read as an XL config.
        from transformers import XLMRobertaXLConfig, XLMRobertaXLModel  # lazy: transformers loads with the model

        config = XLMRobertaXLConfig.from_pretrained(str(encoder_dir), local_files_only=True)
        encoder = XLMRobertaXLModel(config, add_pooling_layer=False)
    else:
        encoder = AutoModel.from_config(config, add_pooling_layer=False)
    state = ckpt.get("state_dict", ckpt)
    if not isinstance(state, dict):
        raise ModelNotAvailable("checkpoints/model.ckpt holds no state_dict")

    def part(prefix: str) -> dict[str, Any]:
        return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}

    missing, unexpected = encoder.load_state_dict(part("encoder.model."), strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing:
        raise ModelNotAvailable(f"checkpoint lacks encoder weights ({', '.join(missing[:3])} ...)")
    hidden = int(config.hidden_size)
    in_dim = hidden * 6 if kind == "regression_metric" else hidden
    estimator = feed_forward(
        in_dim,
        hparams.get("hidden_sizes") or [3072, 1024],
        hparams.get("activations") or "Tanh",
        hparams.get("final_activation"),
    )
    try:
        estimator.load_state_dict(part("estimator.ff."))
    except RuntimeError as exc:
        raise ModelNotAvailable(f"checkpoint's estimator does not match hparams.yaml ({exc})") from None
    layer = hparams.get("layer", hparams.get("sent_layer", "mix"))
    scalars = gamma = None
    if layer == "mix":
        mix = part("layerwise_attention.")
        n = int(config.num_hidden_layers) + 1
        try:
            scalars = torch.cat([mix[f"scalar_parameters.{i}"].float().reshape(1) for i in range(n)])
            gamma = mix["gamma"].float().reshape(())
        except KeyError:
            raise ModelNotAvailable("checkpoint lacks the layer-wise attention weights") from None
    tagger = word_layer = None
    if kind == "xcomet_metric":
        # hidden2tag: O plus I-minor, I-major, I-critical (the reference asserts these labels).
        head = part("hidden2tag.")
        word_layer = hparams.get("word_layer", 36)
        if not isinstance(word_layer, int) or not 0 <= word_layer <= int(config.num_hidden_layers):
            raise ModelNotAvailable(f"hparams: word_layer {word_layer!r} is not a layer of the encoder")
        if "weight" not in head or tuple(head["weight"].shape) != (4, hidden):
            raise ModelNotAvailable("checkpoint lacks xCOMET's word-level head (hidden2tag, 4 labels)")
        tagger = torch.nn.Linear(hidden, 4)
        tagger.load_state_dict(head)
        tagger.to(device=device).eval()
    dtype = torch_dtype(dtype_name)
    encoder.to(device=device, dtype=dtype).eval()
    estimator.to(device=device).eval()
    if scalars is not None:
        scalars, gamma = scalars.to(device), gamma.to(device)
    return CometModel(
        kind,
        hparams,
        encoder,
        tokenizer,
        scalars,
        gamma,
        estimator,
        device,
        dtype,
        file_digest(path / CHECKPOINT_FILE),
        encoder_name,
        tagger,
        word_layer,
    )


_MODELS: dict[tuple[str, str, str, str], CometModel] = {}
_MODELS_LOCK = threading.Lock()


def get_comet_model(model: str, encoder: str | None, device: str | None, dtype: str | None) -> CometModel:
    """One loaded checkpoint per (directory, encoder, device, dtype) and process."""
    path = resolve_checkpoint_dir(model)
    resolved_device = pick_device(device)
    dtype_name = compute_dtype_name(resolved_device, dtype or "auto")
    key = (str(path), encoder or "", resolved_device, dtype_name)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            loaded = _load_model(path, encoder, resolved_device, dtype_name)
            _MODELS[key] = loaded
        return loaded


# ---- batching -----------------------------------------------------------------------------------
class _CometBase(Metric):
    uses_model: ClassVar[bool] = True
    model_kinds: ClassVar[frozenset[str]] = frozenset({"comet"})
    defaults: ClassVar[dict[str, Any]] = {
        "model": None,
        "encoder": None,
        "batch_size": 16,
        "device": None,
        "dtype": "auto",
    }
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"batch_size": (1, 4096)}
    # The batch size is in the signature: padding changes the float rounding of the scores.
    speed_options: ClassVar[frozenset[str]] = frozenset({"device"})
    expected_kind: ClassVar[str] = ""

    def check_resources(self) -> None:
        """Refuse a run at once when `model` is not a checkpoint directory of the right kind or the
        encoder is not there (reads hparams.yaml and config.json only, inside the allowed dirs)."""

        hparams = read_hparams(resolve_checkpoint_dir(self.options["model"]))
        kind = str(hparams.get("class_identifier") or "")
        if kind != self.expected_kind:
            raise OptionError(self._kind_message(kind))
        resolve_model_path(self.options["encoder"] or str(hparams.get("pretrained_model") or ""))

    def _kind_message(self, kind: str) -> str:
        return (
            f"{self.name}: the checkpoint is a {kind or 'model of unknown kind'} (hparams.yaml class_identifier); "
            f"{self.name} needs a {self.expected_kind}"
        )

    def loaded(self) -> CometModel:
        model = get_comet_model(
            self.options["model"], self.options["encoder"], self.options["device"], self.options["dtype"]
        )
        if model.kind != self.expected_kind:
            raise OptionError(self._kind_message(model.kind))
        return model

    def tokenize(self, model: CometModel, texts: Sequence[str], limit: int) -> tuple[list[list[int]], list[bool]]:
        """Token ids with <s> ... </s>, cut to `limit` tokens as the tokenizer's truncation
        would (the content shortened from the end, </s> kept), and which texts were cut."""
        # verbose=False: our own warning below says what was cut, the tokenizer's would mislead.
        encoded = model.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        out, cut = [], []
        for ids in encoded:
            if len(ids) > limit:
                out.append(ids[: limit - 1] + ids[-1:])
                cut.append(True)
            else:
                out.append(list(ids))
                cut.append(False)
        if any(cut):
            logger.warning("%s: %d input(s) longer than %d tokens were truncated", self.name, sum(cut), limit)
        return out, cut

    def library_versions(self) -> dict[str, str]:
        import torch as _torch  # lazy: heavy optional dependency, loaded only by model metrics
        import transformers  # lazy: heavy optional dependency, loaded only by model metrics

        return {"torch": _torch.__version__.split("+")[0], "transformers": transformers.__version__}

    def signature_fields(self) -> dict[str, Any]:
        """Checkpoint (directory name and sha256 of model.ckpt), encoder, batch size (padding
        changes float rounding) and compute dtype: `comet|v:1|model:…|ckpt:…|encoder:…|…`."""
        path = resolve_checkpoint_dir(self.options["model"])
        hparams = read_hparams(path)
        return {
            "model": path.name,
            "ckpt": file_digest(path / CHECKPOINT_FILE),
            "encoder": self.options["encoder"] or hparams.get("pretrained_model"),
            "batch_size": self.options["batch_size"],
            "dtype": compute_dtype_name(self.options["device"], self.options["dtype"] or "auto"),
        }


class CometMetric(_CometBase):
    """COMET-22 style regression (source, output, reference -> score), e.g. wmt22-comet-da.

    Options: `model` (the checkpoint directory), `encoder` (the encoder's local directory or
    WORKBENCH_MODELS name; default: hparams' pretrained_model), `batch_size`, `device`, `dtype`
    (auto = bf16/fp16 on CUDA, fp32 on CPU; the reference runs fp32).
    """

    name: ClassVar[str] = "comet"
    needs_refs: ClassVar[bool] = True
    needs_source: ClassVar[bool] = True
    expected_kind: ClassVar[str] = "regression_metric"

    def sentence_embeddings(self, model: CometModel, texts: list[str]) -> tuple[torch.Tensor, list[bool]]:
        ids, cut = self.tokenize(model, texts, model.max_positions - 2)
        pad_id = model.tokenizer.pad_token_id
        out = torch.zeros((len(texts), model.encoder.config.hidden_size), dtype=torch.float32, device=model.device)
        batches = length_batches([len(s) for s in ids], int(self.options["batch_size"]))
        done = 0
        for batch in batches:
            step(done, len(texts))
            input_ids, mask = pad_batch([ids[i] for i in batch], pad_id, model.device)
            emb = model.encode_layers(input_ids, mask)
            # Average over real tokens (the reference masks by pad id and divides by the mask's sum).
            emb = emb.masked_fill(input_ids.eq(pad_id).unsqueeze(-1), 0.0)
            out[torch.tensor(batch, device=model.device)] = emb.sum(1) / mask.float().sum(1, keepdim=True)
            done += len(batch)
        step(len(texts), len(texts))
        return out, cut

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        ref_lists = self.reference_lists(refs)
        if not hyps:
            return []
        model = self.loaded()
        srcs = [str(s) for s in srcs]
        hyps = [str(h) for h in hyps]
        # Every text is encoded once however often it appears (sources and references are shared
        # by all systems); several references score separately and the best one counts.
        unique = list(dict.fromkeys([*srcs, *hyps, *(r for group in ref_lists for r in group)]))
        index = {t: i for i, t in enumerate(unique)}
        with torch.inference_mode():
            emb, cut = self.sentence_embeddings(model, unique)
            rows = [
                (seg, index[srcs[seg]], index[hyps[seg]], index[r]) for seg in range(len(hyps)) for r in ref_lists[seg]
            ]
            src = emb[[r[1] for r in rows]]
            mt = emb[[r[2] for r in rows]]
            ref = emb[[r[3] for r in rows]]
            features = torch.cat((mt, ref, mt * ref, (mt - ref).abs(), mt * src, (mt - src).abs()), dim=1)
            scores = model.estimate(features).double().cpu().tolist()
        best = [-math.inf] * len(hyps)
        for (seg, *_), value in zip(rows, scores):
            best[seg] = max(best[seg], value)
        results = []
        for seg, value in enumerate(best):
            truncated = cut[index[srcs[seg]]] or cut[index[hyps[seg]]] or any(cut[index[r]] for r in ref_lists[seg])
            results.append(SegmentResult(score=value, extra={"truncated": True} if truncated else {}))
        return results


class CometKiwiMetric(_CometBase):
    """CometKiwi (reference-free: source + output -> score), e.g. wmt22-cometkiwi-da.

    Options as `comet`. References are read when the checkpoint's `input_segments` include
    `ref` and the dataset has them (then the three-input mean of the reference); CometKiwi's
    own checkpoints name only mt and src.
    """

    name: ClassVar[str] = "cometkiwi"
    needs_refs: ClassVar[bool] = False
    needs_source: ClassVar[bool] = True
    expected_kind: ClassVar[str] = "unified_metric"

    # Only whether every segment has a reference: it decides the inputs (and the signature).
    corpus_state_reads: ClassVar[frozenset[str]] = frozenset({"nrefs"})

    def corpus_state(self, hyps, refs=None, srcs=None, data=None) -> dict[str, Any]:
        # Decided once for the whole corpus, so every chunk reads the same inputs and the
        # signature says which were read.
        return {"refs": refs is not None}

    def _reads_refs(self, segments: Sequence[str], state: dict[str, Any] | None) -> bool:
        return "ref" in segments and bool((state or {}).get("refs"))

    def signature_fields(self) -> dict[str, Any]:
        """As `comet`'s, plus the inputs actually read: `mt+src`, or `mt+src+ref` when a unified
        checkpoint that takes references scored a corpus with them (the scores differ, so the
        signatures must)."""
        fields = super().signature_fields()
        hparams = read_hparams(resolve_checkpoint_dir(self.options["model"]))
        segments = [str(s) for s in hparams.get("input_segments") or ["mt", "src"]]
        fields["inputs"] = "mt+src+ref" if self._reads_refs(segments, self.loaded_state) else "mt+src"
        return fields

    def _concat(self, model: CometModel, parts: list[list[int]]) -> list[int]:
        """<s> a </s></s> b </s>[</s> c </s>]: the reference's concat_sequences, including its
        cut to max_positions tokens when the parts are too long together."""
        tok = model.tokenizer
        seq = parts[0]
        for nxt in parts[1:]:
            seq = tok.build_inputs_with_special_tokens(seq[1:-1], nxt[1:-1])
        special = 1 + len(parts) * 2
        if sum(len(p) - 2 for p in parts) > model.max_positions - special:
            seq = seq[: model.max_positions]
        return seq

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        if not hyps:
            return []
        model = self.loaded()
        limit = model.max_positions - 2
        mt_ids, mt_cut = self.tokenize(model, [str(h) for h in hyps], limit)
        src_ids, src_cut = self.tokenize(model, [str(s) for s in srcs], limit)
        segments = [str(s) for s in model.hparams.get("input_segments") or ["mt", "src"]]
        # Without a loaded corpus state this call is the whole corpus.
        state = self.loaded_state if self.loaded_state is not None else self.corpus_state(hyps, refs, srcs, data)
        use_ref = self._reads_refs(segments, state)
        if use_ref and refs is None:
            raise InputError(f"{self.name}: this corpus was planned with references, this chunk has none")
        if use_ref:
            first_refs = [group[0] for group in self.reference_lists(refs)]
            ref_ids, ref_cut = self.tokenize(model, first_refs, limit)
        # One sequence per (segment, input variant); the variants' scores are averaged.
        sequences: list[tuple[int, list[int]]] = []
        truncated = []
        for i in range(len(hyps)):
            variants = [[mt_ids[i], src_ids[i]]]
            if use_ref:
                variants = [[mt_ids[i], src_ids[i]], [mt_ids[i], ref_ids[i]], [mt_ids[i], src_ids[i], ref_ids[i]]]
            cut = mt_cut[i] or src_cut[i] or (use_ref and ref_cut[i])
            for parts in variants:
                seq = self._concat(model, parts)
                cut = cut or len(seq) < sum(len(p) for p in parts)
                sequences.append((i, seq))
            truncated.append(bool(cut))
        totals = [0.0] * len(hyps)
        counts = [0] * len(hyps)
        pad_id = model.tokenizer.pad_token_id
        with torch.inference_mode():
            done = 0
            for batch in length_batches([len(s) for _, s in sequences], int(self.options["batch_size"])):
                step(done, len(sequences))
                input_ids, mask = pad_batch([sequences[k][1] for k in batch], pad_id, model.device)
                emb = model.encode_layers(input_ids, mask)
                values = model.estimate(emb[:, 0, :]).double().cpu().tolist()
                for k, value in zip(batch, values):
                    seg = sequences[k][0]
                    totals[seg] += value
                    counts[seg] += 1
                done += len(batch)
            step(len(sequences), len(sequences))
        return [
            SegmentResult(score=t / c, extra={"truncated": True} if cut else {})
            for t, c, cut in zip(totals, counts, truncated)
        ]


# xCOMET's fixed weights (unbabel-comet 2.2.7, XCOMETMetric.__init__): the span probabilities of
# the [mt, src], [mt, ref] and [mt, src, ref] inputs, and the final score's mix of their
# regression scores and the MQM score of the decoded spans.
SPAN_INPUT_WEIGHTS = (0.1667, 0.3333, 0.5)
SCORE_WEIGHTS = (0.12, 0.33, 0.33, 0.22)
# The label set of the word-level head (comet.models.utils.LabelSet): O, then I-<severity>.
TAG_SEVERITIES = (None, "minor", "major", "critical")
MQM_PENALTY = {"minor": 1, "major": 5, "critical": 10}


def decode_spans(probs: list[list[float]], offsets: list[tuple[int, int]], text: str) -> list[dict[str, Any]]:
    """Error spans from the MT tokens' label probabilities, as the reference's
    UnifiedMetric.decode does: argmax label per token (O, I-minor, I-major, I-critical); a run of
    I-tokens is one span whose severity is its first token's, its characters from the first
    token's start to the last token's end, its confidence the mean of the chosen probabilities.
    A run still open at the last MT token (</s>) is dropped, as there. Our `text` is the output's
    own characters [start:end] (the reference decodes the tokens instead)."""
    spans: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for row, (start, end) in zip(probs, offsets):
        label = max(range(len(row)), key=lambda k: (row[k], -k))  # first maximum, as topk
        severity = TAG_SEVERITIES[label]
        if severity is not None and current is None:
            current = {"start": start, "end": end, "severity": severity, "conf": [row[label]]}
        elif severity is not None:
            current["end"] = end
            current["conf"].append(row[label])
        elif current is not None:
            spans.append(current)
            current = None
    return [
        {
            "start": s["start"],
            "end": s["end"],
            "severity": s["severity"],
            "confidence": sum(s["conf"]) / len(s["conf"]),
            "text": text[s["start"] : s["end"]],
        }
        for s in spans
    ]


def mqm_from_spans(spans: Sequence[dict[str, Any]]) -> float:
    """The reference's MQM score of decoded spans: minor 1, major 5, critical 10, capped at 25,
    rescaled to [0, 1] (1: no error)."""
    return (25 - min(25, sum(MQM_PENALTY.get(s["severity"], 0) for s in spans))) / 25


class XCometMetric(CometKiwiMetric):
    """xCOMET (Guerreiro et al. 2024): a sentence score plus error spans with severities
    (minor / major / critical), e.g. Unbabel/XCOMET-XL (class_identifier `xcomet_metric`).

    With references (every segment has one; the first counts) the checkpoint reads [mt, src],
    [mt, ref] and [mt, src, ref]; the spans come from their weighted label probabilities
    (0.1667 / 0.3333 / 0.5) and the score is 0.12 / 0.33 / 0.33 x each regression score (capped
    at 1) + 0.22 x the spans' MQM score. Without references (QE mode) it reads [mt, src]:
    0.78 x the regression score + 0.22 x MQM. The signature's `inputs` says which.

    Segment JSON: `spans` [{start, end, severity, confidence, text}] (character offsets into the
    output, the span format of llm-judge's spans mode, so span meta-evaluation, ESA pre-fill and
    the error-severity page read them), `mqm` (the spans' MQM score). Options as `comet`.
    """

    name: ClassVar[str] = "xcomet"
    expected_kind: ClassVar[str] = "xcomet_metric"

    def _reads_refs(self, segments: Sequence[str], state: dict[str, Any] | None) -> bool:
        return bool((state or {}).get("refs"))  # xCOMET always takes mt, src and ref

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        if not hyps:
            return []
        model = self.loaded()
        limit = model.max_positions - 2
        hyps = [str(h) for h in hyps]
        # The MT with its character offsets: the word-level labels are read on its tokens.
        encoded = model.tokenizer(hyps, add_special_tokens=True, truncation=False, verbose=False)
        mt_ids, mt_offsets, mt_cut = [], [], []
        for ids, offsets in zip(encoded["input_ids"], [e.offsets for e in encoded.encodings]):
            cut = len(ids) > limit
            if cut:  # as the tokenizer's truncation: the content shortened from the end, </s> kept
                ids, offsets = ids[: limit - 1] + ids[-1:], offsets[: limit - 1] + offsets[-1:]
            mt_ids.append(list(ids))
            mt_offsets.append([tuple(o) for o in offsets])
            mt_cut.append(cut)
        if any(mt_cut):
            logger.warning("%s: %d input(s) longer than %d tokens were truncated", self.name, sum(mt_cut), limit)
        src_ids, src_cut = self.tokenize(model, [str(s) for s in srcs], limit)
        state = self.loaded_state if self.loaded_state is not None else self.corpus_state(hyps, refs, srcs, data)
        use_ref = self._reads_refs([], state)
        if use_ref and refs is None:
            raise InputError(f"{self.name}: this corpus was planned with references, this chunk has none")
        if use_ref:
            ref_ids, ref_cut = self.tokenize(model, [group[0] for group in self.reference_lists(refs)], limit)
        sequences: list[tuple[int, int, list[int]]] = []  # (segment, input variant, ids)
        truncated = []
        for i in range(len(hyps)):
            variants = [[mt_ids[i], src_ids[i]]]
            if use_ref:
                variants += [[mt_ids[i], ref_ids[i]], [mt_ids[i], src_ids[i], ref_ids[i]]]
            cut = mt_cut[i] or src_cut[i] or (use_ref and ref_cut[i])
            for v, parts in enumerate(variants):
                seq = self._concat(model, parts)
                cut = cut or len(seq) < sum(len(p) for p in parts)
                sequences.append((i, v, seq))
            truncated.append(bool(cut))
        n_inputs = 3 if use_ref else 1
        regression = [[0.0] * n_inputs for _ in hyps]
        probs: list[list[Any]] = [[None] * n_inputs for _ in hyps]
        pad_id = model.tokenizer.pad_token_id
        with torch.inference_mode():
            done = 0
            for batch in length_batches([len(s) for *_, s in sequences], int(self.options["batch_size"])):
                step(done, len(sequences))
                input_ids, mask = pad_batch([sequences[k][2] for k in batch], pad_id, model.device)
                sent, logits = model.encode_tagged(input_ids, mask)
                values = model.estimate(sent).double().cpu().tolist()
                soft = torch.softmax(logits, dim=2).cpu()
                for row, (k, value) in enumerate(zip(batch, values)):
                    seg, v, _ = sequences[k]
                    regression[seg][v] = value
                    probs[seg][v] = soft[row, : len(mt_ids[seg]), :]
                done += len(batch)
            step(len(sequences), len(sequences))
            results = []
            for seg in range(len(hyps)):
                if use_ref:
                    weights = torch.tensor(SPAN_INPUT_WEIGHTS)
                    mixed = torch.sum(torch.stack([p * w for p, w in zip(probs[seg], weights)]), dim=0)
                else:
                    mixed = probs[seg][0]
                spans = decode_spans(mixed.tolist(), mt_offsets[seg], hyps[seg])
                mqm = mqm_from_spans(spans)
                capped = [min(1.0, r) for r in regression[seg]]
                if use_ref:
                    value = sum(r * w for r, w in zip(capped, SCORE_WEIGHTS[:3])) + mqm * SCORE_WEIGHTS[3]
                else:
                    value = capped[0] * sum(SCORE_WEIGHTS[:3]) + mqm * SCORE_WEIGHTS[3]
                extra: dict[str, Any] = {"spans": spans, "mqm": mqm}
                if truncated[seg]:
                    extra["truncated"] = True
                results.append(SegmentResult(score=value, extra=extra))
        return results
