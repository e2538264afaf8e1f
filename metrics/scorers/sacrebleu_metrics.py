"""BLEU, chrF and TER through sacrebleu (>= 2.0), with its signatures.

Segment statistics are sacrebleu's own sufficient statistics (BLEU: hypothesis
and closest reference length, matched and total n-gram counts; chrF: hyp/ref/
match counts per order; TER: edits and average reference length), so the
corpus score of any split into chunks, summed, equals `corpus_score` of
sacrebleu on the whole corpus.

Segments may have different numbers of references: they are handed to
sacrebleu as reference streams padded with None, which sacrebleu skips. Every
segment needs at least one reference (an empty string is a valid, empty one).

>>> from metrics.scorers import get_metric
>>> bleu = get_metric("bleu")
>>> segs = bleu.score(["the cat sat on the mat"], [["the cat sat on the mat", "a cat sat"]])
>>> round(bleu.corpus_score(segs).score, 1)
100.0
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.errors import InputError, OptionError

# sacrebleu tokenizers that need no download at run time (the SentencePiece
# ones fetch a model from the internet on first use, which this workbench never does).
OFFLINE_TOKENIZERS = ("13a", "intl", "none", "zh", "char", "ja-mecab", "ko-mecab")
# sacrebleu's SentencePiece tokenizers (spBLEU): BLEU takes them with `spm=PATH`, a local model
# file (FLORES-101's, FLORES-200's or spBLEU-1K's, downloaded by the user), read as any
# metric option file (metrics.scorers.files); sacrebleu's own would download it.
SPM_TOKENIZERS = ("flores101", "flores200", "spBLEU-1K")


class LocalSPMTokenizer:
    """sacrebleu's `TokenizerSPM` (pieces joined by spaces) over a model read from a local file:
    the same tokens as `BLEU(tokenize=name)` given the same model file, and never a download.
    `signature()` is sacrebleu's name (`flores200`); `digest` the sha256 of the model file."""

    def __init__(self, name: str, model: bytes) -> None:
        import sentencepiece  # lazy: only spBLEU needs it

        self.name = name
        self.digest = hashlib.sha256(model).hexdigest()
        try:
            self.sp = sentencepiece.SentencePieceProcessor(model_proto=model)
        except (RuntimeError, TypeError, OSError):
            raise OptionError("bleu: spm: the file is not a SentencePiece model") from None
        if self.sp.GetPieceSize() == 0:
            raise OptionError("bleu: spm: the file is not a SentencePiece model")
        self._encode = lru_cache(maxsize=2**16)(self._pieces)

    def _pieces(self, line: str) -> str:
        return " ".join(self.sp.EncodeAsPieces(line))

    def __call__(self, line: str) -> str:
        return self._encode(line)

    def signature(self) -> str:
        return self.name


def spm_tokenizer(name: str, path: str) -> LocalSPMTokenizer:
    """The tokenizer `name` over the model file `path`, read only where the worker may read
    files (metrics.scorers.files: WORKBENCH_DATA_DIRS, any path for the `score` command)."""
    from metrics.scorers import files  # lazy: files imports Django settings when configured

    return LocalSPMTokenizer(name, files.read_bytes("spm", path))


def offline_tokenizer(name: str, metric: str):
    """A sacrebleu tokenizer by name, refusing those that would download a model."""
    if name not in OFFLINE_TOKENIZERS:
        raise OptionError(f"{metric}: tokenize={name!r}; use one of {', '.join(OFFLINE_TOKENIZERS)}")
    from sacrebleu.metrics.bleu import _get_tokenizer  # lazy: sacrebleu loads only when this metric runs

    try:
        return _get_tokenizer(name)()
    except (ImportError, RuntimeError, OSError) as exc:
        raise OptionError(f"{metric}: tokenizer {name!r} cannot be used here: {exc}") from exc


def reference_streams(refs: Sequence[Sequence[str]], metric: str) -> list[list[str | None]]:
    """sacrebleu wants one stream per reference "slot"; pad short lists with None.

    None inside a segment's list also means "no reference"; a segment left
    without any reference is an input error (BLEU/chrF/TER are undefined there).
    """
    cleaned: list[list[str]] = []
    for i, seg_refs in enumerate(refs):
        if isinstance(seg_refs, str):
            raise InputError(f"{metric}: references of segment {i} must be a list of strings, not a string")
        kept = [r for r in seg_refs if r is not None]
        if not kept:
            raise InputError(f"{metric}: segment {i} has no reference")
        for r in kept:
            if not isinstance(r, str):
                raise InputError(f"{metric}: reference of segment {i} is {type(r).__name__}, not a string")
        cleaned.append(kept)
    width = max(len(r) for r in cleaned)
    return [[seg[k] if k < len(seg) else None for seg in cleaned] for k in range(width)]


