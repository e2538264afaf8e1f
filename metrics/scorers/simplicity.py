"""Simplicity-aware BERTScore and RelBERTScore (seed paper 003, sections 3.1-3.2).

Simplicity-aware weighting (eq. 4-5): BERTScore where each token weighs
tf(w) = (1/M) * #{sentences of a simple-text corpus that contain w}, in place
of 1 or idf: frequent (simple) words count more. Precision weights the
candidate's tokens, recall the reference's, F = 2PR/(P+R) as in BERTScore;
[CLS]/[SEP] weigh 0 and are matched like any token (as in bert-score).

Where the weights come from (option `frequency_file`):
- unset (default): the offline `wordfreq` table (option `lang`, default en).
  wordfreq gives f(w), the share of running words that are w, not the share
  of sentences; we convert with tf(w) = 1 - (1 - f(w)) ** L, the chance that
  a sentence of L words (option `words_per_sentence`, default 20) contains w.
  A sub-word token takes the weight of the word it belongs to (character
  offsets); tokens outside any word (punctuation) and words wordfreq does not
  know weigh 0.
- a corpus file (one sentence a line, e.g. Simple Wikipedia): tf exactly as
  eq. 4, over the model's own tokens (a token's weight is the share of lines
  whose tokenisation contains it).
- a table file: every non-empty line `word<TAB>weight` (a count or a
  frequency; only ratios matter), looked up like wordfreq (lowercased word).

RelBERTScore (eq. 6) = 1 - (1 - BS(output, ref)) / (1 - BS(input, ref)),
BS = BERTScore F1 (max over references). 1 when the output matches a
reference, 0 when it is no closer than the input, negative when further.
When the input already matches a reference (1 - BS(input, ref) < 1e-6) the
ratio is undefined: the score is 1 if the output matches too, else 0, and the
segment is flagged `degenerate`.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

from metrics.scorers.loading import LazyModule

torch = LazyModule("torch")  # imported on first use (see LazyModule)

from metrics.scorers import files
from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.bertscore import BERTScoreMetric
from metrics.scorers.encoder import Encoder, TokenEmbedding
from metrics.scorers.errors import OptionError

_WORD = re.compile(r"\w+(?:['’]\w+)*")
_DEGENERATE = 1e-6


@functools.lru_cache(maxsize=200_000)
def _wordfreq(word: str, lang: str) -> float:
    import wordfreq  # lazy: wordfreq loads only when this metric runs

    return wordfreq.word_frequency(word, lang)


@functools.lru_cache(maxsize=8)
def _load_frequency_file(path: str, mtime: float, tokenizer_name: str, tokenizer: Any) -> tuple[str, dict]:
    """("table", {word: weight}) or ("corpus", {token id: tf}) from a user file (an allowed one:
    `path` comes from files.resolve, and is read again through files.read_text's bound)."""
    lines = [line.rstrip("\n") for line in files.read_text("frequency_file", path).splitlines()]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise OptionError("frequency_file: the file is empty")
    table: dict[str, float] = {}
    is_table = True
    for line in lines:
        parts = line.split("\t")
        if len(parts) != 2:
            is_table = False
            break
        try:
            table[parts[0].strip().lower()] = float(parts[1])
        except ValueError:
            is_table = False
            break
    if is_table:
        if any(v < 0 for v in table.values()):
            raise OptionError("frequency_file: weights must be >= 0")
        return "table", table
    encoded = tokenizer(lines, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False)[
        "input_ids"
    ]
    df = Counter(t for ids in encoded for t in set(ids))
    m = len(lines)
    return "corpus", {t: c / m for t, c in df.items()}


class SimplicityBERTScoreMetric(BERTScoreMetric):
    """BERTScore with simplicity-aware token weights (seed 003, eq. 4-5)."""

    name: ClassVar[str] = "simplicity-bertscore"
    version: ClassVar[str] = "1"
    defaults: ClassVar[dict[str, Any]] = {
        "model": None,
        "layer": None,
        "baseline": None,
        "frequency_file": None,
        "lang": "en",
        "words_per_sentence": 20,
        "batch_size": 64,
        "device": None,
    }
    signature_keys: ClassVar[tuple[str, ...]] = (
        "model",
        "layer",
        "baseline",
        "frequency_file",
        "lang",
        "words_per_sentence",
    )
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {
        **BERTScoreMetric.option_bounds,
        "words_per_sentence": (1, 1000),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # A string here; the worker resolves it when it scores (metrics.scorers.files).
        if self.options["frequency_file"] is not None:
            files.check_syntax("frequency_file", self.options["frequency_file"])

    def library_versions(self) -> dict[str, str]:
        versions = super().library_versions()
        if self.options["frequency_file"] is None:
            import wordfreq  # lazy: wordfreq loads only when this metric runs

            versions["wordfreq"] = getattr(wordfreq, "__version__", None) or _dist_version("wordfreq")
        return versions

    def _word_weight(self, word: str, table: dict[str, float] | None) -> float:
        if table is not None:
            return table.get(word.lower(), 0.0)
        f = _wordfreq(word, self.options["lang"])
        return 1.0 - (1.0 - f) ** self.options["words_per_sentence"]

    def token_weights(
        self, encoder: Encoder, embeddings: dict[str, TokenEmbedding], ref_texts: list[str]
    ) -> dict[str, torch.Tensor]:
        specials = self.special_ids(encoder)
        path = self.options["frequency_file"]
        mode, table = None, None
        if path is not None:
            resolved = files.resolve("frequency_file", path)
            try:
                mtime = resolved.stat().st_mtime
            except OSError:
                raise files.refused("frequency_file") from None
            mode, table = _load_frequency_file(str(resolved), mtime, encoder.name, encoder.tokenizer)
        out = {}
        for text, emb in embeddings.items():
            words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
            values = []
            for tid, special, (start, end) in zip(emb.input_ids, emb.special_mask, emb.offsets):
                if tid in specials or special:
                    values.append(0.0)
                elif mode == "corpus":
                    values.append(table.get(tid, 0.0))
                else:
                    word = next((text[a:b] for a, b in words if a <= start < b), text[start:end])
                    values.append(self._word_weight(word, table))
            out[text] = torch.tensor(values, dtype=torch.float32)
        return out


def _dist_version(name: str) -> str:

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


class RelBERTScoreMetric(Metric):
    """RelBERTScore (seed 003, eq. 6): BERTScore of the output relative to the input's."""

    name: ClassVar[str] = "relbertscore"
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    needs_source: ClassVar[bool] = True
    uses_model: ClassVar[bool] = True
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = SimplicityBERTScoreMetric.option_bounds
    defaults: ClassVar[dict[str, Any]] = {
        "model": None,
        "layer": None,
        "idf": False,
        "baseline": None,
        "simplicity": False,
        "frequency_file": None,
        "lang": "en",
        "words_per_sentence": 20,
        "batch_size": 64,
        "device": None,
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        opts = dict(self.options)
        if opts.pop("simplicity"):
            if opts.pop("idf"):
                raise OptionError("relbertscore: idf and simplicity weights exclude each other")
            self.inner: BERTScoreMetric = SimplicityBERTScoreMetric(**opts)
        else:
            for key in ("frequency_file", "lang", "words_per_sentence"):
                opts.pop(key)
            self.inner = BERTScoreMetric(**opts)

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        # Both calls share the references (and so the idf table) and the
        # encoder's embedding cache: the references are embedded once.
        bs_out = self.inner.prf(hyps, refs)[:, 2].tolist()
        bs_in = self.inner.prf(srcs, refs)[:, 2].tolist()
        results = []
        for out_f, in_f in zip(bs_out, bs_in):
            num, den = 1.0 - out_f, 1.0 - in_f
            extra: dict[str, Any] = {"bertscore_output": out_f, "bertscore_input": in_f}
            if abs(den) < _DEGENERATE:
                value = 1.0 if abs(num) < _DEGENERATE else 0.0
                extra["degenerate"] = True
            else:
                value = 1.0 - num / den
            results.append(SegmentResult(score=value, extra=extra))
        return results

    def corpus_score(self, segments: Sequence[SegmentResult]) -> CorpusResult:
        if not segments:
            return CorpusResult(math.nan)
        return CorpusResult(sum(s.score for s in segments) / len(segments))

    def corpus_state(self, hyps, refs=None, srcs=None, data=None) -> dict | None:
        """The inner BERTScore's state (its idf table over all references)."""
        self.check_inputs(hyps, refs, srcs, data)
        return self.inner.corpus_state(hyps, refs)

    def load_corpus_state(self, state: dict | None) -> None:
        super().load_corpus_state(state)
        self.inner.load_corpus_state(state)

    def library_versions(self) -> dict[str, str]:
        return self.inner.library_versions()

    def signature_fields(self) -> dict[str, Any]:
        """`bs:` names the inner BERTScore (bertscore or simplicity-bertscore), then its fields."""
        return {"bs": self.inner.name, **self.inner.signature_fields()}
