"""minED: the minimum number of corrections that make a hypothesis acceptable
to an embedded metric, and the severity of each error (Bañeras-Roux et al.
2024, seed 004).

The hypothesis is aligned with the reference (Levenshtein, the same
alignment jiwer uses: rapidfuzz's edit operations; when several alignments
have the same cost, rapidfuzz picks one and the seed's own aligner may pick
another, e.g. which of two equal words counts as inserted: E is the same,
but the corrected candidates, and so k and the severities, can differ under
SemDist or BERTScore, and under CER at the edges, through jiwer's strip;
WER's k cannot) at the word level
(`minwed`) or the character level (`mincer`), which gives E errors
(substitutions, insertions, deletions). Correcting a subset of errors
rewrites the hypothesis towards the reference. The score is the smallest k
such that correcting some k errors brings the embedded lower-is-better metric
strictly under `threshold` (lower is better: 0 = already acceptable).

Search (level by level, as in the paper's graph): level 0 is the hypothesis,
level 1 every single correction, level L every subset of L corrections. The
candidates of a level, for every segment of the call, are scored in batched
calls of the embedded metric (`get_metric(name).score(hyps, refs)`),
duplicates once; within a level the most promising subsets (largest summed
single-correction gains) go first, in rounds of 8, 16, ... candidates per
segment, and a segment leaves the level at its first passing candidate. The
search stops at the first level where a candidate passes, so k is exact.

* Coherent metrics need no level search. WER inside minWED: correcting one
  error always removes exactly one edit, whatever else was corrected (the
  alignment is optimal, so a candidate with m errors left is at edit
  distance exactly m from the reference): sort the gains and take the
  smallest k whose summed gains pass. CER inside minCER is coherent except
  at the edges, because jiwer's CER strips the candidate's leading and
  trailing whitespace; `metrics.scorers.mincer_search` finds the exact k
  there (a closed form, a lower bound met by a witness, or a dynamic
  programme). `coherent=auto` uses these for exactly those pairs (default
  options of the embedded metric); `no` forces the full search; `yes`
  forces the closed form (for minCER with CER the exact one, otherwise the
  summed single gains).
* The exhaustive search is capped: at most `max_errors` levels (corrections)
  and at most `max_candidates` candidate hypotheses scored per segment.
  Beyond either cap a best-first (greedy) completion, batched across
  segments, adds one correction at a time to the best candidate of the last
  complete level until the metric passes. Its k is an upper bound; the
  segment is flagged `capped` and carries `k_lower_bound` (one more than the
  last level searched completely).

Error severity = metric(hypothesis) - metric(hypothesis with only that error
corrected), kept with its error (`errors`: position, type, ref, hyp,
severity) so a UI can colour tokens. `corrected` lists (as indices into
`errors`) one set of k corrections that makes the hypothesis pass, the
candidate the search accepted; all errors when even the reference does not
pass (`reached` false).

Default thresholds (the paper tunes θ per metric; these are starting points,
all metrics on a lower-is-better [0, 1] scale): semdist 0.1, bertscore
(1 - F1) 0.1, wer 0.1, cer 0.1. Other embedded metrics need `threshold`;
a higher-is-better embedded metric is used as 1 - score (meant for scores in
[0, 1]). Options of the embedded metric go in `metric_options` (a JSON
object, e.g. {"model": "/models/camembert"}); an embedded metric must score
each pair independently of the rest of the call (so not bertscore idf=true).

>>> from metrics.scorers.mined import align
>>> [(e.type, e.position, e.ref, e.hyp) for e in align("a b c", "a x c d", "word").errors]
[('substitution', 1, 'b', 'x'), ('insertion', 3, None, 'd')]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, ClassVar

from metrics.scorers.base import CorpusResult, Metric, SegmentResult
from metrics.scorers.errors import OptionError
from metrics.scorers.mincer_search import interior_errors, min_corrections
from metrics.scorers.progress import checks_only
from metrics.scorers.registry import get_metric, metric_class

DEFAULT_THRESHOLDS: dict[str, float] = {"semdist": 0.1, "bertscore": 0.1, "wer": 0.1, "cer": 0.1}
# A candidate passes when metric < threshold; the tolerance keeps sums of
# gains (coherent shortcut) and directly computed rates (full search) on the
# same side of the threshold despite floating-point rounding.
PASS_EPS = 1e-9
# Largest number of (hypothesis, reference) pairs sent in one embedded call.
EMBED_CHUNK = 4096
# Candidates per segment in the first round of a level (doubling each round):
# most levels end within the first round, which then costs one call.
FIRST_CHUNK = 8

SUBSTITUTION, INSERTION, DELETION = "substitution", "insertion", "deletion"
_TAGS = {"replace": SUBSTITUTION, "insert": INSERTION, "delete": DELETION}


# ---- alignment ----------------------------------------------------------------
@dataclass(frozen=True)
class EditError:
    """One error of the alignment. `position` indexes the hypothesis tokens (for
    a deletion: where the missing token belongs); `ref_position` the reference."""

    type: str
    position: int
    ref_position: int
    ref: str | None
    hyp: str | None


@dataclass
class Alignment:
    unit: str
    ref_tokens: list[str]
    hyp_tokens: list[str]
    errors: list[EditError]
    # Matched tokens as strings, errors as their index in `errors`.
    slots: list[str | int] = field(default_factory=list)

    @property
    def joiner(self) -> str:
        return " " if self.unit == "word" else ""

    def apply(self, corrected: Sequence[int] | set[int] | frozenset[int] = ()) -> str:
        """The hypothesis with the errors in `corrected` fixed."""
        fix = corrected if isinstance(corrected, (set, frozenset)) else set(corrected)
        out: list[str] = []
        for slot in self.slots:
            if isinstance(slot, str):
                out.append(slot)
                continue
            err = self.errors[slot]
            token = err.ref if slot in fix else err.hyp
            if token is not None:
                out.append(token)
        return self.joiner.join(out)

    @property
    def reference(self) -> str:
        return self.joiner.join(self.ref_tokens)


def tokenize(text: str, unit: str) -> list[str]:
    """Words split on whitespace (jiwer's WER transform); characters of the
    stripped text, spaces included (jiwer's CER transform)."""
    return text.split() if unit == "word" else list(text.strip())


def align(reference: str, hypothesis: str, unit: str = "word") -> Alignment:
    from rapidfuzz.distance import Levenshtein  # lazy: rapidfuzz loads only when this metric runs

    ref, hyp = tokenize(reference, unit), tokenize(hypothesis, unit)
    alignment = Alignment(unit, ref, hyp, [])
    i = j = 0
    for op in Levenshtein.editops(ref, hyp):
        while i < op.src_pos and j < op.dest_pos:  # matched run before the edit
            alignment.slots.append(hyp[j])
            i, j = i + 1, j + 1
        kind = _TAGS[op.tag]
        alignment.slots.append(len(alignment.errors))
        alignment.errors.append(
            EditError(
                type=kind,
                position=op.dest_pos,
                ref_position=op.src_pos,
                ref=ref[op.src_pos] if kind != INSERTION else None,
                hyp=hyp[op.dest_pos] if kind != DELETION else None,
            )
        )
        i += kind != INSERTION
        j += kind != DELETION
    while j < len(hyp):
        alignment.slots.append(hyp[j])
        j += 1
    return alignment


# ---- search -------------------------------------------------------------------
@dataclass
class _LevelWork:
    """One segment's candidates at the level being searched."""

    seg: "_Segment"
    combos: list[tuple[int, ...]]
    done: int = 0
    values: list[float] = field(default_factory=list)


@dataclass
class _Segment:
    alignment: Alignment
    base: float = math.nan
    singles: list[float] = field(default_factory=list)
    k: int | None = None
    capped: bool = False
    reached: bool = True
    k_lower_bound: int | None = None
    evaluated: int = 0
    best: tuple[tuple[int, ...], float] | None = None  # best subset of the last complete level
    corrected: tuple[int, ...] = ()  # the accepted set of corrections (all errors when not reached)


class _MinEDMetric(Metric):
    unit: ClassVar[str] = "word"
    coherent_metric: ClassVar[str] = "wer"
    higher_is_better: ClassVar[bool] = False
    needs_refs: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        "metric": "semdist",
        "threshold": None,
        "max_errors": 6,
        "max_candidates": 5000,
        "coherent": "auto",
        "metric_options": {},
    }
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {
        "threshold": (-1e6, 1e6),
        "max_errors": (1, 64),
        "max_candidates": (1, 10_000_000),
    }
    uses_model: ClassVar[bool] = True  # with the default embedded metric (semdist); see __init__

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        name = str(self.options["metric"] or "").strip().lower()
        if not name:
            raise OptionError(f"{self.name}: option metric must name the embedded metric (e.g. semdist, wer)")
        if name in ("minwed", "mincer"):
            raise OptionError(f"{self.name}: metric={name} cannot be embedded in minED")
        self.options["metric"] = name
        threshold = self.options["threshold"]
        if threshold is None:
            if name not in DEFAULT_THRESHOLDS:
                raise OptionError(
                    f"{self.name}: metric={name} has no default threshold; pass threshold=VALUE "
                    f"(defaults exist for {', '.join(sorted(DEFAULT_THRESHOLDS))})"
                )
            threshold = DEFAULT_THRESHOLDS[name]
        try:
            self.threshold = float(threshold)
        except (TypeError, ValueError):
            raise OptionError(f"{self.name}: threshold={threshold!r} is not a number") from None
        self.options["threshold"] = self.threshold
        if not isinstance(self.options["metric_options"], dict):
            raise OptionError(f"{self.name}: metric_options must be a JSON object")
        if name == "bertscore" and str(self.options["metric_options"].get("idf", "")).lower() in ("true", "1", "yes"):
            # idf comes from the references of each call, so a candidate's score would
            # depend on which other candidates share its batch.
            raise OptionError(f"{self.name}: embedded bertscore cannot use idf=true (its weights depend on the batch)")

        # Per instance: a model only when the embedded metric runs one (semdist, bertscore).
        self.uses_model = metric_class(name).uses_model
        coherent = str(self.options["coherent"]).strip().lower()
        if coherent not in ("auto", "yes", "no"):
            raise OptionError(f"{self.name}: coherent={coherent!r}: use auto, yes or no")
        self.options["coherent"] = coherent
        self._embedded: Metric | None = None

    # ---- embedded metric ---------------------------------------------------
    @property
    def embedded(self) -> Metric:
        if self._embedded is None:
            metric = get_metric(self.options["metric"], **self.options["metric_options"])
            if metric.needs_source or metric.needs_data or not metric.needs_refs:
                raise OptionError(f"{self.name}: metric={metric.name} must compare a hypothesis with a reference")
            self._embedded = metric
        return self._embedded

    @property
    def is_coherent(self) -> bool:
        if self.options["coherent"] != "auto":
            return self.options["coherent"] == "yes"
        # Our tokens are what the error-rate metric counts only with its default options.
        return self.options["metric"] == self.coherent_metric and not self.options["metric_options"]

    def _lower_is_better(self, segment: SegmentResult) -> float:
        metric = self.embedded
        if not metric.higher_is_better:
            return float(segment.score)
        value = segment.extra.get("f1", segment.score) if metric.name == "bertscore" else segment.score
        return 1.0 - float(value)

    def embedded_values(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Lower-is-better values of (hypothesis, reference) pairs, in batched
        calls; identical pairs are scored once."""
        unique = list(dict.fromkeys(pairs))
        values: dict[tuple[str, str], float] = {}
        for start in range(0, len(unique), EMBED_CHUNK):
            chunk = unique[start : start + EMBED_CHUNK]
            # The search makes rounds of embedded calls: their batches may stop the call (a
            # cancelled run) but say nothing of how far the search is.
            with checks_only():
                segments = self.embedded.score([h for h, _ in chunk], [[r] for _, r in chunk])
            values.update(zip(chunk, (self._lower_is_better(s) for s in segments)))
        return [values[p] for p in pairs]

    def passes(self, value: float) -> bool:
        return value < self.threshold - PASS_EPS

    # ---- scoring -----------------------------------------------------------
    def _pick_alignment(self, hyp: str, refs: Sequence[str]) -> Alignment:
        """With several references, the one needing the fewest corrections (first on ties)."""
        if not refs:
            raise OptionError(f"{self.name}: every segment needs a reference")
        options = [align(ref, hyp, self.unit) for ref in refs]
        return min(options, key=lambda a: len(a.errors))

    def score(self, hyps, refs=None, srcs=None, data=None) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        segs = [_Segment(self._pick_alignment(h, r)) for h, r in zip(hyps, refs)]
        self._search(segs, self.embedded_values)
        return [self._result(seg) for seg in segs]

    def _search(self, segs: list[_Segment], values: Callable[[list[tuple[str, str]]], list[float]]) -> None:
        max_levels, budget = int(self.options["max_errors"]), int(self.options["max_candidates"])

        # Levels 0 and 1 for every segment in one call: level 1 also gives the severities.
        pairs: list[tuple[str, str]] = []
        known = [self._known_singles(seg.alignment) for seg in segs]
        for seg, seg_known in zip(segs, known):
            a = seg.alignment
            pairs.append((a.apply(), a.reference))
            pairs.extend((a.apply((e,)), a.reference) for e, v in enumerate(seg_known) if v is None)
        scored = iter(values(pairs))
        pending: list[_Segment] = []
        for seg, seg_known in zip(segs, known):
            n_errors = len(seg.alignment.errors)
            seg.base = next(scored)
            seg.singles = [next(scored) if v is None else v for v in seg_known]
            seg.evaluated = 1 + n_errors
            if n_errors == 0 or self.passes(seg.base):
                seg.k = 0
                seg.reached = self.passes(seg.base)
            elif self.is_coherent and self._coherent_k(seg):
                pass
            elif any(self.passes(v) for v in seg.singles):
                best = min(range(n_errors), key=lambda e: (seg.singles[e], e))
                seg.k, seg.corrected = 1, (best,)
            elif n_errors == 1:
                seg.k, seg.reached, seg.corrected = 1, False, (0,)
            else:
                best = min(range(n_errors), key=lambda e: (seg.singles[e], e))
                seg.best = ((best,), seg.singles[best])
                pending.append(seg)

        level = 2
        greedy: list[_Segment] = []
        while pending:
            work: list[_LevelWork] = []
            for seg in pending:
                n_errors = len(seg.alignment.errors)
                if level > max_levels or seg.evaluated + math.comb(n_errors, level) > budget:
                    seg.capped, seg.k_lower_bound = True, level
                    greedy.append(seg)
                    continue
                # Most promising subsets first (largest summed single-correction gains);
                # the sort is stable, so ties keep lexicographic order.
                gains = [seg.base - v for v in seg.singles]
                combos = sorted(itertools.combinations(range(n_errors), level), key=lambda c: -sum(gains[e] for e in c))
                work.append(_LevelWork(seg, combos))
            pending = []
            chunk = FIRST_CHUNK
            while work:
                # One batched call per round for every segment still searching this level;
                # a segment stops at its first passing candidate (k is then this level).
                pairs = [
                    (w.seg.alignment.apply(c), w.seg.alignment.reference)
                    for w in work
                    for c in w.combos[w.done : w.done + chunk]
                ]
                scored = iter(values(pairs))
                still: list[_LevelWork] = []
                for w in work:
                    got = [next(scored) for _ in w.combos[w.done : w.done + chunk]]
                    w.done += len(got)
                    w.values.extend(got)
                    w.seg.evaluated += len(got)
                    passing = [i for i, v in enumerate(got) if self.passes(v)]
                    if passing:
                        w.seg.k = level
                        w.seg.corrected = w.combos[w.done - len(got) + passing[0]]
                    elif w.done < len(w.combos):
                        still.append(w)
                    elif level == len(w.seg.alignment.errors):
                        # even the reference itself does not pass
                        w.seg.k, w.seg.reached, w.seg.corrected = level, False, w.combos[0]
                    else:
                        best = min(range(len(w.combos)), key=lambda i: (w.values[i], w.combos[i]))
                        w.seg.best = (w.combos[best], w.values[best])
                        pending.append(w.seg)
                work = still
                chunk *= 2
            level += 1
        if greedy:
            self._greedy(greedy, values)

    def _known_singles(self, alignment: Alignment) -> list[float | None]:
        """Values of single-correction candidates known without scoring them (None: score it)."""
        return [None] * len(alignment.errors)

    def _coherent_k(self, seg: _Segment) -> bool:
        """Exact for coherent metrics: corrections' gains add up independently.
        True when it settled the segment (False sends it to the level search)."""
        order = sorted(range(len(seg.singles)), key=lambda e: (-(seg.base - seg.singles[e]), e))
        value = seg.base
        for k, e in enumerate(order, start=1):
            value -= seg.base - seg.singles[e]
            if self.passes(value):
                seg.k, seg.corrected = k, tuple(sorted(order[:k]))
                return True
        seg.k, seg.reached, seg.corrected = len(order), False, tuple(range(len(order)))
        return True

    def _greedy(self, segs: list[_Segment], values: Callable[[list[tuple[str, str]]], list[float]]) -> None:
        """Best-first completion past the cap, one correction per round, all
        capped segments of the call in one batched call per round."""
        active = list(segs)
        while active:
            batch = []
            for seg in active:
                chosen = set(seg.best[0])
                options = [e for e in range(len(seg.alignment.errors)) if e not in chosen]
                batch.append((seg, [tuple(sorted(chosen | {e})) for e in options]))
            pairs = [(seg.alignment.apply(c), seg.alignment.reference) for seg, combos in batch for c in combos]
            scored = iter(values(pairs))
            active = []
            for seg, combos in batch:
                level_values = [next(scored) for _ in combos]
                seg.evaluated += len(combos)
                best = min(range(len(combos)), key=lambda i: (level_values[i], combos[i]))
                seg.best = (combos[best], level_values[best])
                seg.corrected = combos[best]
                if self.passes(level_values[best]):
                    seg.k = len(combos[best])
                elif len(combos[best]) == len(seg.alignment.errors):
                    seg.k, seg.reached = len(combos[best]), False
                else:
                    active.append(seg)

    def _result(self, seg: _Segment) -> SegmentResult:
        a = seg.alignment
        errors = [
            {
                "position": e.position,
                "ref_position": e.ref_position,
                "type": e.type,
                "ref": e.ref,
                "hyp": e.hyp,
                "severity": seg.base - seg.singles[i],
            }
            for i, e in enumerate(a.errors)
        ]
        extra: dict[str, Any] = {
            "k": seg.k,
            "E": len(a.errors),
            "capped": seg.capped,
            "reached": seg.reached,
            "errors": errors,
            "corrected": list(seg.corrected),
            "metric": self.options["metric"],
            "metric_score": seg.base,
            "threshold": self.threshold,
            "evaluated": seg.evaluated,
            "unit": self.unit,
        }
        if seg.capped:
            extra["k_lower_bound"] = seg.k_lower_bound
        return SegmentResult(
            score=float(seg.k),
            extra=extra,
            stats=[float(seg.k), 1.0, float(len(a.ref_tokens)), float(len(a.errors)), float(seg.capped)],
        )

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        k, n, ref_len, n_errors, capped = totals
        extra = {
            "n": int(n),
            "rate": k / ref_len if ref_len else math.nan,  # minED as an error rate (k per reference token)
            "error_rate": n_errors / ref_len if ref_len else math.nan,  # plain WER/CER of the same alignment
            "capped": int(capped),
        }
        return CorpusResult(k / n if n else math.nan, extra)

    def library_versions(self) -> dict[str, str]:
        versions = {}
        try:
            versions["rapidfuzz"] = metadata.version("rapidfuzz")
        except metadata.PackageNotFoundError:
            pass
        return versions

    def signature_fields(self) -> dict[str, Any]:
        """The options, then the embedded metric's own signature (its model and options)."""
        fields = super().signature_fields()
        fields.pop("metric_options")
        try:
            fields["embedded"] = f"[{self.embedded.signature()}]"
        except Exception:  # noqa: BLE001 - a signature must not fail because a model is absent
            fields["embedded"] = f"[{self.options['metric']}]"
        return fields


class MinWEDMetric(_MinEDMetric):
    """Minimum number of word corrections that make the hypothesis acceptable.

    >>> from metrics.scorers import get_metric
    >>> m = get_metric("minwed", metric="wer", threshold=0.3)
    >>> m.score(["the cat sat on mat"], [["the cat sat on the mat"]])[0].score  # WER 1/6 already < 0.3
    0.0
    """

    name: ClassVar[str] = "minwed"
    unit: ClassVar[str] = "word"
    coherent_metric: ClassVar[str] = "wer"


class MinCERMetric(_MinEDMetric):
    """Minimum number of character corrections (minCED in the paper).

    With the embedded `cer` (default options) every candidate is scored as
    jiwer's `cer` scores it, the seed's way (thibault-roux/mined `mincer.py`
    hands each corrected string to the embedded metric): leading and
    trailing whitespace stripped, then character edits over the reference
    length (jiwer's count of insertions when the reference is empty). The
    strip makes corrections interact at the edges, so the default search is
    `metrics.scorers.mincer_search` (exact, equal to the full level search
    `coherent=no`), not summed single gains. Differences from the script,
    by design: the hypothesis and reference are stripped before alignment
    (jiwer's CER transform; the script aligns the raw strings, which no
    HATS line needs), and past 15 character errors the script returns E
    without searching (its `__MAX__`) where we search.

    >>> from metrics.scorers import get_metric
    >>> [seg] = get_metric("mincer", metric="cer", threshold=0.05).score(["xy abcdefghij"], [["abcdefghij"]])
    >>> seg.score, seg.extra["E"], seg.extra["corrected"]  # fix x and y; the space left in front is stripped
    (2.0, 3, [0, 1])
    """

    name: ClassVar[str] = "mincer"
    unit: ClassVar[str] = "char"
    coherent_metric: ClassVar[str] = "cer"

    @property
    def native_cer(self) -> bool:
        """The embedded metric is jiwer's CER with its default transform."""
        return self.options["metric"] == "cer" and not self.options["metric_options"]

    def embedded_values(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not self.native_cer:
            return super().embedded_values(pairs)
        # jiwer.cer(ref, hyp) without its per-call transform overhead: the same
        # strip, the same (rapidfuzz) edit count, the same division.
        from rapidfuzz.distance import Levenshtein  # lazy: rapidfuzz loads only when this metric runs

        values = []
        for hyp, ref in pairs:
            hyp, ref = hyp.strip(), ref.strip()
            values.append(Levenshtein.distance(hyp, ref) / len(ref) if ref else float(len(hyp)))
        return values

    def _known_singles(self, alignment: Alignment) -> list[float | None]:
        if not self.native_cer:
            return super()._known_singles(alignment)

        # jiwer's value for E - 1 edits, the same division as `embedded_values`.
        n_ref, n_errors = len(alignment.ref_tokens), len(alignment.errors)
        value = (n_errors - 1) / n_ref if n_ref else float(n_errors - 1)
        known: list[float | None] = [None] * n_errors
        for e in interior_errors(alignment):
            known[e] = value
        return known

    def _coherent_k(self, seg: _Segment) -> bool:
        if not self.native_cer:
            return super()._coherent_k(seg)

        a = seg.alignment
        n_ref = len(a.ref_tokens)
        # The most edits that still pass, by the same float test as the scored
        # candidates; fewer than E since the hypothesis itself does not pass.
        max_edits = -1
        while max_edits + 1 < len(a.errors) and self.passes((max_edits + 1) / n_ref if n_ref else float(max_edits + 1)):
            max_edits += 1
        found = min_corrections(a, max_edits)
        if found is None:  # past the dynamic programme's size limit: the capped level search
            return False
        seg.k, seg.reached, seg.corrected = found.k, found.reached, tuple(found.corrected)
        seg.evaluated += found.scored
        return True