def _check_hyps(hyps: Sequence[str], metric: str) -> None:
    for i, h in enumerate(hyps):
        if not isinstance(h, str):
            raise InputError(f"{metric}: hypothesis {i} is {type(h).__name__}, not a string")


class _SacreBLEUMetric(Metric):
    """Shared plumbing: one sacrebleu object built from the options, per-segment
    statistics from sacrebleu's own extraction, scores from its own formulas."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._engine_cache = None
        self._validate()

    @property
    def _engine(self):
        # Built on first use, not in __init__: the web process builds metrics to check their
        # options and must never open the files they name (bleu's `spm`).
        if self._engine_cache is None:
            self._engine_cache = self._build(sentence=False)
        return self._engine_cache

    # subclasses
    def _validate(self) -> None:
        pass

    def _build(self, sentence: bool):  # pragma: no cover - abstract
        raise NotImplementedError

    def _segment_extra(self, sb_score) -> dict[str, Any]:
        return {}

    def _corpus_extra(self, sb_score) -> dict[str, Any]:
        return {}

    def _segment_engine(self):
        return self._engine

    def _sacrebleu_fields(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    # Metric API
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
        _check_hyps(hyps, self.name)
        streams = reference_streams(refs, self.name)
        # sacrebleu's own extraction: the same statistics corpus_score sums.
        stats = self._engine._extract_corpus_statistics(list(hyps), streams)
        seg_engine = self._segment_engine()
        out = []
        for stat in stats:
            # list() copies: BLEU's add-k smoothing edits the lists it is given.
            sb = seg_engine._compute_score_from_stats(list(stat))
            out.append(SegmentResult(score=float(sb.score), extra=self._segment_extra(sb), stats=list(stat)))
        return out

    def segment_totals(self, hyps, refs=None, srcs=None, data=None) -> list[float] | None:
        # The statistics `score` extracts, summed as `corpus_score` sums them, without a sentence-level
        # score per segment, which sacrebleu's own CLI never computes either (on 10,000 segments they were
        # a fifth of the `score` command's time).
        self.check_inputs(hyps, refs, srcs, data)
        if not hyps:
            return None
        _check_hyps(hyps, self.name)
        stats = self._engine._extract_corpus_statistics(list(hyps), reference_streams(refs, self.name))
        return [sum(column) for column in zip(*stats)]

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        sb = self._engine._compute_score_from_stats(list(totals))
        return CorpusResult(score=float(sb.score), extra=self._corpus_extra(sb))

    corpus_state_reads = frozenset({"nrefs"})  # how many references, not their texts

    def corpus_state(self, hyps, refs=None, srcs=None, data=None) -> dict | None:
        """sacrebleu's `nrefs` for the signature: the number of references of
        every segment of the corpus, or "var" when they differ."""
        self.check_inputs(hyps, refs, srcs, data)
        counts = {sum(1 for r in seg if r is not None) for seg in refs}
        return {"nrefs": next(iter(counts)) if len(counts) == 1 else "var"}

    def library_versions(self) -> dict[str, str]:
        import sacrebleu  # lazy: sacrebleu loads only when this metric runs

        return {"sacrebleu": sacrebleu.__version__}

    def signature_fields(self) -> dict[str, Any]:
        """sacrebleu's own signature fields, in its order and spelling
        (`nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp`), built from the
        options; `nrefs` comes from the loaded corpus state (absent without
        one), and sacrebleu's `version:` is the `sacrebleu:` field at the end."""
        fields: dict[str, Any] = {}
        state = self.loaded_state or {}
        if "nrefs" in state:
            fields["nrefs"] = state["nrefs"]
        fields.update(self._sacrebleu_fields())
        return fields


