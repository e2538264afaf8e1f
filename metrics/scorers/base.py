"""The shape every metric shares (after sacrebleu's `Metric`).

A metric is constructed with keyword options (class-level `defaults` give the
names, types and default values), scores a batch of segments in one call,
and aggregates segment results into a corpus result. Where the metric allows
it, each segment carries summable sufficient statistics (`stats`) so that
chunks scored on different workers combine exactly into the corpus score.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from metrics.scorers.errors import InputError, OptionError

Triple = tuple[str, str, str]


@dataclass
class SegmentResult:
    """One segment's score; `extra` holds metric-specific fields (precision,
    label, errors ...), `stats` the summable statistics if any."""

    score: float
    extra: dict[str, Any] = field(default_factory=dict)
    stats: list[float] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"score": self.score}
        out.update(self.extra)
        return out


@dataclass
class CorpusResult:
    score: float
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = {"score": self.score}
        out.update(self.extra)
        return out


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Turn a CLI string (KEY=VALUE) into the type of the option's default."""
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            low = value.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, (dict, list)):
            return json.loads(value)
    except (ValueError, json.JSONDecodeError, RecursionError) as exc:
        raise OptionError(f"option {name}={value[:80]!r}: expected {type(default).__name__}") from exc
    # default None: keep the string (paths, model names); "none" means unset.
    return None if value.strip().lower() in ("", "none", "null") else value


