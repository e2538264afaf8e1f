"""SARI for text simplification (Xu et al. 2016, TACL), 0-100, needs source and references.

For n = 1..4, n-gram counts of source (S) and output (C) are multiplied by
the number of references, reference counts (R) are summed over references:

- keep = S ∩ C, judged against S ∩ R;
- delete = S - C, judged against S - R;
- add = set(C) - set(S), judged against set(R) - set(S).

**Corpus score = EASSE's `corpus_sari` with its defaults** (feralvam/easse
0.2.4, `easse/sari.py`, what simplification papers report, e.g. on ASSET):
each segment carries its add/keep/delete counts per n-gram order (36 summable
statistics); over the corpus, per order, precision = correct / system total
and recall = correct / reference total (0 when the denominator is 0), F1 = 0
unless both are positive; add, keep and *delete* each use that F1 (EASSE's
default `use_f1_for_deletion=True`), averaged over the four orders; SARI =
their mean. Chunks combine exactly. The corpus result also reports
`segment_mean`, the mean of the segment scores.

Segment scores (option `variant`, written into the signature):

- `xu2016` (default): the authors' script (cocoxu/simplification `SARI.py`,
  `SARIsent`) on the normalised texts: keep and add F1, delete precision
  only; an empty precision or recall denominator counts as 0, keep recall
  averages per-n-gram ratios over the distinct n-grams of S ∩ R. Like the
  script, texts are split on single spaces, so an empty text is one empty
  token and two spaces make an empty token between them (this matters with
  `tokenize=none`; `13a` collapses whitespace). With `tokenize=none` and
  `lowercase` on it equals `SARIsent` on the raw texts on every input. Where
  the script has no answer of its own: with no reference it returns 0 (every
  count is multiplied by zero references); we refuse such a segment as an
  input error, like every reference metric. The script lowercases always;
  `lowercase=false` skips that. It never divides by zero otherwise (every
  ratio it forms has a positive denominator once an n-gram is counted).
- `t2t`: Hugging Face evaluate's `sari` (tensor2tensor's `sari_hook` logic):
  an empty denominator counts as 1 (an output identical to the references
  scores 100), keep recall = matched count / count of S ∩ R, and - as in
  evaluate - the normalised text is split on single spaces, so an empty text
  is one empty token. Decision: we follow evaluate here, because `t2t` exists
  to reproduce the numbers people publish with evaluate; an empty output
  therefore "adds" one unigram that no reference has (source "a b c",
  references "a" and "a b": 68.75 as in evaluate, where splitting on any
  whitespace, like tensor2tensor on token ids, would give 77.08).
- `easse-corpus`: EASSE's `corpus_sari` (defaults) applied to one segment
  at a time, i.e. the corpus formula above on the segment's own counts (texts
  split on any whitespace, as EASSE does; F1 for add, keep and delete, an F1
  of 0 unless precision and recall are both positive).

Text is lowercased (`lowercase`) and tokenized with a sacrebleu tokenizer
(`tokenize`, default `13a` as in EASSE and Hugging Face evaluate; `none` for
already tokenized text).

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

VARIANTS = ("xu2016", "t2t", "easse-corpus")
MAX_N = 4
# Per n-gram order: add (correct, system, reference), keep (...), delete (...).
_PER_ORDER = 9


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
    """(keep F1, delete precision, add F1) of one segment for one n-gram order."""
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


def corpus_counts(src: list[str], out: list[str], refs: list[list[str]]) -> list[int]:
    """One segment's summable statistics for the corpus score: for n = 1..4,
    add (correct, system total, reference total), keep (...), delete (...)."""
    numref = len(refs)
    stats: list[int] = []
    for n in range(1, MAX_N + 1):
        s_grams, c_grams = Counter(_ngrams(src, n)), Counter(_ngrams(out, n))
        r_grams: Counter = Counter()
        for ref in refs:
            r_grams.update(_ngrams(ref, n))
        added, to_add = set(c_grams) - set(s_grams), set(r_grams) - set(s_grams)
        s_rep = Counter({g: c * numref for g, c in s_grams.items()})
        c_rep = Counter({g: c * numref for g, c in c_grams.items()})
        kept, to_keep = s_rep & c_rep, s_rep & r_grams
        deleted, to_delete = s_rep - c_rep, s_rep - r_grams
        stats += [
            len(added & set(r_grams)),
            len(added),
            len(to_add),
            sum((kept & to_keep).values()),
            sum(kept.values()),
            sum(to_keep.values()),
            sum((deleted & to_delete).values()),
            sum(deleted.values()),
            sum(to_delete.values()),
        ]
    return stats


def _corpus_f1(correct: float, system: float, reference: float) -> float:
    precision = correct / system if system > 0 else 0.0
    recall = correct / reference if reference > 0 else 0.0
    return 2 * precision * recall / (precision + recall) if precision > 0 and recall > 0 else 0.0


def corpus_sari_from_counts(totals: Sequence[float]) -> dict[str, float]:
    """EASSE's default corpus SARI (0-100) and its add/keep/delete parts from summed counts."""
    parts = {"add": 0.0, "keep": 0.0, "delete": 0.0}
    for n in range(MAX_N):
        row = totals[n * _PER_ORDER : (n + 1) * _PER_ORDER]
        parts["add"] += _corpus_f1(*row[0:3]) / MAX_N
        parts["keep"] += _corpus_f1(*row[3:6]) / MAX_N
        parts["delete"] += _corpus_f1(*row[6:9]) / MAX_N
    parts = {k: 100 * v for k, v in parts.items()}
    return {"sari": (parts["add"] + parts["keep"] + parts["delete"]) / 3, **parts}


