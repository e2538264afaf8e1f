"""The shared transformer encoder behind every embedding metric.

One `Encoder` per (model directory, device) and process: BERTScore, SemDist,
YiSi-1/2, the simplicity BERTScore and minED all ask `get_encoder()` for it,
so the weights load once and token embeddings computed for one metric are
reused by the next (an LRU cache bounded in bytes).

Models load only from local directories (`loading.resolve_model_path`);
nothing is downloaded. Token embeddings follow bert-score's conventions so
that our BERTScore equals the bert-score package: special tokens included,
RoBERTa/GPT-2 byte-level tokenizers get a prefix space, sequences truncated
to the tokenizer's maximum length.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metrics.scorers.loading import LazyModule

torch = LazyModule("torch")  # imported on first use (see LazyModule)

from metrics.scorers.errors import ModelNotAvailable, OptionError
from metrics.scorers.loading import compute_dtype_name, pick_device, resolve_model_path, torch_dtype
from metrics.scorers.progress import step

# Bytes of embeddings kept between calls (per encoder); WORKBENCH_EMBED_CACHE_MB overrides.
_DEFAULT_CACHE_MB = 256


@dataclass
class TokenEmbedding:
    """Contextual embeddings of one text, one row per token (special tokens included)."""

    input_ids: list[int]
    tokens: list[str]
    vectors: torch.Tensor  # [n_tokens, dim], float32, on the encoder's device
    special_mask: list[bool]
    offsets: list[tuple[int, int]]  # character span of each token in the text; (0, 0) for specials


class _StopForward(Exception):
    """Raised by a forward hook once the requested layer is computed."""


class _ByteLRU:
    """Least-recently-used cache whose bound is the total size of its tensors."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._data: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[0]

    def put(self, key: Any, value: Any, size: int) -> None:
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._data[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes and self._data:
                _, (_, dropped) = self._data.popitem(last=False)
                self.bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._data)


def _needs_prefix_space(tokenizer: Any) -> bool:
    """bert-score encodes with add_prefix_space=True for (slow) GPT-2 and RoBERTa
    tokenizers and their subclasses; decide from the slow class of our fast one."""
    import transformers  # lazy: heavy optional dependency, loaded only by model metrics

    name = type(tokenizer).__name__
    slow = getattr(transformers, name[:-4], None) if name.endswith("Fast") else type(tokenizer)
    if slow is None or not isinstance(slow, type):
        return False
    bases = tuple(
        cls
        for cls in (getattr(transformers, "GPT2Tokenizer", None), getattr(transformers, "RobertaTokenizer", None))
        if cls is not None
    )
    return bool(bases) and issubclass(slow, bases)


def _torch_dtype(device: str) -> torch.dtype:
    return torch_dtype(compute_dtype_name(device))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


