"""MetricX-24 (Juraska et al. 2024) from a local Hugging Face checkpoint, equal to
google-research/metricx `metricx24/models.py` + `predict.py` at inference, with transformers'
MT5 classes only.

A MetricX checkpoint (e.g. google/metricx-24-hybrid-large-v2p6, Apache-2.0) is an mT5
encoder-decoder saved as `MT5ForRegression`: the same weights as MT5ForConditionalGeneration. The
input is one string, "source: S candidate: H reference: R" (reference mode) or
"source: S candidate: H" (QE mode, the hybrid models' reference-free use), tokenized by the mT5
tokenizer (option `tokenizer`: the local directory of e.g. google/mt5-xl; MetricX checkpoints ship
none) and cut to `max_input_length` tokens with the final </s> removed, as predict.py does. The
decoder runs one step from token 0 and the score is the logit of `<extra_id_10>` (id 250089 in
mT5's vocabulary, the id models.py hard-codes), clipped to [0, 25]: an error score, lower is
better.

Reference mode is used when every segment of the corpus has a reference (decided once per
corpus, named in the signature as `inputs:ref` or `inputs:qe`), unless `qe=true`.
Inputs longer than `max_input_length` are truncated as the reference truncates them, and the
segment says so (`truncated: true`, plus a logged warning), never silently.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from metrics.scorers import files
from metrics.scorers.base import Metric, SegmentResult, Triple
from metrics.scorers.batches import length_batches, pad_batch
from metrics.scorers.comet import file_digest
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

# The vocabulary entry whose logit is the score: models.py's `lm_logits[:, 0, 250089]`, and
# 250089 is `<extra_id_10>` in mT5's tokenizer; looked up by name so that a tiny test vocabulary
# maps it the same way.
SCORE_TOKEN = "<extra_id_10>"
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def resolve_checkpoint_dir(name: str | None) -> Path:
    if not name:
        raise OptionError("model: give model=DIR, the MetricX checkpoint directory (config.json + weights)")
    name = files.check_syntax("model", name)
    configured = configured_models()
    path = Path(configured[name]).expanduser() if name in configured else files.resolve("model", name, kind="model")
    if not (path / "config.json").is_file() or not any((path / f).is_file() for f in WEIGHT_FILES):
        raise ModelNotAvailable(
            f"model {name[:200]!r}: not a MetricX checkpoint directory (it needs config.json and "
            "model.safetensors or pytorch_model.bin, as downloaded from the model hub)"
        )
    return path.resolve()


def weights_digest(path: Path) -> str:
    """sha256 over the digests of the checkpoint's weight files (shards included), 12 hex digits."""
    names = [f for f in WEIGHT_FILES if (path / f).is_file()]
    shards = sorted(p.name for p in path.iterdir() if p.name.startswith(("model-", "pytorch_model-")))
    digest = hashlib.sha256()
    for name in [*names, *shards]:
        digest.update(f"{name}:{file_digest(path / name)};".encode())
    return digest.hexdigest()[:12]


