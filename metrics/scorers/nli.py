"""Semantic accuracy of data-to-text outputs with natural language inference
(Dušek & Kasner 2020, seed 000; reference code ufal/nlgi_eval).

Each input triple becomes a sentence (a *fact*) through a per-predicate
template or the back-off "The <predicate> of <subject> is <object>.". An NLI
model then checks entailment both ways:

* omission: premise = the output, hypothesis = each fact (one pair per fact,
  so we know which facts are missing);
* hallucination: premise = all facts joined with a single space,
  hypothesis = the output.

A check passes when entailment is the most probable label. FINE label: OK,
omission, hallucination, omission+hallucination; ROUGH: OK / not_OK;
confidence = the minimum of all entailment probabilities of the output.
Segment score = 1.0 when OK, else 0.0 (so the corpus score is the share of
OK outputs).

The model call is a swappable backend (`NLIBackend`): by default a local
sequence-classification checkpoint (roberta-large-mnli unless `model` says
otherwise), loaded only from a local directory or a name mapped in
WORKBENCH_MODELS, never downloaded.

>>> from metrics.scorers.nli import NLIMetric, e2e_mr_to_triples
>>> e2e_mr_to_triples("name[Blue Spice], eatType[pub], near[Café Rouge]")
[('Blue Spice', 'eatType', 'pub'), ('Blue Spice', 'near', 'Café Rouge')]
"""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.errors import InputError, MetricError, ModelNotAvailable, OptionError
from metrics.scorers.loading import pick_device, resolve_model_path

LABEL_OK = "OK"
LABEL_OMISSION = "omission"
LABEL_HALLUCINATION = "hallucination"
LABEL_BOTH = "omission+hallucination"
FINE_LABELS = (LABEL_OK, LABEL_OMISSION, LABEL_HALLUCINATION, LABEL_BOTH)
ROUGH_OK, ROUGH_NOT_OK = "OK", "not_OK"

BACKOFF_TEMPLATE = "The <predicate> of <subject> is <object>."


# ---- facts from triples -------------------------------------------------------
def split_camel_case(text: str) -> str:
    """`eatType` -> `eat type`, `birthPlace` -> `birth place`; acronyms (`ISBN`)
    are left alone. The paper's back-off splits camelCase; we also lower-case
    the split-off letter so the sentence reads naturally."""
    return re.sub(r"([a-z])([A-Z])", lambda m: f"{m.group(1)} {m.group(2).lower()}", text)


def _strip_quotes(value: str) -> str:
    # WebNLG values are often quoted literals: "1634" -> 1634 (as nlgi_eval does).
    return re.sub(r"""^\s*["'](.*)["']\s*$""", r"\1", value)


def _pick_template(entry: Any, obj: str) -> str | None:
    """A template entry is a string, a list (the first entry is used) or, as in
    nlgi_eval's E2E file, a dict keyed by object value (familyFriendly yes/no)."""
    if isinstance(entry, Mapping):
        entry = entry.get(obj, entry.get(_strip_quotes(obj)))
        if entry is None:
            return None
    if isinstance(entry, list):
        entry = entry[0] if entry else None
    return entry if isinstance(entry, str) else None


def triple_to_fact(triple: Triple, templates: Mapping[str, Any] | None = None) -> str:
    """Verbalise one (subject, predicate, object) triple.

    >>> triple_to_fact(("Alan_Bean", "birthPlace", '"Wheeler, Texas"'))
    'The birth place of Alan Bean is Wheeler, Texas.'
    >>> triple_to_fact(("Blue Spice", "eatType", "pub"), {"eatType": ["<subject> is a <object>."]})
    'Blue Spice is a pub.'
    """
    subject, predicate, obj = (str(part) for part in triple)
    template = _pick_template((templates or {}).get(predicate), obj) if templates else None
    if template is None:
        predicate_text = split_camel_case(_strip_quotes(predicate))
        template = BACKOFF_TEMPLATE.replace("<predicate>", predicate_text)
    fact = template.replace("<subject>", _strip_quotes(subject)).replace("<object>", _strip_quotes(obj))
    # Entity names are written with underscores in WebNLG (Alan_Bean).
    return re.sub(r"\s+", " ", fact.replace("_", " ")).strip()