class BLEUMetric(_SacreBLEUMetric):
    """BLEU (Papineni et al. 2002) as sacrebleu computes it, 0-100.

    Segment scores are sacrebleu's sentence-level BLEU with its defaults, i.e.
    `sacrebleu.sentence_bleu` (effective order on, exp smoothing), whatever
    `effective_order` says; `effective_order` applies to the corpus score, off
    by default as in `sacrebleu.corpus_bleu`. The signature describes the
    corpus score.

    >>> m = BLEUMetric()
    >>> round(m.score(["a b c d"], [["a b c d"]])[0].score, 1)
    100.0
    """

    name = "bleu"
    corpus_label = "corpus BLEU"
    chunk_outputs = 5000  # linear in length, ~10,000 short outputs a second on one core: seconds a chunk
    defaults: ClassVar[dict[str, Any]] = {
        "tokenize": "13a",
        "lowercase": False,
        "smooth_method": "exp",
        "smooth_value": None,
        "max_ngram_order": 4,
        "effective_order": False,
        "spm": None,
    }
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"max_ngram_order": (1, 10), "smooth_value": (0.0, 100.0)}

    def _validate(self) -> None:
        from sacrebleu.metrics.bleu import BLEU  # lazy: sacrebleu loads only when this metric runs

        tok = self.options["tokenize"]
        spm = self.options["spm"]
        if tok in SPM_TOKENIZERS:
            if spm is None:
                raise OptionError(
                    f"bleu: tokenize={tok} needs spm=PATH, a local SentencePiece model file "
                    "(the workbench never downloads one)"
                )
        elif spm is not None:
            raise OptionError(f"bleu: spm is only read with tokenize={'|'.join(SPM_TOKENIZERS)}")
        elif tok not in OFFLINE_TOKENIZERS:
            raise OptionError(
                f"bleu: tokenize={tok!r} is not available offline; use one of "
                f"{', '.join(OFFLINE_TOKENIZERS + SPM_TOKENIZERS)} (the last {len(SPM_TOKENIZERS)} with spm=PATH)"
            )
        if self.options["smooth_method"] not in BLEU.SMOOTH_DEFAULTS:
            raise OptionError(
                f"bleu: smooth_method={self.options['smooth_method']!r}; use one of {', '.join(BLEU.SMOOTH_DEFAULTS)}"
            )
        self._sentence_engine_cache = None
        self._spm_tokenizer: LocalSPMTokenizer | None = None

    def _tokenizer_spm(self) -> LocalSPMTokenizer:
        if self._spm_tokenizer is None:
            self._spm_tokenizer = spm_tokenizer(self.options["tokenize"], self.options["spm"])
        return self._spm_tokenizer

    def _build(self, sentence: bool):
        from sacrebleu.metrics import BLEU  # lazy: sacrebleu loads only when this metric runs

        spm = self.options["tokenize"] in SPM_TOKENIZERS
        try:
            engine = BLEU(
                lowercase=self.options["lowercase"],
                tokenize="none" if spm else self.options["tokenize"],
                smooth_method=self.options["smooth_method"],
                smooth_value=self.options["smooth_value"],
                max_ngram_order=self.options["max_ngram_order"],
                effective_order=True if sentence else self.options["effective_order"],
            )
        except (ImportError, RuntimeError, OSError) as exc:
            raise OptionError(f"bleu: tokenizer {self.options['tokenize']!r} cannot be used here: {exc}") from exc
        if spm:
            # sacrebleu's BLEU with our tokenizer in place of the one it would download.
            engine.tokenizer = self._tokenizer_spm()
            engine.tokenizer_signature = engine.tokenizer.signature()
        return engine

    def _segment_engine(self):
        if self._sentence_engine_cache is None:
            self._sentence_engine_cache = self._build(sentence=True)
        return self._sentence_engine_cache

    def _sacrebleu_fields(self) -> dict[str, Any]:
        from sacrebleu.metrics.bleu import BLEU  # lazy: sacrebleu loads only when this metric runs

        method = self.options["smooth_method"]
        smooth = method
        if BLEU.SMOOTH_DEFAULTS[method] is not None:
            value = self.options["smooth_value"]
            smooth += f"[{BLEU.SMOOTH_DEFAULTS[method] if value is None else value:.2f}]"
        fields: dict[str, Any] = {
            "case": "lc" if self.options["lowercase"] else "mixed",
            "eff": self.options["effective_order"],
            "tok": self._engine.tokenizer.signature(),
            "smooth": smooth,
        }
        if self.options["spm"] is not None:
            # The model file, by its sha256 (12 hex digits, as comet's checkpoint): sacrebleu's
            # `tok:flores200` alone does not say which model file tokenized.
            fields["spm"] = f"sha256:{self._tokenizer_spm().digest[:12]}"
        # sacrebleu's signature omits the order; ours names it when it is not BLEU-4.
        if self.options["max_ngram_order"] != 4:
            fields["order"] = self.options["max_ngram_order"]
        return fields

    @staticmethod
    def _details(sb) -> dict[str, Any]:
        return {
            "precisions": [float(p) for p in sb.precisions],
            "bp": float(sb.bp),
            "sys_len": int(sb.sys_len),
            "ref_len": int(sb.ref_len),
        }

    def _segment_extra(self, sb) -> dict[str, Any]:
        return self._details(sb)

    def _corpus_extra(self, sb) -> dict[str, Any]:
        out = self._details(sb)
        out["ratio"] = float(sb.ratio)
        out["verbose"] = sb._verbose
        return out


