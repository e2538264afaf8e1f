"""ROUGE-1, ROUGE-2 and ROUGE-L (Lin 2004) through Google's rouge-score, 0-1.

rouge-score's own tokenizer lowercases and then keeps only `[a-z0-9]`, so
"déjà vu" becomes "d j vu" and Chinese text no tokens at all. The default
here is `tokenizer="unicode"` (`UnicodeTokenizer`): words are runs of Unicode
letters, digits and combining marks after NFC normalisation, Han, Hiragana
and Katakana characters are one token each (those scripts are written
without spaces; half-width Katakana is first turned into full-width by NFKC,
so "ｶﾞ" is the one token "ガ" as in full-width text), and punctuation,
symbols and emoji separate tokens but are not tokens themselves, as in
rouge-score. Not segmented: Thai, Lao, Khmer, Burmese and other scripts
written without spaces whose words span several characters (a run of such
letters is one token, e.g. a whole Thai clause), which makes ROUGE on them
close to a sentence-match rate: segment such text into words first (e.g.
with PyThaiNLP) and score the space-separated result. `tokenizer="default"` uses
rouge-score's own. `stemmer=true` applies rouge-score's Porter stemming
(English) to tokens longer than 3 characters with either tokenizer.

Several references: rouge-score's `score_multi`, i.e. for each ROUGE type
the reference with the highest F-measure is taken (a max over references),
and its P/R/F reported.

The segment score is the F-measure of `variant` (rougeL by default); `extra`
holds f/p/r of all three types. The corpus score is the mean over segments
(as rouge-score's aggregator reports); statistics `[values..., 1]` sum so
that chunks combine exactly.

>>> m = RougeMetric()
>>> seg = m.score(["Le chat noir dort"], [["le chat dort"]])[0]
>>> round(seg.score, 4), seg.extra["rouge1_r"]
(0.8571, 1.0)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any, ClassVar

from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.errors import InputError, OptionError

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
FIELDS = [f"{t}_{k}" for t in ROUGE_TYPES for k in ("f", "p", "r")]

# Scripts written without spaces between words: one character, one token.
_CHAR_TOKEN_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3134F),  # CJK extensions B-G
)


# Half-width Katakana and its sound marks (U+FF66-U+FF9F): NFKC gives the full-width letters.
_HALF_WIDTH_KATAKANA = re.compile("[\uff66-\uff9f]+")


def _is_char_token(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CHAR_TOKEN_RANGES)


class UnicodeTokenizer:
    """A rouge-score tokenizer (has `tokenize(text)`) that keeps non-ASCII words.

    >>> UnicodeTokenizer().tokenize("Ça coûte 10 €, déjà! 日本語")
    ['ça', 'coûte', '10', 'déjà', '日', '本', '語']
    """

    def __init__(self, use_stemmer: bool = False, lowercase: bool = True) -> None:
        self.lowercase = lowercase
        self._stemmer = None
        if use_stemmer:
            from nltk.stem import porter  # lazy: nltk loads only when this metric runs

            self._stemmer = porter.PorterStemmer()

    def tokenize(self, text: str) -> list[str]:
        text = _HALF_WIDTH_KATAKANA.sub(
            lambda m: unicodedata.normalize("NFKC", m.group(0)), unicodedata.normalize("NFC", text)
        )
        if self.lowercase:
            text = text.lower()
        tokens: list[str] = []
        current: list[str] = []
        for ch in text:
            if _is_char_token(ch):
                if current:
                    tokens.append("".join(current))
                    current = []
                tokens.append(ch)
            elif unicodedata.category(ch)[0] in "LNM":
                current.append(ch)
            elif current:
                tokens.append("".join(current))
                current = []
        if current:
            tokens.append("".join(current))
        if self._stemmer is not None:
            # Same rule as rouge-score: only words longer than 3 characters are stemmed.
            tokens = [self._stemmer.stem(t) if len(t) > 3 else t for t in tokens]
        return tokens


class RougeMetric(Metric):
    """ROUGE-1/2/L F-measure (segment score: `variant`), rouge-score's values."""

    name = "rouge"
    defaults: ClassVar[dict[str, Any]] = {
        "variant": "rougeL",
        "tokenizer": "unicode",
        "stemmer": False,
        "lowercase": True,
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options["variant"] not in ROUGE_TYPES:
            raise OptionError(f"rouge: variant={self.options['variant']!r}; use one of {', '.join(ROUGE_TYPES)}")
        if self.options["tokenizer"] not in ("unicode", "default"):
            raise OptionError(f"rouge: tokenizer={self.options['tokenizer']!r}; use unicode or default")
        if self.options["tokenizer"] == "default" and not self.options["lowercase"]:
            raise OptionError(
                "rouge: rouge-score's default tokenizer always lowercases (lowercase=false needs tokenizer=unicode)"
            )
        self._scorer = None

    def scorer(self):
        """The configured `rouge_score.rouge_scorer.RougeScorer`."""
        if self._scorer is None:
            from rouge_score import rouge_scorer  # lazy: rouge_score loads only when this metric runs

            tokenizer = None
            if self.options["tokenizer"] == "unicode":
                tokenizer = UnicodeTokenizer(self.options["stemmer"], self.options["lowercase"])
            self._scorer = rouge_scorer.RougeScorer(
                list(ROUGE_TYPES), use_stemmer=self.options["stemmer"], tokenizer=tokenizer
            )
        return self._scorer

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        scorer = self.scorer()
        results = []
        for k, (hyp, kept) in enumerate(zip(hyps, self.reference_lists(refs))):
            if not isinstance(hyp, str):
                raise InputError(f"rouge: hypothesis {k} is {type(hyp).__name__}, not a string")
            best = scorer.score_multi(kept, hyp)
            extra: dict[str, Any] = {}
            for t in ROUGE_TYPES:
                extra[f"{t}_f"] = float(best[t].fmeasure)
                extra[f"{t}_p"] = float(best[t].precision)
                extra[f"{t}_r"] = float(best[t].recall)
            stats = [extra[f] for f in FIELDS] + [1.0]
            results.append(SegmentResult(score=extra[f"{self.options['variant']}_f"], extra=extra, stats=stats))
        return results

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        n = totals[-1]
        means = {f: totals[i] / n for i, f in enumerate(FIELDS)}
        return CorpusResult(score=means[f"{self.options['variant']}_f"], extra=means)

    def library_versions(self) -> dict[str, str]:

        return {"rouge-score": version("rouge-score")}