_E2E_SLOT = re.compile(r"\s*([^\[\],]+?)\s*\[([^\]]*)\]\s*(?:,|$)")


def e2e_mr_to_triples(mr: str) -> list[Triple]:
    """E2E attribute-value MR -> triples with the restaurant name as subject
    (the `name` slot itself becomes no triple), as in the paper (footnote 4).

    >>> e2e_mr_to_triples("name[The Eagle], customer rating[5 out of 5]")
    [('The Eagle', 'customer rating', '5 out of 5')]
    """
    text = mr.strip()
    slots: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _E2E_SLOT.match(text, pos)
        if match is None:
            raise InputError(f"E2E MR {mr!r}: cannot parse near {text[pos:pos + 30]!r} (expected attr[value], ...)")
        slots.append((match.group(1).strip(), match.group(2).strip()))
        pos = match.end()
    names = [value for attr, value in slots if attr == "name"]
    if not names:
        raise InputError(f"E2E MR {mr!r} has no name[...] slot to use as the subject")
    return [(names[0], attr, value) for attr, value in slots if attr != "name"]


def load_templates(path: str | Path) -> dict[str, Any]:
    """Read a templates JSON file (predicate -> template string, list, or
    value-keyed dict, nlgi_eval's format)."""
    try:
        value = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise OptionError(f"templates_file {path}: cannot read it ({exc.strerror or exc})") from exc
    except json.JSONDecodeError as exc:
        raise OptionError(f"templates_file {path}: not valid JSON ({exc})") from exc
    return _check_templates(value, f"templates_file {path}")