def _signature_value(value: Any) -> str:
    """One spelling for every signature field: yes/no, none, compact JSON."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return str(value)


class Metric(ABC):
    """Base class. Subclasses set `name`, `defaults`, and implement `score`.

    >>> from metrics.scorers import get_metric
    >>> m = get_metric("chrf")
    >>> segs = m.score(["the cat sat"], [["the cat sat"]])
    >>> m.corpus_score(segs).score
    100.0

    Chunked scoring (workers): compute `state = m.corpus_state(all hyps, refs,
    srcs, data)` once over the whole corpus, `load_corpus_state(state)` into
    every instance that scores a chunk, and `corpus_score` over the
    concatenated segment results: segment scores, corpus score and
    `signature()` are those of one call over the whole corpus. Metrics with
    `level == "system"` (distinct-n, ttr, self-bleu) describe a set of
    outputs: the caller scores one system's outputs per call.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    needs_refs: ClassVar[bool] = True
    needs_source: ClassVar[bool] = False
    needs_data: ClassVar[bool] = False
    # Inputs read when given but never required ("source", "data"): `needs_source` /
    # `needs_data` then say that the metric reads them, not that it fails without them.
    optional_inputs: ClassVar[frozenset[str]] = frozenset()
    # True when scoring runs a neural model (routes runs to the `gpu` queue).
    uses_model: ClassVar[bool] = False
    # "system": the score describes a set of outputs (diversity metrics), and
    # segment results are each output's contribution, not a quality judgement.
    level: ClassVar[str] = "segment"
    # What `corpus_score` is, in the words every page, command and export shows next to a
    # system's or the corpus's score: "corpus BLEU" where it comes from statistics summed over
    # the outputs (sacrebleu's corpus_bleu), "mean of segment scores" where it is that mean.
    corpus_label: ClassVar[str] = "mean of segment scores"
    defaults: ClassVar[dict[str, Any]] = {}
    # Inclusive (low, high) range of each numeric option; checked at construction,
    # so a huge value fails at once with a clear message instead of exhausting memory.
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {}
    # Options that change speed, never scores: left out of the signature.
    speed_options: ClassVar[frozenset[str]] = frozenset({"batch_size", "device"})
    # Outputs per chunk of a run; None: the default for the kind (metrics.services.runs).
    chunk_outputs: ClassVar[int | None] = None
    # What corpus_state() looks at, so a run reads no more texts than that before chunking:
    # any of "hyps", "refs", "srcs", "data", or "nrefs" for the number of references of each
    # segment alone (the references are then empty strings). Empty: it reads nothing.
    corpus_state_reads: ClassVar[frozenset[str]] = frozenset({"hyps", "refs", "srcs", "data"})

    # Kinds of model the `model` option may name (metrics.scorers.loading.model_kind): what the
    # run form's model picker offers for this metric.
    model_kinds: ClassVar[frozenset[str]] = frozenset({"encoder", "classifier"})

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            known = ", ".join(sorted(self.defaults)) or "none"
            raise OptionError(f"{self.name}: unknown option(s) {', '.join(unknown)} (known: {known})")
        self.options: dict[str, Any] = dict(self.defaults)
        for key, value in options.items():
            self.options[key] = _coerce(key, value, self.defaults[key])
        self._check_bounds()
        self._check_paths()
        self._corpus_state: dict[str, Any] | None = None

    def _check_paths(self) -> None:
        # Syntax only: the web process builds metrics to check options and must never open the
        # files they name; the worker resolves them (metrics.scorers.files).
        from metrics.scorers.files import PATH_OPTIONS, check_syntax  # lazy: cycle with metrics.scorers

        for key in PATH_OPTIONS & self.options.keys():
            if self.options[key] is not None:
                check_syntax(key, self.options[key])

    def _check_bounds(self) -> None:
        for key, (low, high) in self.option_bounds.items():
            value = self.options.get(key)
            if value is None:
                continue
            integral = isinstance(low, int) and isinstance(high, int)
            kind = "an integer" if integral else "a number"
            if isinstance(value, str):
                try:
                    value = int(value.strip()) if integral else float(value.strip())
                except ValueError:
                    raise OptionError(
                        f"{self.name}: {key}={value[:80]!r}: expected {kind} from {low} to {high}"
                    ) from None
            if isinstance(value, float) and integral and value.is_integer():
                value = int(value)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or (integral and not isinstance(value, int))
                or not math.isfinite(value)
                or not low <= value <= high
            ):
                shown = repr(value) if not isinstance(value, str) else repr(value[:80])
                raise OptionError(f"{self.name}: {key}={shown} is out of range: expected {kind} from {low} to {high}")
            self.options[key] = value

    def check_resources(self) -> None:
        """What a run can refuse before any worker starts, beyond the options' syntax: cheap
        reads inside the operator's directories only (the judge's model must be a causal LM).
        Called by `run_create`; raises a MetricError with the reason. Default: nothing."""

    # ---- scoring -----------------------------------------------------------
    @abstractmethod
    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        """Score a batch. `refs[i]` is the list of references of segment i."""

    def corpus_score(self, segments: Sequence[SegmentResult]) -> CorpusResult:
        """Default: from summed statistics when every segment has them,
        otherwise the mean of segment scores (NaN for no segments)."""
        if segments and all(s.stats is not None for s in segments):
            totals = [sum(col) for col in zip(*(s.stats for s in segments))]
            return self.score_from_stats(totals)
        if not segments:
            return CorpusResult(math.nan)
        return CorpusResult(sum(s.score for s in segments) / len(segments))

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        raise NotImplementedError(f"{self.name} has no summable statistics")

    def segment_totals(self, hyps, refs=None, srcs=None, data=None) -> list[float] | None:
        """The statistics of these segments summed, without scoring each segment: all a corpus
        score needs (`score_from_stats` of the totals of every chunk, summed, equals `corpus_score`
        of the segments). None when the metric has no summable statistics or no cheaper way; the
        caller then scores the segments."""
        return None

    # ---- state shared by the chunks of one corpus --------------------------
    def corpus_state(self, hyps, refs=None, srcs=None, data=None) -> dict | None:
        """JSON-serialisable state computed once over the WHOLE corpus before chunked
        scoring (idf tables from all references, number of references for the signature, ...).
        None when the metric needs none."""
        return None

    def load_corpus_state(self, state: dict | None) -> None:
        """Use `state` (possibly computed on another machine) for every later score() call
        and for signature()."""
        if state is not None and not isinstance(state, dict):
            raise InputError(f"{self.name}: corpus state must be a JSON object or None")
        self._corpus_state = state

    @property
    def loaded_state(self) -> dict[str, Any] | None:
        return self._corpus_state

    # ---- helpers for subclasses -------------------------------------------
    def check_inputs(self, hyps, refs, srcs, data) -> None:
        n = len(hyps)
        if self.needs_refs:
            if refs is None:
                raise InputError(f"{self.name} needs references")
            if len(refs) != n:
                raise InputError(f"{self.name}: {n} hypotheses but {len(refs)} reference lists")
        if self.needs_source:
            if srcs is None:
                raise InputError(f"{self.name} needs source texts")
            if len(srcs) != n:
                raise InputError(f"{self.name}: {n} hypotheses but {len(srcs)} sources")
        if self.needs_data:
            if data is None:
                raise InputError(f"{self.name} needs structured input data (triples)")
            if len(data) != n:
                raise InputError(f"{self.name}: {n} hypotheses but {len(data)} data entries")

    def reference_lists(self, refs: Sequence[Sequence[str]]) -> list[list[str]]:
        """Each segment's references with None entries dropped; a bare string
        instead of a list, or a segment left with no reference, is an InputError."""
        lists = []
        for k, seg_refs in enumerate(refs):
            if isinstance(seg_refs, str):
                raise InputError(f"{self.name}: references of segment {k} must be a list of strings")
            kept = [r for r in seg_refs if r is not None]
            if not kept or not all(isinstance(r, str) for r in kept):
                raise InputError(f"{self.name}: segment {k} has no reference string")
            lists.append(kept)
        return lists

    # ---- reproducibility ---------------------------------------------------
    def library_versions(self) -> dict[str, str]:
        """Versions of the libraries whose behaviour the score depends on."""
        return {}

    def signature_fields(self) -> dict[str, Any]:
        """The fields after `name|v:N`, in order: every option that can change a
        score, resolved (e.g. which layer "the top layer" is), from the options
        and the loaded corpus state only, never from earlier calls."""
        return {k: self.options[k] for k in sorted(self.options) if k not in self.speed_options}

    def signature(self) -> str:
        """`name|v:N|field:value|...|library:version`: one format for every metric."""
        parts = [self.name, f"v:{self.version}"]
        parts += [f"{key}:{_signature_value(value)}" for key, value in self.signature_fields().items()]
        parts += [f"{lib}:{ver}" for lib, ver in sorted(self.library_versions().items())]
        return "|".join(parts)