class SARIMetric(Metric):
    """SARI (see the module docstring for the variants), 0-100."""

    name = "sari"
    # v2: xu2016 segments split on single spaces like SARI.py (empty texts, repeated
    # spaces score differently from v1); easse-corpus added.
    version: ClassVar[str] = "2"
    corpus_label = "corpus SARI (EASSE corpus_sari)"
    needs_source = True
    defaults: ClassVar[dict[str, Any]] = {"variant": "xu2016", "tokenize": "13a", "lowercase": True}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options["variant"] not in VARIANTS:
            raise OptionError(f"sari: variant={self.options['variant']!r}; use one of {', '.join(VARIANTS)}")
        self._tokenizer = offline_tokenizer(self.options["tokenize"], "sari")

    def normalized(self, text: str) -> str:
        if self.options["lowercase"]:
            text = text.lower()
        return self._tokenizer(text)

    def tokens(self, text: str) -> list[str]:
        return self.normalized(text).split()

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        variant = self.options["variant"]
        results = []
        for k, (hyp, kept, src) in enumerate(zip(hyps, self.reference_lists(refs), srcs)):
            if not isinstance(hyp, str) or not isinstance(src, str):
                raise InputError(f"sari: hypothesis and source of segment {k} must be strings")
            texts = [self.normalized(t) for t in (src, hyp, *kept)]
            # EASSE splits on any whitespace; SARI.py and evaluate split on single
            # spaces (an empty text is one empty token, "a  b" has an empty token).
            words = [t.split() for t in texts]
            counts = corpus_counts(words[0], words[1], words[2:])
            if variant == "easse-corpus":
                parts = corpus_sari_from_counts(counts)
                score = parts["sari"]
                extra = {"keep": parts["keep"], "delete": parts["delete"], "add": parts["add"]}
            else:
                spaced = [t.split(" ") for t in texts]
                parts = sari_sentence(spaced[0], spaced[1], spaced[2:], variant)
                extra = {"keep": 100 * parts["keep"], "delete": 100 * parts["delete"], "add": 100 * parts["add"]}
                score = 100 * parts["sari"]
            stats = counts + [score, 1]
            results.append(SegmentResult(score=score, extra=extra, stats=stats))
        return results

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        corpus = corpus_sari_from_counts(totals[: MAX_N * _PER_ORDER])
        extra = {
            "keep": corpus["keep"],
            "delete": corpus["delete"],
            "add": corpus["add"],
            "segment_mean": totals[-2] / totals[-1],
        }
        return CorpusResult(score=corpus["sari"], extra=extra)

    def signature_fields(self) -> dict[str, Any]:
        """The segment variant, then how the corpus score is computed (EASSE's corpus_sari)."""
        return {
            "variant": self.options["variant"],
            "corpus": "easse",
            **{k: self.options[k] for k in ("lowercase", "tokenize")},
        }

    def library_versions(self) -> dict[str, str]:
        import sacrebleu  # lazy: sacrebleu loads only when this metric runs

        return {"sacrebleu": sacrebleu.__version__}
