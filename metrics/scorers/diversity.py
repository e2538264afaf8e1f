"""Diversity of a set of outputs (one system's outputs): distinct-n, self-BLEU, type-token ratio.

These are system-level (`level = "system"`): the corpus score describes the
set of outputs handed to `score()`, and each segment result is that output's
own value (self-BLEU's against the other outputs of the call). A caller that
scores in chunks (metric runs) scores one system's outputs per call, never a
chunk of a system: `corpus_state` is None for these metrics. They need no references. Text is lowercased
(`lowercase`) and tokenized with a sacrebleu tokenizer (`tokenize`: 13a by
default, `none` splits on whitespace, `zh`/`char` for unsegmented scripts).

- `distinct-n` (Li et al. 2016): distinct n-grams / all n-grams over the set;
  a segment's value is the same ratio within that output. 0 with no n-grams.
- `ttr`: distinct tokens / tokens over the set (0 with no tokens).
- `self-bleu` (Zhu et al. 2018, Texygen): each output's sentence BLEU
  (sacrebleu's `sentence_bleu`: effective order, exp smoothing) with all the
  other outputs of the set as references; corpus = mean. Lower means more
  diverse, so `higher_is_better` is False. Needs at least two outputs.

>>> m = DistinctNMetric(n=1)
>>> segs = m.score(["a a b", "b c"])
>>> [s.score for s in segs], m.corpus_score(segs).score
([0.6666666666666666, 1.0], 0.6)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.errors import InputError
from metrics.scorers.sacrebleu_metrics import offline_tokenizer


@dataclass
class SetSegment(SegmentResult):
    """A segment result that also carries the counts the set-level value needs
    (kept out of `as_dict()`, so never written to segment files)."""

    counts: Counter = field(default_factory=Counter, repr=False, compare=False)


class _DiversityMetric(Metric):
    needs_refs = False
    level = "system"
    corpus_label = "set-level value over all of the system's outputs"
    defaults: ClassVar[dict[str, Any]] = {"tokenize": "13a", "lowercase": False}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._tokenizer = offline_tokenizer(self.options["tokenize"], self.name)

    def tokens(self, text: str) -> list[str]:
        if self.options["lowercase"]:
            text = text.lower()
        return self._tokenizer(text.rstrip()).split()

    def _check_hyps(self, hyps: Sequence[str]) -> None:
        for i, h in enumerate(hyps):
            if not isinstance(h, str):
                raise InputError(f"{self.name}: output {i} is {type(h).__name__}, not a string")

    def library_versions(self) -> dict[str, str]:
        import sacrebleu  # lazy: sacrebleu loads only when this metric runs

        return {"sacrebleu": sacrebleu.__version__}


class _RatioMetric(_DiversityMetric):
    """distinct items / items, per output and over the set."""

    def _items(self, tokens: list[str]) -> list:
        raise NotImplementedError

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self._check_hyps(hyps)
        out = []
        for hyp in hyps:
            counts = Counter(self._items(self.tokens(hyp)))
            total = sum(counts.values())
            value = len(counts) / total if total else 0.0
            out.append(SetSegment(score=value, extra={"distinct": len(counts), "total": total}, counts=counts))
        return out

    def corpus_score(self, segments: Sequence[SegmentResult]) -> CorpusResult:
        if not segments:
            return CorpusResult(math.nan)
        if not all(isinstance(s, SetSegment) for s in segments):
            raise InputError(
                f"{self.name} is a set-level metric: its corpus value needs the segment results returned by "
                "score() (they carry the n-gram counts), not stored scores"
            )
        union: Counter = Counter()
        for s in segments:
            union.update(s.counts)
        total = sum(union.values())
        value = len(union) / total if total else 0.0
        return CorpusResult(value, extra={"distinct": len(union), "total": total, "outputs": len(segments)})


class DistinctNMetric(_RatioMetric):
    """distinct-n: share of distinct n-grams (option `n`, default 2)."""

    name = "distinct-n"
    defaults: ClassVar[dict[str, Any]] = {"n": 2, "tokenize": "13a", "lowercase": False}
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"n": (1, 10)}

    def _items(self, tokens: list[str]) -> list:
        n = self.options["n"]
        return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


class TypeTokenRatioMetric(_RatioMetric):
    """Type-token ratio: distinct tokens / tokens."""

    name = "ttr"

    def _items(self, tokens: list[str]) -> list:
        return tokens


class SelfBLEUMetric(_DiversityMetric):
    """Self-BLEU: each output's sentence BLEU against the other outputs; lower = more diverse.

    Computed in one pass: for every n-gram the two largest per-output counts
    are kept, so "max count over the other outputs" (BLEU's clipping) costs
    O(1) per n-gram instead of re-reading all outputs for each one. Values
    equal `sacrebleu.sentence_bleu(out_i, others)`.
    """

    name = "self-bleu"
    higher_is_better = False
    defaults: ClassVar[dict[str, Any]] = {"tokenize": "13a", "lowercase": False, "max_ngram_order": 4}
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"max_ngram_order": (1, 10)}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        order = self.options["max_ngram_order"]
        from sacrebleu.metrics import BLEU  # lazy: sacrebleu loads only when this metric runs

        self._bleu = BLEU(
            tokenize=self.options["tokenize"],
            lowercase=self.options["lowercase"],
            max_ngram_order=order,
            effective_order=True,
        )

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        from sacrebleu.metrics.helpers import extract_all_word_ngrams  # lazy: sacrebleu only for this metric

        self._check_hyps(hyps)
        if not hyps:
            return []
        if len(hyps) < 2:
            raise InputError("self-bleu needs at least two outputs (each is compared with the others)")
        order = self.options["max_ngram_order"]
        grams, lengths = [], []
        for hyp in hyps:
            counts, length = extract_all_word_ngrams(self._bleu._preprocess_segment(hyp), 1, order)
            grams.append(counts)
            lengths.append(length)
        # n-gram -> (largest count, its output, second largest count)
        top: dict[tuple, tuple[int, int, int]] = {}
        for i, counts in enumerate(grams):
            for g, c in counts.items():
                best, who, second = top.get(g, (0, -1, 0))
                if c > best:
                    top[g] = (c, i, best)
                elif c > second:
                    top[g] = (best, who, c)
        length_counts = Counter(lengths)

        out = []
        for i, counts in enumerate(grams):
            correct = [0] * order
            total = [0] * order
            for g, c in counts.items():
                best, who, second = top[g]
                ref_max = second if who == i else best
                total[len(g) - 1] += c
                correct[len(g) - 1] += min(c, ref_max)
            ref_len = self._closest_other_length(lengths[i], length_counts)
            stats = [lengths[i], ref_len, *correct, *total]
            sb = self._bleu._compute_score_from_stats(stats)
            out.append(
                SegmentResult(
                    score=float(sb.score), extra={"precisions": [float(p) for p in sb.precisions], "bp": float(sb.bp)}
                )
            )
        return out

    @staticmethod
    def _closest_other_length(own: int, length_counts: Counter) -> int:
        """sacrebleu's closest reference length (ties: the shorter) among the other outputs."""
        best_diff, best_len = -1, -1
        for length, count in length_counts.items():
            if length == own and count == 1:
                continue  # the only output of this length is this one
            diff = abs(own - length)
            if best_diff == -1 or diff < best_diff or (diff == best_diff and length < best_len):
                best_diff, best_len = diff, length
        return best_len
