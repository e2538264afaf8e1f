"""SARI for text simplification (Xu et al. 2016, TACL), 0-100, needs source and references.

For n = 1..4, n-gram counts of source (S) and output (C) are multiplied by
the number of references, reference counts (R) are summed over references:

- keep = S ∩ C, judged against S ∩ R: F1 of precision and recall;
- delete = S - C, judged against S - R: precision only (the paper's choice);
- add = set(C) - set(S), judged against set(R) - set(S): F1.

SARI = (mean_n keep + mean_n delete + mean_n add) / 3, corpus = mean of segment SARI.

Two variants (option `variant`, written into the signature):

- `xu2016` (default): the authors' script (cocoxu/simplification `SARI.py`):
  an empty precision or recall denominator counts as 0, keep recall averages
  per-n-gram ratios over the distinct n-grams of S ∩ R.
- `t2t`: tensor2tensor's `sari_hook` as used by HuggingFace evaluate's
  `sari`: an empty denominator counts as 1 (so an output identical to the
  references scores 100), and keep recall = matched count / count of S ∩ R.

Text is lowercased (`lowercase`) and tokenized with a sacrebleu tokenizer
(`tokenize`, default `13a` as in EASSE and HuggingFace evaluate; `none` for
already tokenized text), then split on whitespace.

>>> m = SARIMetric()
>>> m.score(["a"], [["a"]], srcs=["a b"])[0].score
25.0
>>> SARIMetric(variant="t2t").score(["a"], [["a"]], srcs=["a b"])[0].score
100.0
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.errors import InputError, OptionError
from metrics.scorers.sacrebleu_metrics import offline_tokenizer

VARIANTS = ("xu2016", "t2t")
MAX_N = 4


def _ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p > 0 or r > 0 else 0.0


def sari_ngram(
    src: list[tuple[str, ...]],
    out: list[tuple[str, ...]],
    refs: list[list[tuple[str, ...]]],
    variant: str = "xu2016",
) -> tuple[float, float, float]:
    """(keep F1, delete precision, add F1) for one n-gram order."""
    empty = 1.0 if variant == "t2t" else 0.0
    numref = len(refs)
    r_counts: Counter = Counter()
    for ref in refs:
        r_counts.update(ref)
    s_counts = Counter({g: c * numref for g, c in Counter(src).items()})
    c_counts = Counter({g: c * numref for g, c in Counter(out).items()})

    keep = s_counts & c_counts
    keep_good = keep & r_counts
    keep_all = s_counts & r_counts
    keep_p = sum(keep_good[g] / keep[g] for g in keep) / len(keep) if keep else empty
    if not keep_all:
        keep_r = empty
    elif variant == "t2t":
        keep_r = sum(keep_good.values()) / sum(keep_all.values())
    else:
        keep_r = sum(keep_good[g] / keep_all[g] for g in keep_good) / len(keep_all)

    delete = s_counts - c_counts
    delete_good = delete - r_counts
    del_p = sum(delete_good[g] / delete[g] for g in delete) / len(delete) if delete else empty

    added = set(c_counts) - set(s_counts)
    added_good = added & set(r_counts)
    added_all = set(r_counts) - set(s_counts)
    add_p = len(added_good) / len(added) if added else empty
    add_r = len(added_good) / len(added_all) if added_all else empty
    return _f1(keep_p, keep_r), del_p, _f1(add_p, add_r)


def sari_sentence(src: list[str], out: list[str], refs: list[list[str]], variant: str = "xu2016") -> dict[str, float]:
    """SARI of token lists, 0-1, with its three components."""
    keep = delete = add = 0.0
    for n in range(1, MAX_N + 1):
        k, d, a = sari_ngram(_ngrams(src, n), _ngrams(out, n), [_ngrams(r, n) for r in refs], variant)
        keep += k
        delete += d
        add += a
    keep, delete, add = keep / MAX_N, delete / MAX_N, add / MAX_N
    return {"sari": (keep + delete + add) / 3, "keep": keep, "delete": delete, "add": add}


class SARIMetric(Metric):
    """SARI (see the module docstring for the variants), 0-100."""

    name = "sari"
    needs_source = True
    defaults: ClassVar[dict[str, Any]] = {"variant": "xu2016", "tokenize": "13a", "lowercase": True}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options["variant"] not in VARIANTS:
            raise OptionError(f"sari: variant={self.options['variant']!r}; use one of {', '.join(VARIANTS)}")
        self._tokenizer = offline_tokenizer(self.options["tokenize"], "sari")

    def tokens(self, text: str) -> list[str]:
        if self.options["lowercase"]:
            text = text.lower()
        return self._tokenizer(text.strip()).split()

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        results = []
        for k, (hyp, kept, src) in enumerate(zip(hyps, self.reference_lists(refs), srcs)):
            if not isinstance(hyp, str) or not isinstance(src, str):
                raise InputError(f"sari: hypothesis and source of segment {k} must be strings")
            parts = sari_sentence(
                self.tokens(src), self.tokens(hyp), [self.tokens(r) for r in kept], self.options["variant"]
            )
            extra = {"keep": 100 * parts["keep"], "delete": 100 * parts["delete"], "add": 100 * parts["add"]}
            score = 100 * parts["sari"]
            results.append(SegmentResult(score=score, extra=extra, stats=[score, *extra.values(), 1.0]))
        return results

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        n = totals[-1]
        return CorpusResult(
            score=totals[0] / n, extra={"keep": totals[1] / n, "delete": totals[2] / n, "add": totals[3] / n}
        )

    def library_versions(self) -> dict[str, str]:
        import sacrebleu

        return {"sacrebleu": sacrebleu.__version__}
