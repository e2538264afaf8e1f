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

import hashlib
import json
import re
import threading
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from metrics.scorers import files
from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.errors import InputError, MetricError, ModelNotAvailable, OptionError
from metrics.scorers.loading import compute_dtype_name, pick_device, resolve_model_path, torch_dtype
from metrics.scorers.progress import step

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


# nlgi_eval's names for E2E slots as TGen writes them -> the template keys.
NLGI_EVAL_REMAP = {
    "eat_type": "eatType",
    "rating": "customer rating",
    "family_friendly": "familyFriendly",
    "price_range": "priceRange",
}


def nlgi_eval_fact(triple: Triple, templates: Mapping[str, Any]) -> str:
    """A fact as ufal/nlgi_eval's `triples_to_templates` writes it: its template
    (or the one of the remapped E2E slot name), else the back-off
    "The <predicate> of <subject> is <object>." with camelCase split but its
    case kept ("The birth Place of ..."); quotes stripped from the object
    only; every underscore of the sentence becomes a space; no other cleaning.

    >>> nlgi_eval_fact(("Alan_Bean", "birthPlace", '"Wheeler, Texas"'), {})
    'The birth Place of Alan Bean is Wheeler, Texas.'
    """
    subject, predicate, obj = (str(part) for part in triple)
    entry = templates.get(predicate)
    if entry is None and predicate in NLGI_EVAL_REMAP:
        entry = templates.get(NLGI_EVAL_REMAP[predicate])
    if entry is None:
        entry = re.sub(r"([a-z])([A-Z])", r"\1 \2", f"The {predicate} of <subject> is <object>.")
    if isinstance(entry, Mapping):
        if obj not in entry:
            raise InputError(f"nli: template for {predicate!r} has no entry for the value {obj!r}")
        entry = entry[obj]
    if isinstance(entry, list):
        entry = entry[0]
    obj_text = re.sub(r"""^["'](.*)["']$""", r"\1", obj)
    return entry.replace("<subject>", subject).replace("<object>", obj_text).replace("_", " ")


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
            raise InputError(f"E2E MR {mr!r}: cannot parse near {text[pos : pos + 30]!r} (expected attr[value], ...)")
        slots.append((match.group(1).strip(), match.group(2).strip()))
        pos = match.end()
    names = [value for attr, value in slots if attr == "name"]
    if not names:
        raise InputError(f"E2E MR {mr!r} has no name[...] slot to use as the subject")
    return [(names[0], attr, value) for attr, value in slots if attr != "name"]


def _templates_option(value: Any) -> dict[str, Any]:
    """The `templates` option: unset, a JSON object (or its text), or the path of a JSON file."""
    if value is None or value == {}:
        return {}
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise OptionError(f"templates: not valid JSON ({exc})") from None
        else:
            return load_templates(text, option="templates")
    return _check_templates(value, "templates")


def load_templates(path: str | Path, *, option: str = "templates_file") -> dict[str, Any]:
    """Read a templates JSON file (predicate -> template string, list, or
    value-keyed dict, nlgi_eval's format), from an allowed directory only
    (metrics.scorers.files). Messages name neither the path nor the content."""
    text = files.read_text(option, str(path))
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise OptionError(f"{option}: the file is not valid JSON") from None
    return _check_templates(value, f"{option} file")


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
        """Probabilities, shape [len(pairs), len(labels)], rows summing to 1.
        With `compat=nlgi_eval` the metric calls `entailment_probs(pairs,
        encoding="joined")`: encode each pair as the single string
        "premise </s></s> hypothesis", as nlgi_eval does."""


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
        from transformers import (  # lazy: heavy optional dependency (model metrics)
            AutoModelForSequenceClassification,
            AutoTokenizer,
        )

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

    def entailment_probs(self, pairs: Sequence[tuple[str, str]], encoding: str = "pair") -> np.ndarray:
        """`encoding="pair"`: the tokenizer's standard text pair; `"joined"`:
        one string `premise </s></s> hypothesis` (ufal/nlgi_eval's encoding,
        which gives other token ids around the separator)."""
        import torch  # lazy: heavy optional dependency, loaded only by model metrics

        out = np.zeros((len(pairs), len(self.labels)), dtype=np.float64)
        if not pairs:
            return out
        # Length-sorted batches keep padding (and so wasted compute) small.
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]), reverse=True)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                step(start, len(order))  # between batches: the caller may stop us here
                batch = order[start : start + self.batch_size]
                if encoding == "joined":
                    texts = [f"{pairs[i][0]} </s></s> {pairs[i][1]}" for i in batch]
                    enc = self.tokenizer(
                        texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
                    ).to(self.device)
                else:
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
    return torch_dtype(compute_dtype_name(device, dtype or "auto"))