def _check_templates(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise OptionError(f"{where}: expected a JSON object mapping predicate -> template")

    def ok(entry: Any, depth: int = 0) -> bool:
        if isinstance(entry, str):
            return True
        if isinstance(entry, list):
            return bool(entry) and all(isinstance(e, str) for e in entry)
        if isinstance(entry, Mapping) and depth == 0:
            return all(ok(e, 1) for e in entry.values())
        return False

    for predicate, entry in value.items():
        if not ok(entry):
            raise OptionError(
                f"{where}: template for {predicate!r} must be a string with <subject> and <object>, "
                "a non-empty list of such strings, or an object mapping values to them"
            )
    return dict(value)


# ---- NLI backends -------------------------------------------------------------
class NLIBackend(Protocol):
    """What the metric needs from an NLI model: label names in column order and
    class probabilities for (premise, hypothesis) pairs."""

    labels: Sequence[str]

    def entailment_probs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Probabilities, shape [len(pairs), len(labels)], rows summing to 1."""


def entailment_index(labels: Sequence[str], model: str = "the NLI model") -> int:
    lowered = [str(label).strip().lower() for label in labels]
    for i, label in enumerate(lowered):
        if label == "entailment":
            return i
    for i, label in enumerate(lowered):
        if label.startswith("entail"):
            return i
    raise OptionError(
        f"{model} has no entailment label in config.id2label (labels: {', '.join(map(str, labels))}); "
        "use a model fine-tuned for NLI (e.g. roberta-large-mnli)"
    )


class TransformersNLIBackend:
    """A local sequence-classification checkpoint (AutoModelForSequenceClassification
    and its fast tokenizer), label order taken from `model.config.id2label`."""

    def __init__(self, model: str, *, device: str | None = None, batch_size: int = 32, dtype: str = "auto") -> None:
        path = resolve_model_path(model)
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.name = model
        self.path = path
        self.device = pick_device(device)
        self.batch_size = batch_size
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(path), use_fast=True, local_files_only=True)
            net = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ModelNotAvailable(f"NLI model {model!r} at {path}: cannot load it ({exc})") from exc
        self.torch_dtype = _resolve_dtype(dtype, self.device)
        net.to(device=self.device, dtype=self.torch_dtype)
        net.eval()
        self.model = net
        id2label = net.config.id2label or {}
        self.labels = [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(net.config.num_labels)]
        entailment_index(self.labels, f"model {model!r}")  # fail at load time, not mid-run
        self.max_length = _max_length(self.tokenizer, net.config)
        self._lock = threading.Lock()

    def entailment_probs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        out = np.zeros((len(pairs), len(self.labels)), dtype=np.float64)
        if not pairs:
            return out
        # Length-sorted batches keep padding (and so wasted compute) small.
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]), reverse=True)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                enc = self.tokenizer(
                    [pairs[i][0] for i in batch],
                    [pairs[i][1] for i in batch],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                logits = self.model(**enc).logits.float()
                out[batch] = torch.softmax(logits, dim=-1).cpu().numpy()
        return out


def _resolve_dtype(dtype: str, device: str) -> Any:
    import torch

    choice = (dtype or "auto").strip().lower()
    table = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16,
             "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
    if choice == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if choice not in table:
        raise OptionError(f"dtype={dtype!r}: use auto, float32, float16 or bfloat16")
    return table[choice]


def _max_length(tokenizer: Any, config: Any) -> int:
    limit = int(getattr(tokenizer, "model_max_length", 0) or 0)
    positions = int(getattr(config, "max_position_embeddings", 0) or 0)
    if positions and "roberta" in str(getattr(config, "model_type", "")):
        positions -= int(getattr(config, "pad_token_id", 1) or 1) + 1  # RoBERTa positions start after padding
    candidates = [v for v in (limit if 0 < limit < 100_000 else 0, positions) if v > 0]
    return min(candidates) if candidates else 512


_BACKENDS: dict[tuple[str, str, str], TransformersNLIBackend] = {}
_BACKENDS_LOCK = threading.Lock()


def get_nli_backend(model: str, *, device: str | None = None, batch_size: int = 32,
                    dtype: str = "auto") -> TransformersNLIBackend:
    """One loaded model per (directory, device, dtype) and process."""
    path = resolve_model_path(model)
    key = (str(path), pick_device(device), (dtype or "auto").lower())
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            backend = TransformersNLIBackend(model, device=device, batch_size=batch_size, dtype=dtype)
            _BACKENDS[key] = backend
        backend.batch_size = batch_size
        return backend


# ---- the metric ---------------------------------------------------------------
def fine_label(omission: bool, hallucination: bool) -> str:
    if omission and hallucination:
        return LABEL_BOTH
    if omission:
        return LABEL_OMISSION
    if hallucination:
        return LABEL_HALLUCINATION
    return LABEL_OK


class NLIMetric(Metric):
    """NLI semantic accuracy for data-to-text (needs triples, no references).

    Options: `model` (local directory or WORKBENCH_MODELS name; default
    roberta-large-mnli), `templates` (JSON object predicate -> template with
    <subject> and <object>, or a list whose first entry is used),
    `templates_file` (path to such a JSON file; `templates` entries win),
    `batch_size`, `device`, `dtype` (auto = bf16/fp16 on CUDA, fp32 on CPU).

    `NLIMetric(backend=...)` plugs in another NLI backend (anything with
    `labels` and `entailment_probs(pairs)`).
    """

    name: ClassVar[str] = "nli"
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    needs_refs: ClassVar[bool] = False
    needs_data: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        "model": "roberta-large-mnli",
        "templates": {},
        "templates_file": None,
        "batch_size": 32,
        "device": None,
        "dtype": "auto",
    }

    def __init__(self, backend: NLIBackend | None = None, **options: Any) -> None:
        super().__init__(**options)
        templates: dict[str, Any] = {}
        if self.options["templates_file"]:
            templates.update(load_templates(self.options["templates_file"]))
        templates.update(_check_templates(self.options["templates"] or {}, "templates"))
        self.templates = templates
        if int(self.options["batch_size"]) < 1:
            raise OptionError(f"batch_size={self.options['batch_size']}: must be at least 1")
        self._backend = backend

    @property
    def backend(self) -> NLIBackend:
        if self._backend is None:
            self._backend = get_nli_backend(
                self.options["model"] or "roberta-large-mnli",
                device=self.options["device"],
                batch_size=int(self.options["batch_size"]),
                dtype=self.options["dtype"] or "auto",
            )
        return self._backend

    def facts(self, triples: Sequence[Triple]) -> list[str]:
        return [triple_to_fact(t, self.templates) for t in triples]

    def score(self, hyps, refs=None, srcs=None, data=None) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        per_segment: list[tuple[list[Triple], list[str]]] = []
        for i, triples in enumerate(data):
            checked = []
            for triple in triples or []:
                if not isinstance(triple, (list, tuple)) or len(triple) != 3:
                    raise InputError(f"nli: segment {i}: each triple must be [subject, predicate, object], got {triple!r}")
                checked.append(tuple(str(part) for part in triple))
            per_segment.append((checked, self.facts(checked)))

        # Every premise/hypothesis pair of the call goes to the model at once.
        pairs: list[tuple[str, str]] = []
        spans: list[tuple[int, int]] = []
        for hyp, (_, facts) in zip(hyps, per_segment):
            start = len(pairs)
            pairs.extend((hyp, fact) for fact in facts)  # omission checks
            pairs.append((" ".join(facts), hyp))  # hallucination check
            spans.append((start, len(pairs)))
        backend = self.backend
        labels = [str(label).lower() for label in backend.labels]
        ent = entailment_index(labels, f"model {self.options['model']!r}")
        probs = np.asarray(backend.entailment_probs(pairs), dtype=np.float64)
        if probs.shape != (len(pairs), len(labels)):
            raise MetricError(f"nli backend returned shape {probs.shape}, expected {(len(pairs), len(labels))}")

        def passed(row: np.ndarray) -> bool:
            return int(np.argmax(row)) == ent

        def named(row: np.ndarray) -> dict[str, float]:
            return {label: float(p) for label, p in zip(labels, row)}

        results = []
        for (start, end), (triples, facts) in zip(spans, per_segment):
            fact_rows, hall_row = probs[start:end - 1], probs[end - 1]
            fact_info = [
                {"triple": list(t), "fact": f, "entailed": passed(row), "probs": named(row)}
                for t, f, row in zip(triples, facts, fact_rows)
            ]
            omitted = [info["fact"] for info in fact_info if not info["entailed"]]
            hallucination = not passed(hall_row)
            label = fine_label(bool(omitted), hallucination)
            confidence = float(min([hall_row[ent], *(row[ent] for row in fact_rows)]))
            ok = label == LABEL_OK
            results.append(SegmentResult(
                score=1.0 if ok else 0.0,
                extra={
                    "label": label,
                    "rough": ROUGH_OK if ok else ROUGH_NOT_OK,
                    "confidence": confidence,
                    "facts": fact_info,
                    "omitted": omitted,
                    "hallucination_check": {"entailed": not hallucination, "probs": named(hall_row)},
                },
                stats=[1.0 if ok else 0.0, 1.0] + [1.0 if label == name else 0.0 for name in FINE_LABELS[1:]],
            ))
        return results

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        ok, n, *counts = totals
        extra = {"n": int(n), "labels": {LABEL_OK: int(ok), **{k: int(c) for k, c in zip(FINE_LABELS[1:], counts)}}}
        return CorpusResult(ok / n if n else float("nan"), extra)

    def library_versions(self) -> dict[str, str]:
        if self._backend is not None and not isinstance(self._backend, TransformersNLIBackend):
            return {"backend": type(self._backend).__name__}
        versions = {}
        for lib in ("transformers", "torch"):
            try:
                versions[lib] = metadata.version(lib)
            except metadata.PackageNotFoundError:
                pass
        return versions
