"""WER and CER through jiwer (>= 4), lower is better, as fractions (0.25 = 25 %).

Each segment keeps jiwer's counts as summable statistics
`[substitutions, deletions, insertions, hits]`; the corpus rate is
(S + D + I) / (S + D + H) over all segments, exactly jiwer's value for the
whole list, so chunks combine exactly.

Empty references follow jiwer: when the reference side has no words
(characters for CER) the rate has no denominator and jiwer reports the
number of insertions instead (0 when the hypothesis is empty too, 2 for two
inserted words). A corpus with at least one non-empty reference gets the
ordinary rate, empty references contributing their insertions.

Several references: `references="first"` (default) scores against the first
reference only, as ASR test sets have one; `references="min"` picks, per
segment, the reference with the lowest error rate (first one on ties) and
counts that reference's errors and length in the corpus rate.

>>> from metrics.scorers import get_metric
>>> wer = get_metric("wer")
>>> segs = wer.score(["the cat sat", "hello"], [["the cat sat down"], ["hello"]])
>>> [s.score for s in segs], wer.corpus_score(segs).score
([0.25, 0.0], 0.2)
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import Any, ClassVar

from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.errors import InputError, OptionError

REFERENCE_CHOICES = ("first", "min")


def rate_from_counts(s: float, d: float, i: float, h: float) -> float:
    """jiwer's formula, including its rule for an empty reference side."""
    ref_len = s + d + h
    if ref_len == 0:
        return float(i)
    return (s + d + i) / ref_len


class _ErrorRateMetric(Metric):
    higher_is_better = False
    unit: ClassVar[str] = "words"
    defaults: ClassVar[dict[str, Any]] = {
        "lowercase": False,
        "remove_punctuation": False,
        "references": "first",
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options["references"] not in REFERENCE_CHOICES:
            raise OptionError(
                f"{self.name}: references={self.options['references']!r}; use one of {', '.join(REFERENCE_CHOICES)}"
            )

    def _transform(self):
        """jiwer's default transform for the unit, preceded by the optional normalisations."""
        import jiwer  # lazy: jiwer loads only when this metric runs

        base = jiwer.wer_default if self.unit == "words" else jiwer.cer_default
        steps = []
        if self.options["lowercase"]:
            steps.append(jiwer.ToLowerCase())
        if self.options["remove_punctuation"]:
            steps.append(jiwer.RemovePunctuation())
        return jiwer.Compose(steps + list(base.transforms)) if steps else base

    def _counts(self, refs: list[str], hyps: list[str]) -> list[list[int]]:
        """Per-segment [S, D, I, H] from one batched jiwer call (read off its alignments)."""
        import jiwer  # lazy: jiwer loads only when this metric runs

        if not refs:
            return []
        transform = self._transform()
        out = jiwer.process_words(refs, hyps, reference_transform=transform, hypothesis_transform=transform)
        counts = []
        for chunks in out.alignments:
            s = d = i = h = 0
            for c in chunks:
                if c.type == "equal":
                    h += c.ref_end_idx - c.ref_start_idx
                elif c.type == "substitute":
                    s += c.ref_end_idx - c.ref_start_idx
                elif c.type == "delete":
                    d += c.ref_end_idx - c.ref_start_idx
                elif c.type == "insert":
                    i += c.hyp_end_idx - c.hyp_start_idx
            counts.append([s, d, i, h])
        return counts

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
        for k, h in enumerate(hyps):
            if not isinstance(h, str):
                raise InputError(f"{self.name}: hypothesis {k} is {type(h).__name__}, not a string")
        ref_lists = [kept if self.options["references"] == "min" else kept[:1] for kept in self.reference_lists(refs)]

        best: list[tuple[float, list[int], int] | None] = [None] * len(hyps)
        width = max(len(r) for r in ref_lists)
        for j in range(width):
            idx = [k for k, r in enumerate(ref_lists) if j < len(r)]
            counts = self._counts([ref_lists[k][j] for k in idx], [hyps[k] for k in idx])
            for k, c in zip(idx, counts):
                rate = rate_from_counts(*c)
                if best[k] is None or rate < best[k][0]:
                    best[k] = (rate, c, j)

        results = []
        for rate, (s, d, i, h), j in best:
            extra = {"substitutions": s, "deletions": d, "insertions": i, "hits": h, "ref_length": s + d + h}
            if self.options["references"] == "min":
                extra["reference"] = j
            results.append(SegmentResult(score=rate, extra=extra, stats=[s, d, i, h]))
        return results

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        s, d, i, h = totals
        extra = {"substitutions": s, "deletions": d, "insertions": i, "hits": h, "ref_length": s + d + h}
        return CorpusResult(score=rate_from_counts(s, d, i, h), extra=extra)

    def library_versions(self) -> dict[str, str]:

        return {"jiwer": version("jiwer")}


class WERMetric(_ErrorRateMetric):
    """Word error rate, jiwer's `wer` (default transform: collapse spaces, strip, split on spaces)."""

    name = "wer"
    corpus_label = "corpus WER (errors over all reference words)"
    unit = "words"


class CERMetric(_ErrorRateMetric):
    """Character error rate, jiwer's `cer` (spaces count as characters, as in jiwer)."""

    name = "cer"
    corpus_label = "corpus CER (errors over all reference characters)"
    unit = "characters"