class CHRFMetric(_SacreBLEUMetric):
    """chrF (Popović 2015) as sacrebleu computes it, 0-100; `word_order=2` gives chrF++.

    >>> m = CHRFMetric(word_order=2)
    >>> m.score(["a cat"], [["a cat"]])[0].score
    100.0
    """

    name = "chrf"
    corpus_label = "corpus chrF"
    chunk_outputs = 5000  # linear in length, ~7,000 short outputs a second on one core: seconds a chunk
    defaults: ClassVar[dict[str, Any]] = {
        "char_order": 6,
        "word_order": 0,
        "beta": 2,
        "lowercase": False,
        "whitespace": False,
        "eps_smoothing": False,
    }

    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {
        "char_order": (0, 20),
        "word_order": (0, 10),
        "beta": (0, 100),
    }

    def _validate(self) -> None:
        if self.options["char_order"] + self.options["word_order"] < 1:
            raise OptionError("chrf: char_order + word_order must be at least 1")

    def _sacrebleu_fields(self) -> dict[str, Any]:
        return {
            "case": "lc" if self.options["lowercase"] else "mixed",
            "eff": not self.options["eps_smoothing"],
            "nc": self.options["char_order"],
            "nw": self.options["word_order"],
            "space": self.options["whitespace"],
        }

    def _build(self, sentence: bool):
        from sacrebleu.metrics import CHRF  # lazy: sacrebleu loads only when this metric runs

        return CHRF(
            char_order=self.options["char_order"],
            word_order=self.options["word_order"],
            beta=self.options["beta"],
            lowercase=self.options["lowercase"],
            whitespace=self.options["whitespace"],
            eps_smoothing=self.options["eps_smoothing"],
        )

    def _corpus_extra(self, sb) -> dict[str, Any]:
        return {"name": sb.name}


class TERMetric(_SacreBLEUMetric):
    """Translation edit rate (Snover et al. 2006) as sacrebleu computes it, 0-100+, lower is better.

    >>> m = TERMetric()
    >>> m.score(["a b c"], [["a b d"]])[0].score
    33.33333333333333
    """

    name = "ter"
    corpus_label = "corpus TER"
    higher_is_better = False
    defaults: ClassVar[dict[str, Any]] = {
        "normalized": False,
        "no_punct": False,
        "asian_support": False,
        "case_sensitive": False,
    }

    def _build(self, sentence: bool):
        from sacrebleu.metrics import TER  # lazy: sacrebleu loads only when this metric runs

        return TER(
            normalized=self.options["normalized"],
            no_punct=self.options["no_punct"],
            asian_support=self.options["asian_support"],
            case_sensitive=self.options["case_sensitive"],
        )

    def _sacrebleu_fields(self) -> dict[str, Any]:
        return {
            "case": "mixed" if self.options["case_sensitive"] else "lc",
            "tok": self._engine.tokenizer.signature(),
            "norm": self.options["normalized"],
            "punct": not self.options["no_punct"],
            "asian": self.options["asian_support"],
        }

    @staticmethod
    def _details(sb) -> dict[str, Any]:
        return {"num_edits": float(sb.num_edits), "ref_length": float(sb.ref_length)}

    def _segment_extra(self, sb) -> dict[str, Any]:
        return self._details(sb)

    def _corpus_extra(self, sb) -> dict[str, Any]:
        return self._details(sb)