@dataclass
class MetricXModel:
    model: Any
    tokenizer: Any
    score_id: int
    device: str
    dtype: Any

    @property
    def scale(self) -> float:
        # models.py rescales the decoder output before the head when embeddings are tied.
        config = self.model.config
        return float(config.d_model) ** -0.5 if config.tie_word_embeddings else 1.0

    def predict(self, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        hidden = self.model.encoder(input_ids=input_ids, attention_mask=mask, return_dict=True).last_hidden_state
        start = torch.zeros((len(input_ids), 1), dtype=torch.long, device=input_ids.device)
        out = self.model.decoder(
            input_ids=start, encoder_hidden_states=hidden, encoder_attention_mask=mask, return_dict=True
        ).last_hidden_state[:, 0, :]
        # Only the one logit is needed: a dot product instead of the 250k-wide head.
        row = self.model.lm_head.weight[self.score_id]
        return torch.clamp((out * self.scale) @ row, 0, 25).float()


_MODELS: dict[tuple[str, str, str, str], MetricXModel] = {}
_MODELS_LOCK = threading.Lock()


def _load(path: Path, tokenizer_name: str, device: str, dtype_name: str) -> MetricXModel:
    from transformers import (  # lazy: heavy optional dependency (model metrics)
        AutoTokenizer,
        MT5Config,
        MT5ForConditionalGeneration,
    )

    try:
        config = MT5Config.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailable(f"MetricX checkpoint: cannot read config.json ({exc})") from None
    if config.model_type not in ("mt5", "t5"):
        raise ModelNotAvailable(f"MetricX checkpoint is a {config.model_type} model; MetricX is mT5")
    tok_dir = resolve_model_path(tokenizer_name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(tok_dir), use_fast=True, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailable(f"tokenizer {tokenizer_name!r}: cannot load it ({exc})") from None
    score_id = tokenizer.convert_tokens_to_ids(SCORE_TOKEN)
    if score_id is None or score_id == tokenizer.unk_token_id or score_id >= config.vocab_size:
        raise ModelNotAvailable(f"tokenizer {tokenizer_name!r} has no {SCORE_TOKEN} within the model's vocabulary")
    dtype = torch_dtype(dtype_name)
    model = MT5ForConditionalGeneration.from_pretrained(str(path), config=config, local_files_only=True)
    model.to(device=device, dtype=dtype).eval()
    return MetricXModel(model, tokenizer, int(score_id), device, dtype)


def get_metricx_model(model: str, tokenizer: str, device: str | None, dtype: str | None) -> MetricXModel:
    """One loaded checkpoint per (directory, tokenizer, device, dtype) and process."""
    path = resolve_checkpoint_dir(model)
    resolved_device = pick_device(device)
    dtype_name = compute_dtype_name(resolved_device, dtype or "auto")
    key = (str(path), tokenizer, resolved_device, dtype_name)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            loaded = _load(path, tokenizer, resolved_device, dtype_name)
            _MODELS[key] = loaded
        return loaded


class MetricXMetric(Metric):
    """MetricX-24 hybrid (source, output[, reference] -> error score in [0, 25], lower is better).

    Options: `model` (the checkpoint directory), `tokenizer` (the mT5 tokenizer's local directory
    or WORKBENCH_MODELS name), `max_input_length` (1536, what MetricX-24 was trained with),
    `qe` (true: never read references), `batch_size`, `device`, `dtype` (auto = bf16/fp16 on CUDA,
    fp32 on CPU).
    """

    name: ClassVar[str] = "metricx"
    higher_is_better: ClassVar[bool] = False
    needs_refs: ClassVar[bool] = False
    needs_source: ClassVar[bool] = True
    uses_model: ClassVar[bool] = True
    model_kinds: ClassVar[frozenset[str]] = frozenset({"metricx"})
    defaults: ClassVar[dict[str, Any]] = {
        "model": None,
        "tokenizer": None,
        "max_input_length": 1536,
        "qe": False,
        "batch_size": 16,
        "device": None,
        "dtype": "auto",
    }
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"batch_size": (1, 4096), "max_input_length": (2, 65536)}
    speed_options: ClassVar[frozenset[str]] = frozenset({"device"})
    corpus_state_reads: ClassVar[frozenset[str]] = frozenset({"nrefs"})

    def corpus_state(self, hyps, refs=None, srcs=None, data=None) -> dict[str, Any]:
        # Decided once for the whole corpus, so every chunk reads the same inputs.
        return {"refs": refs is not None and not self.options["qe"]}

    def _tokenizer_name(self) -> str:
        if not self.options["tokenizer"]:
            raise OptionError("tokenizer: give tokenizer=DIR, the mT5 tokenizer MetricX was trained with (e.g. mt5-xl)")
        return str(self.options["tokenizer"])

    def check_resources(self) -> None:

        resolve_checkpoint_dir(self.options["model"])
        resolve_model_path(self._tokenizer_name())

    def library_versions(self) -> dict[str, str]:
        import torch as _torch  # lazy: heavy optional dependency, loaded only by model metrics
        import transformers  # lazy: heavy optional dependency, loaded only by model metrics

        return {"torch": _torch.__version__.split("+")[0], "transformers": transformers.__version__}

    def signature_fields(self) -> dict[str, Any]:
        """`metricx|v:1|model:…|ckpt:…|tokenizer:…|max_len:…|inputs:ref|qe|batch_size:…|dtype:…`."""
        path = resolve_checkpoint_dir(self.options["model"])
        return {
            "model": path.name,
            "ckpt": weights_digest(path),
            "tokenizer": self._tokenizer_name(),
            "max_len": self.options["max_input_length"],
            "inputs": "ref" if (self.loaded_state or {}).get("refs") else "qe",
            "batch_size": self.options["batch_size"],
            "dtype": compute_dtype_name(self.options["device"], self.options["dtype"] or "auto"),
        }

    def inputs(self, hyps: Sequence[str], srcs: Sequence[str], refs: list[str] | None) -> list[str]:
        """predict.py's _make_input."""
        if refs is None:
            return [f"source: {s} candidate: {h}" for s, h in zip(srcs, hyps)]
        return [f"source: {s} candidate: {h} reference: {r}" for s, h, r in zip(srcs, hyps, refs)]

    def tokenize(self, model: MetricXModel, texts: list[str]) -> tuple[list[list[int]], list[bool]]:
        """predict.py's _tokenize (truncation to max_input_length, </s> kept last) then
        _remove_eos: the content's first max_input_length - 1 tokens."""
        limit = int(self.options["max_input_length"]) - 1
        encoded = model.tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        out, cut = [], []
        for ids in encoded:
            content = ids[:-1]
            cut.append(len(content) > limit)
            out.append(content[:limit])
        if any(cut):
            logger.warning("%s: %d input(s) longer than %d tokens were truncated", self.name, sum(cut), limit + 1)
        return out, cut

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
        # Without a loaded corpus state this call is the whole corpus.
        state = self.loaded_state if self.loaded_state is not None else self.corpus_state(hyps, refs, srcs, data)
        first_refs = None
        if state.get("refs"):
            if refs is None:
                raise InputError(f"{self.name}: this corpus was planned with references, this chunk has none")
            # MetricX takes one reference: the first.
            first_refs = [group[0] for group in self.reference_lists(refs)]
        model = get_metricx_model(
            self.options["model"], self._tokenizer_name(), self.options["device"], self.options["dtype"]
        )
        ids, cut = self.tokenize(model, self.inputs([str(h) for h in hyps], [str(s) for s in srcs], first_refs))
        scores = [0.0] * len(ids)
        pad_id = model.tokenizer.pad_token_id
        with torch.inference_mode():
            done = 0
            for batch in length_batches([len(s) for s in ids], int(self.options["batch_size"])):
                step(done, len(ids))
                input_ids, mask = pad_batch([ids[k] for k in batch], pad_id, model.device)
                for k, value in zip(batch, model.predict(input_ids, mask).double().cpu().tolist()):
                    scores[k] = value
                done += len(batch)
            step(len(ids), len(ids))
        return [SegmentResult(score=v, extra={"truncated": True} if c else {}) for v, c in zip(scores, cut)]