def _max_length(tokenizer: Any, config: Any) -> int:
    limit = int(getattr(tokenizer, "model_max_length", 0) or 0)
    positions = int(getattr(config, "max_position_embeddings", 0) or 0)
    if positions and "roberta" in str(getattr(config, "model_type", "")):
        positions -= int(getattr(config, "pad_token_id", 1) or 1) + 1  # RoBERTa positions start after padding
    candidates = [v for v in (limit if 0 < limit < 100_000 else 0, positions) if v > 0]
    return min(candidates) if candidates else 512


_BACKENDS: dict[tuple[str, str, str], TransformersNLIBackend] = {}
_BACKENDS_LOCK = threading.Lock()


def get_nli_backend(
    model: str, *, device: str | None = None, batch_size: int = 32, dtype: str = "auto"
) -> TransformersNLIBackend:
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


COMPAT_MODES = ("paper", "nlgi_eval")


class NLIMetric(Metric):
    """NLI semantic accuracy for data-to-text (needs triples, no references).

    Options: `model` (local directory or WORKBENCH_MODELS name; default
    roberta-large-mnli), `templates` (JSON object predicate -> template with
    <subject> and <object>, a list whose first entry is used, or an object
    keyed by value; or the path of a JSON file holding one), `templates_file`
    (a path; `templates` entries win), `compat`, `batch_size`, `device`,
    `dtype` (auto = bf16/fp16 on CUDA, fp32 on CPU).

    `compat=paper` (default) follows the paper's text (module docstring).
    `compat=nlgi_eval` reproduces ufal/nlgi_eval's `check_inst` (commit
    34f304a): facts from `nlgi_eval_fact`; every pair encoded as the single
    string "premise </s></s> hypothesis"; besides the per-fact omission checks
    and the hallucination check (all facts joined by a space -> output), a
    whole-input omission check (output -> all facts joined) that alone can set
    "omission" (then `omitted` may be empty); confidence = the minimum
    entailment probability of all these checks. nlgi_eval calls the
    both-errors label "hallucination+omission"; ours is
    "omission+hallucination" in both modes. Differences left: nlgi_eval
    never truncates (a pair longer than the model's 512 positions crashes
    it; we truncate) and runs one pair at a time (we batch with padding,
    equal to float rounding).

    `NLIMetric(backend=...)` plugs in another NLI backend (anything with
    `labels` and `entailment_probs(pairs)`; with compat=nlgi_eval it is
    called with `encoding="joined"`).
    """

    name: ClassVar[str] = "nli"
    model_kinds: ClassVar[frozenset[str]] = frozenset({"classifier"})
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    needs_refs: ClassVar[bool] = False
    needs_data: ClassVar[bool] = True
    uses_model: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        "model": "roberta-large-mnli",
        "templates": None,
        "templates_file": None,
        "compat": "paper",
        "batch_size": 32,
        "device": None,
        "dtype": "auto",
    }
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"batch_size": (1, 4096)}

    def __init__(self, backend: NLIBackend | None = None, **options: Any) -> None:
        super().__init__(**options)
        # Paths stay strings until the worker scores: the web process builds this metric to check a
        # run's options and must not open the files they name (metrics.scorers.files).
        if self.options["templates_file"]:
            files.check_syntax("templates_file", self.options["templates_file"])
        inline = self.options["templates"]
        if isinstance(inline, str) and not inline.strip().startswith("{"):
            files.check_syntax("templates", inline.strip())
        else:
            _templates_option(inline)
        self._templates: dict[str, Any] | None = None
        compat = str(self.options["compat"] or "paper").strip().lower()
        if compat not in COMPAT_MODES:
            raise OptionError(f"nli: compat={compat!r}; use one of {', '.join(COMPAT_MODES)}")
        self.options["compat"] = compat
        self._backend = backend

    @property
    def templates(self) -> dict[str, Any]:
        if self._templates is None:
            templates: dict[str, Any] = {}
            if self.options["templates_file"]:
                templates.update(load_templates(self.options["templates_file"]))
            templates.update(_templates_option(self.options["templates"]))
            self._templates = templates
        return self._templates

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
        if self.options["compat"] == "nlgi_eval":
            return [nlgi_eval_fact(t, self.templates) for t in triples]
        return [triple_to_fact(t, self.templates) for t in triples]

    def _probs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        backend = self.backend
        if self.options["compat"] == "nlgi_eval":
            probs = backend.entailment_probs(pairs, encoding="joined")
        else:
            probs = backend.entailment_probs(pairs)
        probs = np.asarray(probs, dtype=np.float64)
        if probs.shape != (len(pairs), len(backend.labels)):
            raise MetricError(f"nli backend returned shape {probs.shape}, expected {(len(pairs), len(backend.labels))}")
        return probs

    def score(self, hyps, refs=None, srcs=None, data=None) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        compat = self.options["compat"] == "nlgi_eval"
        per_segment: list[tuple[list[Triple], list[str]]] = []
        for i, triples in enumerate(data):
            checked = []
            for triple in triples or []:
                if not isinstance(triple, (list, tuple)) or len(triple) != 3:
                    raise InputError(
                        f"nli: segment {i}: each triple must be [subject, predicate, object], got {triple!r}"
                    )
                checked.append(tuple(str(part) for part in triple))
            per_segment.append((checked, self.facts(checked)))

        # Every premise/hypothesis pair of the call goes to the model at once:
        # per segment, the omission pairs (output, fact), then the hallucination
        # pair (facts joined, output), then (nlgi_eval) the whole-input omission pair.
        pairs: list[tuple[str, str]] = []
        spans: list[int] = []
        for hyp, (_, facts) in zip(hyps, per_segment):
            spans.append(len(pairs))
            pairs.extend((hyp, fact) for fact in facts)
            pairs.append((" ".join(facts), hyp))
            if compat:
                pairs.append((hyp, " ".join(facts)))
        labels = [str(label).lower() for label in self.backend.labels]
        ent = entailment_index(labels, f"model {self.options['model']!r}")
        probs = self._probs(pairs)

        def passed(row: np.ndarray) -> bool:
            return int(np.argmax(row)) == ent

        def named(row: np.ndarray) -> dict[str, float]:
            return {label: float(p) for label, p in zip(labels, row)}

        results = []
        for start, (triples, facts) in zip(spans, per_segment):
            fact_rows = probs[start : start + len(facts)]
            hall_row = probs[start + len(facts)]
            fact_info = [
                {"triple": list(t), "fact": f, "entailed": passed(row), "probs": named(row)}
                for t, f, row in zip(triples, facts, fact_rows)
            ]
            omitted = [info["fact"] for info in fact_info if not info["entailed"]]
            hallucination = not passed(hall_row)
            checks = [hall_row, *fact_rows]
            extra: dict[str, Any] = {}
            omission = bool(omitted)
            if compat:
                whole_row = probs[start + len(facts) + 1]
                omission = omission or not passed(whole_row)
                checks.append(whole_row)
                extra["omission_check"] = {"entailed": passed(whole_row), "probs": named(whole_row)}
            label = fine_label(omission, hallucination)
            confidence = float(min(row[ent] for row in checks))
            ok = label == LABEL_OK
            results.append(
                SegmentResult(
                    score=1.0 if ok else 0.0,
                    extra={
                        "label": label,
                        "rough": ROUGH_OK if ok else ROUGH_NOT_OK,
                        "confidence": confidence,
                        "facts": fact_info,
                        "omitted": omitted,
                        "hallucination_check": {"entailed": not hallucination, "probs": named(hall_row)},
                        **extra,
                    },
                    stats=[1.0 if ok else 0.0, 1.0] + [1.0 if label == name else 0.0 for name in FINE_LABELS[1:]],
                )
            )
        return results

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        ok, n, *counts = totals
        extra = {"n": int(n), "labels": {LABEL_OK: int(ok), **{k: int(c) for k, c in zip(FINE_LABELS[1:], counts)}}}
        return CorpusResult(ok / n if n else float("nan"), extra)

    def signature_fields(self) -> dict[str, Any]:
        """Model, compat mode, a digest of the templates in force (from the
        option or the file), and the compute dtype."""
        templates = "none"
        if self.templates:
            blob = json.dumps(self.templates, sort_keys=True, ensure_ascii=False).encode("utf-8")
            templates = f"sha256:{hashlib.sha256(blob).hexdigest()[:12]}"
        fields: dict[str, Any] = {
            "model": self.options["model"] or "roberta-large-mnli",
            "compat": self.options["compat"],
            "templates": templates,
        }
        if self._backend is None or isinstance(self._backend, TransformersNLIBackend):
            fields["dtype"] = compute_dtype_name(self.options["device"], self.options["dtype"] or "auto")
        return fields

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