class Encoder:
    """A local transformer model and its fast tokenizer on one device."""

    def __init__(self, path: Path, device: str) -> None:
        from transformers import AutoModel, AutoTokenizer  # lazy: heavy optional dependency (model metrics)

        self.path = Path(path)
        self.name = str(self.path)
        self.device = device
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.name, use_fast=True, local_files_only=True)
            if _needs_prefix_space(tokenizer) and not getattr(tokenizer, "add_prefix_space", False):
                tokenizer = AutoTokenizer.from_pretrained(
                    self.name, use_fast=True, local_files_only=True, add_prefix_space=True
                )
        except Exception as exc:  # transformers raises OSError, ValueError, ImportError, KeyError ...
            raise ModelNotAvailable(
                f"model {self.name}: cannot load a tokenizer from this directory "
                f"({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); "
                "save one there with tokenizer.save_pretrained(dir)"
            ) from exc
        if not tokenizer.is_fast:
            raise ModelNotAvailable(
                f"model {self.name}: no fast tokenizer (tokenizer.json) and none can be converted; "
                "save one with AutoTokenizer.from_pretrained(...).save_pretrained(dir)"
            )
        self.tokenizer = tokenizer
        self.dtype = _torch_dtype(device)
        try:
            model = AutoModel.from_pretrained(self.name, local_files_only=True, dtype=self.dtype)
        except Exception as exc:
            raise ModelNotAvailable(
                f"model {self.name}: cannot load weights from this directory "
                f"({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); "
                "save them there with model.save_pretrained(dir)"
            ) from exc
        # Encoder-decoder checkpoints (T5, BART): only the encoder embeds, as in bert-score.
        if getattr(model, "encoder", None) is not None and getattr(model, "decoder", None) is not None:
            model = model.get_encoder() if hasattr(model, "get_encoder") else model.encoder
        model.to(device)
        model.eval()
        self.model = model
        config = model.config
        self.num_layers = int(
            getattr(config, "num_hidden_layers", None)
            or getattr(config, "n_layers", None)
            or getattr(config, "num_layers", 0)
        )
        self.max_length = self._max_length()
        self._layers = self._find_layers()
        pooling = _read_json(self.path / "1_Pooling" / "config.json")
        self.pooling = (
            "cls"
            if pooling.get("pooling_mode_cls_token")
            else ("max" if pooling.get("pooling_mode_max_tokens") else "mean")
        )
        st_config = _read_json(self.path / "sentence_bert_config.json")
        # sentence-transformers truncates to its own max_seq_length (256 for MiniLM).
        self.sentence_max_length = min(int(st_config.get("max_seq_length") or self.max_length), self.max_length)
        cache_mb = float(os.environ.get("WORKBENCH_EMBED_CACHE_MB", _DEFAULT_CACHE_MB))
        self._token_cache = _ByteLRU(int(cache_mb * 2**20))
        self._sentence_cache = _ByteLRU(int(cache_mb * 2**20) // 8)
        self._forward_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Encoder({self.name!r}, device={self.device!r}, layers={self.num_layers})"

    # ---- set-up helpers ----------------------------------------------------
    def _max_length(self) -> int:
        limit = int(getattr(self.tokenizer, "model_max_length", 0) or 0)
        if 0 < limit < 100_000:
            return limit
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if not positions:
            return 512
        # RoBERTa-style position ids start after the padding index.
        if "roberta" in getattr(self.model.config, "model_type", ""):
            positions -= int(getattr(self.model.config, "pad_token_id", 1) or 1) + 1
        return int(positions)

    def _find_layers(self) -> Any:
        """The module list of transformer blocks, to stop early below the top layer."""
        for owner in ("encoder", "transformer"):
            sub = getattr(self.model, owner, None)
            layers = getattr(sub, "layer", None) if sub is not None else None
            if isinstance(layers, torch.nn.ModuleList) and len(layers) == self.num_layers:
                return layers
        layers = getattr(self.model, "layers", None)
        if isinstance(layers, torch.nn.ModuleList) and len(layers) == self.num_layers:
            return layers
        return None

    def check_layer(self, layer: int | None) -> int:
        if layer is None:
            return self.num_layers
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= self.num_layers:
            raise OptionError(
                f"layer={layer!r}: model {self.name} has hidden states 0 (embeddings) to {self.num_layers}"
            )
        return layer

    # ---- forward -----------------------------------------------------------
    def _batches(self, encodings: list[list[int]], batch_size: int) -> list[list[int]]:
        """Indices grouped into batches of similar length (longest first), to minimise padding."""
        if batch_size < 1:
            raise OptionError(f"batch_size={batch_size}: must be at least 1")
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]), reverse=True)
        # Close a batch at a change of length once it holds a fair number of
        # texts: most batches then need no padding (and no attention mask),
        # while rare lengths still share a batch instead of running alone.
        min_size = max(1, min(16, batch_size // 4))
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            if current and (
                len(current) >= batch_size
                or (len(current) >= min_size and len(encodings[i]) != len(encodings[current[0]]))
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _pad(self, seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            pad_id = 0
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            mask[row, : len(seq)] = 1
        return ids.to(self.device), mask.to(self.device)

    def _hidden(self, ids: torch.Tensor, mask: torch.Tensor, layer: int) -> torch.Tensor:
        """Hidden state `layer` (0 = embeddings) for a padded batch, float32."""
        if layer == self.num_layers:
            out = self.model(input_ids=ids, attention_mask=mask)
            return out[0].float()
        # Below the top: stop the forward pass after the requested block instead of
        # computing (and discarding) the layers above it.
        module = None
        if layer == 0 and getattr(self.model, "embeddings", None) is not None:
            module = self.model.embeddings
        elif layer > 0 and self._layers is not None:
            module = self._layers[layer - 1]
        if module is None:
            out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            return out.hidden_states[layer].float()
        captured: list[torch.Tensor] = []

        def hook(_module, _inputs, output):
            captured.append(output[0] if isinstance(output, (tuple, list)) else output)
            raise _StopForward

        handle = module.register_forward_hook(hook)
        try:
            self.model(input_ids=ids, attention_mask=mask)
        except _StopForward:
            pass
        finally:
            handle.remove()
        return captured[0].float()

    def _encode(self, texts: list[str], max_length: int) -> Any:
        return self.tokenizer(
            texts,
            add_special_tokens=True,
            truncation=True,
            max_length=max_length,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_attention_mask=False,
            return_token_type_ids=False,
        )

    # ---- public API --------------------------------------------------------
    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids (special tokens included, truncated) exactly as `token_embeddings` sees them."""
        if not texts:
            return []
        return [list(ids) for ids in self._encode(list(texts), self.max_length)["input_ids"]]

    def token_strings(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's tokens as strings, special tokens left out, exactly the
        non-special `tokens` of `token_embeddings` (no forward pass)."""
        if not texts:
            return []
        enc = self._encode(list(texts), self.max_length)
        return [
            [tok for tok, special in zip(self.tokenizer.convert_ids_to_tokens(ids), mask) if not special]
            for ids, mask in zip(enc["input_ids"], enc["special_tokens_mask"])
        ]

    def token_embeddings(
        self, texts: Sequence[str], *, layer: int | None = None, batch_size: int = 64
    ) -> list[TokenEmbedding]:
        """Contextual embeddings of every token of each text (hidden state `layer`;
        None = the last). Identical texts are encoded once; results are cached."""
        layer = self.check_layer(layer)
        results: dict[str, TokenEmbedding] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            hit = self._token_cache.get((text, layer))
            if hit is not None:
                results[text] = hit
            else:
                missing.append(text)
        if missing:
            enc = self._encode(missing, self.max_length)
            ids_list = enc["input_ids"]
            done = 0
            with self._forward_lock, torch.inference_mode():
                for batch in self._batches(ids_list, batch_size):
                    step(done, len(missing))  # between batches: the caller may stop us here
                    done += len(batch)
                    ids, mask = self._pad([ids_list[i] for i in batch])
                    hidden = self._hidden(ids, mask, layer)
                    for row, i in enumerate(batch):
                        n = len(ids_list[i])
                        vectors = hidden[row, :n].clone()
                        item = TokenEmbedding(
                            input_ids=list(ids_list[i]),
                            tokens=self.tokenizer.convert_ids_to_tokens(ids_list[i]),
                            vectors=vectors,
                            special_mask=[bool(v) for v in enc["special_tokens_mask"][i]],
                            offsets=[tuple(o) for o in enc["offset_mapping"][i]],
                        )
                        results[missing[i]] = item
                        self._token_cache.put((missing[i], layer), item, vectors.numel() * 4 + 64 * n)
        return [results[t] for t in texts]

    def sentence_embeddings(
        self, texts: Sequence[str], *, batch_size: int = 64, normalize: bool = True
    ) -> torch.Tensor:
        """One vector per text, pooled like sentence-transformers (the model's
        1_Pooling/config.json: mean of non-padding tokens unless it says CLS or max)."""
        vectors: dict[str, torch.Tensor] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            hit = self._sentence_cache.get(text)
            if hit is not None:
                vectors[text] = hit
            else:
                missing.append(text)
        if missing:
            ids_list = self._encode(missing, self.sentence_max_length)["input_ids"]
            done = 0
            with self._forward_lock, torch.inference_mode():
                for batch in self._batches(ids_list, batch_size):
                    step(done, len(missing))  # between batches: the caller may stop us here
                    done += len(batch)
                    ids, mask = self._pad([ids_list[i] for i in batch])
                    hidden = self._hidden(ids, mask, self.num_layers)
                    if self.pooling == "cls":
                        pooled = hidden[:, 0]
                    elif self.pooling == "max":
                        pooled = hidden.masked_fill(~mask.bool().unsqueeze(-1), -1e9).max(dim=1).values
                    else:
                        weights = mask.unsqueeze(-1).to(hidden.dtype)
                        pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
                    for row, i in enumerate(batch):
                        vec = pooled[row].clone()
                        vectors[missing[i]] = vec
                        self._sentence_cache.put(missing[i], vec, vec.numel() * 4)
        if not texts:
            return torch.zeros((0, self.model.config.hidden_size), device=self.device)
        out = torch.stack([vectors[t] for t in texts])
        if normalize:
            out = torch.nn.functional.normalize(out, p=2, dim=1)
        return out

    def clear_cache(self) -> None:
        self._token_cache.clear()
        self._sentence_cache.clear()


_ENCODERS: dict[tuple[str, str], Encoder] = {}
_ENCODERS_LOCK = threading.Lock()
# Models this process has loaded (workers report it: once per process, not per chunk).
LOADS = 0


def get_encoder(model: str | None = None, device: str | None = None) -> Encoder:
    """The process-wide encoder for a model (path, configured or packaged name;
    default the packaged MiniLM) on a device (cpu, cuda, cuda:N, auto)."""
    global LOADS
    path = resolve_model_path(model)
    resolved_device = pick_device(device)
    key = (str(path), resolved_device)
    with _ENCODERS_LOCK:
        encoder = _ENCODERS.get(key)
        if encoder is None:
            encoder = Encoder(path, resolved_device)
            _ENCODERS[key] = encoder
            LOADS += 1
        return encoder
