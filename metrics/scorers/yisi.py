"""YiSi-0, YiSi-1 and YiSi-2 (Lo 2019, seed 002; reference C++: github.com/chikiulo/yisi).

YiSi compares two sentences unit by unit. Each unit u has a weight w(u), each
pair of units a similarity s(e, f) in [0, 1]. Both sentences are cut into
n-grams; an n-gram of one side is matched with the most similar n-gram of the
other side (similarity = weighted sum of the unit similarities at aligned
positions), and the matched similarities are averaged, weighted by the
n-gram's total unit weight:

    recall    = sum_a max_b sum_k w(f_a+k) s(f_a+k, e_b+k) / sum_a sum_k w(f_a+k)
    precision = sum_b max_a sum_k w(e_b+k) s(f_a+k, e_b+k) / sum_b sum_k w(e_b+k)
    YiSi      = P R / (alpha P + (1 - alpha) R)        (0 when P or R is 0)

with e = output units, f = reference (YiSi-0/1) or source (YiSi-2) units.
When either sentence has fewer than n units, both use n = the shorter length
(as the C++). alpha = 1 gives the recall, alpha = 0 the precision.

Weights: idf(u) = log2(1 + (N + 1) / (df(u) + 1)), learned from the N
references (each reference sentence is one document, several references of
a segment count separately, as the C++ corpus lines); an unseen unit gets
log2(1 + (N + 1)), and a unit missing from the table is looked up again
ASCII-lowercased, as the C++ `lexweightmodel_t::get_weight` does (YiSi-0,
and YiSi-1/2, whose units are token strings for this reason: on a cased
model "The" takes the weight of "the"). Output units are weighed with the
same reference-learned table (YiSi-0/1). For YiSi-2 the source units are
weighed with idf learned from the sources and the output units with idf
learned from the outputs (the C++ yisi-2 configuration:
inplexweight-type=learn, hyplexweight-type=learn). `idf=false` uses uniform
weights 1.

Where idf comes from: by default the texts of the call. For chunked scoring,
`corpus_state()` learns the tables once from the whole corpus (as the C++
learns them from the whole input files) and `load_corpus_state()` makes
every chunk use them, so chunks give the scores of one call.

Several references: precision and recall are each the maximum over the
references (C++ `rfeatures` / `get_sentsim`), then combined.

Corpus (document) score: the mean of the segment scores, as the C++
`docscore` (the segments carry [score, 1] so chunks combine exactly).

YiSi-0: units are whitespace tokens (`str.split()`, i.e. any Unicode
whitespace; the C++ splits on the space character only, which differs only
for tabs, non-breaking and other unusual spaces inside a line; no other
tokenisation, so feed tokenised text as the reference does); s = 2 L /
(|a| + |b|) with L the longest common contiguous substring, all lengths in
UTF-8 bytes as the C++ measures them. The `score` command strips trailing
whitespace of each line, as sacrebleu's command line does (the C++ keeps
it; it matters only for chrF with `whitespace=true` on lines ending in
spaces). Reproduces the C++ test vectors (`../shared/data/yisi-test`) to 1e-6.

YiSi-1 / YiSi-2: like the reference's BERT mode ("uemb" sentences), units
are the model's subword tokens without special tokens ([CLS], [SEP], <s> ...),
each with its own contextual vector; s = cosine of unit-normalised vectors,
negatives clipped to 0 (computed in float64, rounded to float32); `layer`
defaults to the model's last hidden state. The default
model is the packaged all-MiniLM-L6-v2, which is English-only: for YiSi-2
(source and output in different languages) pass a multilingual local model,
e.g. `model=/models/bert-base-multilingual-cased layer=9` (the paper's choice).

The SRL variants (YiSi-1_srl, YiSi-2_srl, beta > 0) need a semantic role
labeller and are out of scope.

>>> from metrics.scorers import get_metric
>>> m = get_metric("yisi0")
>>> segs = m.score(["the cat sat on the mat"], [["the cat sat on the mat"]])
>>> round(m.corpus_score(segs).score, 6)
1.0
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Hashable, Iterable, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar

from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.encoder import get_encoder
from metrics.scorers.errors import InputError, OptionError
from metrics.scorers.loading import compute_dtype_name, model_num_layers

if TYPE_CHECKING:  # torch stays out of processes that only list metrics
    import torch

# Pairs are padded into one [pairs, len1, len_out] tensor per step; a step
# holds at most this many cells (a few such tensors live at once: ~100 MB in float32).
_CELLS_PER_STEP = 4_000_000


# ---- weights ---------------------------------------------------------------
def _ascii_lower(word: str) -> str:
    # C++ tolower() in the C locale: ASCII letters only.
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in word)


class IdfTable:
    """idf(u) = log2(1 + (N+1)/(df(u)+1)) over N documents (unit sequences);
    a unit missing from the table is looked up again ASCII-lowercased (the
    C++ `lexweightmodel_t::get_weight`), then weighs as unseen."""

    def __init__(
        self, documents: Iterable[Iterable[Hashable]] = (), *, df: dict | None = None, n_docs: int | None = None
    ) -> None:
        if df is None:
            df = {}
            n_docs = 0
            for doc in documents:
                n_docs += 1
                for unit in set(doc):
                    df[unit] = df.get(unit, 0) + 1
        self.n_docs = int(n_docs or 0)
        self.df = df
        self.weights = {u: math.log2(1.0 + (self.n_docs + 1.0) / (c + 1.0)) for u, c in df.items()}
        self.unseen = math.log2(1.0 + (self.n_docs + 1.0))

    def to_state(self) -> dict[str, Any]:
        return {"n": self.n_docs, "df": {str(u): c for u, c in sorted(self.df.items(), key=lambda kv: str(kv[0]))}}

    @classmethod
    def from_state(cls, state: Any, what: str) -> IdfTable:
        try:
            return cls(df={str(u): int(c) for u, c in state["df"].items()}, n_docs=int(state["n"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"corpus state: malformed {what} idf table ({exc})") from None

    def __call__(self, unit: Hashable) -> float:
        weight = self.weights.get(unit)
        if weight is None and isinstance(unit, str):
            weight = self.weights.get(_ascii_lower(unit))
        return self.unseen if weight is None else weight


def _f32(value: float) -> float:

    return struct.unpack("f", struct.pack("f", value))[0]


def _uniform(unit: Hashable) -> float:
    return 1.0


# ---- YiSi-0 lexical similarity --------------------------------------------
def _lcs_bytes(a: bytes, b: bytes) -> int:
    """Length of the longest common contiguous substring: grow a match from
    each start of `a` while it still occurs in `b` (C-level `in` does the
    search, so this is fast for words)."""
    if a == b:
        return len(a)
    if len(a) > len(b):
        a, b = b, a
    best = 0
    i = 0
    while i < len(a) - best:
        length = best + 1
        while i + length <= len(a) and a[i : i + length] in b:
            length += 1
        if length - 1 > best:
            best = length - 1
        i += 1
    return best


def lcs_similarity(a: str, b: str) -> float:
    """2 L / (|a| + |b|), L the longest common substring, lengths in UTF-8 bytes."""
    ab, bb = a.encode("utf-8"), b.encode("utf-8")
    total = len(ab) + len(bb)
    return 0.0 if total == 0 else 2.0 * _lcs_bytes(ab, bb) / total


def combine(precision: float, recall: float, alpha: float) -> float:
    if precision == 0.0 or recall == 0.0:
        return 0.0
    return precision * recall / (alpha * precision + (1.0 - alpha) * recall)


# ---- n-gram phrasal precision / recall (batched) ---------------------------
def _shift_sum(x: torch.Tensor, n: int, dims: int) -> torch.Tensor:
    """Sum of n diagonal shifts: out[.., a, b] = sum_k x[.., a+k, b+k] (dims=2)
    or out[.., a] = sum_k x[.., a+k] (dims=1)."""
    if dims == 1:
        span = x.shape[-1] - n + 1
        return sum(x[..., k : k + span] for k in range(n))
    span1, span2 = x.shape[-2] - n + 1, x.shape[-1] - n + 1
    return sum(x[..., k : k + span1, k : k + span2] for k in range(n))


def _phrasal_pr_padded(
    sim: torch.Tensor,
    w1: torch.Tensor,
    wh: torch.Tensor,
    len1: torch.Tensor,
    lenh: torch.Tensor,
    n: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Precision and recall for a batch of pairs sharing the n-gram size n.

    sim [B, L1, Lh] unit similarities (zero where padded), w1 [B, L1] weights
    of the reference/source units, wh [B, Lh] weights of the output units,
    len1/lenh [B] true lengths (each >= n).
    """
    import torch  # lazy: heavy optional dependency, loaded only by model metrics

    recall_sums = _shift_sum(sim * w1[:, :, None], n, 2)  # [B, A1, A2]
    precision_sums = _shift_sum(sim * wh[:, None, :], n, 2)
    ngram_w1 = _shift_sum(w1, n, 1)  # [B, A1]
    ngram_wh = _shift_sum(wh, n, 1)  # [B, A2]
    span1 = torch.arange(ngram_w1.shape[1], device=sim.device)
    span2 = torch.arange(ngram_wh.shape[1], device=sim.device)
    valid1 = span1[None, :] < (len1 - n + 1)[:, None]
    valid2 = span2[None, :] < (lenh - n + 1)[:, None]
    pair_ok = valid1[:, :, None] & valid2[:, None, :]
    neg = torch.finfo(sim.dtype).min
    # Similarities are >= 0, so clamping the max at 0 (the C++ fmax from 0.0)
    # only matters for rows that are all padding; those are masked below.
    best_r = recall_sums.masked_fill(~pair_ok, neg).amax(dim=2).clamp_min(0.0)
    best_p = precision_sums.masked_fill(~pair_ok, neg).amax(dim=1).clamp_min(0.0)
    recall = (best_r * valid1).sum(1) / (ngram_w1 * valid1).sum(1)
    precision = (best_p * valid2).sum(1) / (ngram_wh * valid2).sum(1)
    return precision, recall


def _pad(rows: Sequence[torch.Tensor], width: int, dtype, device) -> torch.Tensor:
    import torch  # lazy: heavy optional dependency, loaded only by model metrics

    out = torch.zeros((len(rows), width) + tuple(rows[0].shape[1:]), dtype=dtype, device=device)
    for i, row in enumerate(rows):
        out[i, : row.shape[0]] = row
    return out


def phrasal_precision_recall(
    pairs: Sequence[dict[str, Any]],
    n: int,
    *,
    device: str = "cpu",
    dtype=None,
) -> list[tuple[float, float]]:
    """(precision, recall) for each pair, batched.

    Each pair is a dict with `w1` and `wh` (1-D weight tensors of the
    reference/source and output units) and either `sim` ([L1, Lh] unit
    similarities) or `e1` / `eh` (unit-normalised vectors [L, dim]; the
    similarity is their clipped cosine, computed here batched).
    """
    import torch  # lazy: heavy optional dependency, loaded only by model metrics

    dtype = dtype or torch.float64
    results: list[tuple[float, float]] = [(0.0, 0.0)] * len(pairs)
    groups: dict[int, list[int]] = {}
    for i, pair in enumerate(pairs):
        l1, lh = len(pair["w1"]), len(pair["wh"])
        if l1 == 0 or lh == 0:
            continue  # an empty side scores 0 (C++ returns (0, 0))
        groups.setdefault(min(n, l1, lh), []).append(i)
    for g, members in groups.items():
        # Similar lengths share a step, so padding stays small.
        members.sort(key=lambda i: (len(pairs[i]["w1"]), len(pairs[i]["wh"])))
        for step_ids in _steps(members, pairs):
            step = [pairs[i] for i in step_ids]
            len1 = torch.tensor([len(p["w1"]) for p in step], device=device)
            lenh = torch.tensor([len(p["wh"]) for p in step], device=device)
            max1, maxh = int(len1.max()), int(lenh.max())
            w1 = _pad([p["w1"] for p in step], max1, dtype, device)
            wh = _pad([p["wh"] for p in step], maxh, dtype, device)
            if "sim" in step[0]:
                sim = torch.zeros((len(step), max1, maxh), dtype=dtype, device=device)
                for i, p in enumerate(step):
                    s = p["sim"]
                    sim[i, : s.shape[0], : s.shape[1]] = s
            else:
                e1 = _pad([p["e1"] for p in step], max1, dtype, device)
                eh = _pad([p["eh"] for p in step], maxh, dtype, device)
                sim = torch.bmm(e1, eh.transpose(1, 2)).clamp_min(0.0)
            precision, recall = _phrasal_pr_padded(sim, w1, wh, len1, lenh, g)
            for i, p_val, r_val in zip(step_ids, precision.tolist(), recall.tolist()):
                results[i] = (p_val, r_val)
    return results


def _steps(members: list[int], pairs: Sequence[dict[str, Any]]) -> Iterable[list[int]]:
    """Consecutive runs of `members` whose padded size stays within the cell budget."""
    step: list[int] = []
    max1 = maxh = 0
    for i in members:
        l1, lh = len(pairs[i]["w1"]), len(pairs[i]["wh"])
        new1, newh = max(max1, l1), max(maxh, lh)
        if step and (len(step) + 1) * new1 * newh > _CELLS_PER_STEP:
            yield step
            step, new1, newh = [], l1, lh
        step.append(i)
        max1, maxh = new1, newh
    if step:
        yield step


# ---- metrics ---------------------------------------------------------------
class _YiSiBase(Metric):
    version: ClassVar[str] = "1"
    defaults: ClassVar[dict[str, Any]] = {"ngram": 3, "alpha": 0.8, "idf": True}
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"ngram": (1, 20), "alpha": (0.0, 1.0)}
    # Which idf tables the metric learns (state key -> what they are learned from).
    idf_tables: ClassVar[tuple[str, ...]] = ("ref",)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.options["alpha"] = float(self.options["alpha"])
        if not isinstance(self.options["idf"], bool):
            raise OptionError(f"{self.name}: idf must be true or false, got {self.options['idf']!r}")

    def _weights(self, documents: Iterable[Iterable[Hashable]], table: str = "ref") -> Callable[[Hashable], float]:
        """The idf table `table`: from the loaded corpus state when there is one,
        else learned from `documents` (the texts of this call)."""
        if not self.options["idf"]:
            return _uniform
        state = self.loaded_state or {}
        if f"{table}_idf" in state:
            return IdfTable.from_state(state[f"{table}_idf"], table)
        return IdfTable(documents)

    def _idf_documents(self, hyps, refs, srcs) -> dict[str, list[list[str]]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def corpus_state(self, hyps, refs=None, srcs=None, data=None) -> dict | None:
        """With idf: the idf tables learned from the whole corpus (YiSi-0/1:
        all references; YiSi-2: all sources and all outputs), as the C++
        learns them from the whole input files."""
        if not self.options["idf"]:
            return None
        self.check_inputs(hyps, refs, srcs, data)
        docs = self._idf_documents(hyps, refs, srcs)
        return {f"{table}_idf": IdfTable(docs[table]).to_state() for table in self.idf_tables}

    def _segments(self, pair_pr: list[tuple[float, float]], owners: list[int], n_segments: int) -> list[SegmentResult]:
        """Per segment: precision and recall each the max over its pairs."""
        best_p = [0.0] * n_segments
        best_r = [0.0] * n_segments
        for (p, r), seg in zip(pair_pr, owners):
            best_p[seg] = max(best_p[seg], p)
            best_r[seg] = max(best_r[seg], r)
        alpha = self.options["alpha"]
        out = []
        for p, r in zip(best_p, best_r):
            score = combine(p, r, alpha)
            out.append(SegmentResult(score, {"precision": p, "recall": r}, [score, 1.0]))
        return out

    def score_from_stats(self, totals: list[float]) -> CorpusResult:
        return CorpusResult(totals[0] / totals[1] if totals[1] else math.nan)

    def check_inputs(self, hyps, refs, srcs, data) -> None:
        super().check_inputs(hyps, refs, srcs, data)
        for what, texts in (("outputs", hyps), ("sources", srcs if self.needs_source else None)):
            for i, text in enumerate(texts or ()):
                if not isinstance(text, str):
                    raise InputError(f"{self.name}: segment {i}: {what} must be strings, got {type(text).__name__}")

    @staticmethod
    def _reference_pairs(refs: Sequence[Sequence[str]]) -> tuple[list[str], list[int]]:
        flat, owners = [], []
        for seg, seg_refs in enumerate(refs):
            if isinstance(seg_refs, str) or not seg_refs:
                raise InputError(f"segment {seg}: expected a non-empty list of references")
            for ref in seg_refs:
                if not isinstance(ref, str):
                    raise InputError(f"segment {seg}: references must be strings")
                flat.append(ref)
                owners.append(seg)
        return flat, owners


class YiSi0Metric(_YiSiBase):
    """YiSi-0: longest-common-substring lexical similarity, idf from references.

    >>> from metrics.scorers import get_metric
    >>> m = get_metric("yisi0", alpha=0.5)
    >>> round(m.score(["a red cat"], [["a red cat"]])[0].score, 6)
    1.0
    """

    name: ClassVar[str] = "yisi0"

    def _idf_documents(self, hyps, refs, srcs) -> dict[str, list[list[str]]]:
        flat, _ = self._reference_pairs(refs)
        return {"ref": [r.split() for r in flat]}

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        import torch  # lazy: heavy optional dependency, loaded only by model metrics

        self.check_inputs(hyps, refs, srcs, data)
        flat_refs, owners = self._reference_pairs(refs)
        ref_tokens = [r.split() for r in flat_refs]
        hyp_tokens = [h.split() for h in hyps]
        weight = self._weights(ref_tokens, "ref")
        cache: dict[tuple[str, str], float] = {}
        pairs = []
        for rt, seg in zip(ref_tokens, owners):
            ht = hyp_tokens[seg]
            # Similarities between word types, each pair computed once per call.
            r_types, h_types = sorted(set(rt)), sorted(set(ht))
            r_index = {w: i for i, w in enumerate(r_types)}
            h_index = {w: i for i, w in enumerate(h_types)}
            rows = []
            for a in r_types:
                row = []
                for b in h_types:
                    value = cache.get((a, b))
                    if value is None:
                        value = cache[(a, b)] = lcs_similarity(a, b)
                    row.append(value)
                rows.append(row)
            table = torch.tensor(rows, dtype=torch.float64).reshape(len(r_types), len(h_types))
            ri = torch.tensor([r_index[w] for w in rt], dtype=torch.long)
            hi = torch.tensor([h_index[w] for w in ht], dtype=torch.long)
            pairs.append(
                {
                    "sim": table[ri][:, hi] if len(rt) and len(ht) else torch.zeros((len(rt), len(ht))),
                    "w1": torch.tensor([weight(w) for w in rt], dtype=torch.float64),
                    "wh": torch.tensor([weight(w) for w in ht], dtype=torch.float64),
                }
            )
        pair_pr = phrasal_precision_recall(pairs, self.options["ngram"])
        return self._segments(pair_pr, owners, len(hyps))


class _YiSiEmbeddingBase(_YiSiBase):
    """Shared by YiSi-1 and YiSi-2: subword units with contextual vectors."""

    uses_model: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        **_YiSiBase.defaults,
        "model": "all-MiniLM-L6-v2",
        "layer": None,
        "batch_size": 64,
        "device": None,
    }
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {
        **_YiSiBase.option_bounds,
        "layer": (0, 1000),
        "batch_size": (1, 4096),
    }

    def signature_fields(self) -> dict[str, Any]:

        fields = super().signature_fields()
        if fields["layer"] is None:  # "the top layer": name it, so the signature reproduces
            fields["layer"] = model_num_layers(fields["model"] or None)
        fields["dtype"] = compute_dtype_name(self.options["device"])
        return fields

    @property
    def encoder(self):

        return get_encoder(self.options["model"] or None, self.options["device"])

    def _units(self, encoder, texts: Sequence[str]) -> list[tuple[list[str], torch.Tensor]]:
        """(token strings, unit-normalised vectors) per text, special tokens dropped.
        Units are token strings, as the C++ reads them, so that idf can retry
        a unit in lower case."""
        import torch  # lazy: heavy optional dependency, loaded only by model metrics

        layer = encoder.check_layer(self.options["layer"])
        out = []
        for emb in encoder.token_embeddings(texts, layer=layer, batch_size=self.options["batch_size"]):
            keep = [i for i, special in enumerate(emb.special_mask) if not special]
            if keep and keep[-1] - keep[0] + 1 == len(keep):
                vectors = emb.vectors[keep[0] : keep[-1] + 1]  # the usual case: specials only at the ends
            else:
                vectors = emb.vectors[keep] if keep else emb.vectors[:0]
            vectors = torch.nn.functional.normalize(vectors.float(), p=2, dim=1)
            out.append(([emb.tokens[i] for i in keep], vectors))
        return out

    def _pairs(
        self,
        side1: list[tuple[list[str], torch.Tensor]],
        hyp_side: list[tuple[list[str], torch.Tensor]],
        weight1: Callable[[Hashable], float],
        weight_h: Callable[[Hashable], float],
    ) -> list[dict[str, Any]]:
        import torch  # lazy: heavy optional dependency, loaded only by model metrics

        pairs = []
        for (ids1, vec1), (ids_h, vec_h) in zip(side1, hyp_side):
            pairs.append(
                {
                    "e1": vec1,
                    "eh": vec_h,
                    "w1": torch.tensor([weight1(u) for u in ids1], dtype=torch.float32),
                    "wh": torch.tensor([weight_h(u) for u in ids_h], dtype=torch.float32),
                }
            )
        return pairs

    def _pair_pr(self, encoder, pairs: list[dict[str, Any]]) -> list[tuple[float, float]]:
        import torch  # lazy: heavy optional dependency, loaded only by model metrics

        # float64, then rounded to float32: float32 sums round differently with
        # the padded shapes of a step, so a segment would score differently in
        # different chunks; float64 differences are far below float32's resolution.
        values = phrasal_precision_recall(pairs, self.options["ngram"], device=encoder.device, dtype=torch.float64)
        return [(_f32(p), _f32(r)) for p, r in values]

    def library_versions(self) -> dict[str, str]:

        versions = {}
        for lib in ("transformers", "torch"):
            try:
                versions[lib] = metadata.version(lib)
            except metadata.PackageNotFoundError:
                pass
        return versions


class YiSi1Metric(_YiSiEmbeddingBase):
    """YiSi-1: clipped cosine of contextual subword embeddings, idf from references.

    >>> from metrics.scorers import get_metric
    >>> m = get_metric("yisi1", device="cpu")
    >>> round(m.score(["a red cat"], [["a red cat"]])[0].score, 4)
    1.0
    """

    name: ClassVar[str] = "yisi1"

    def _idf_documents(self, hyps, refs, srcs) -> dict[str, list[list[str]]]:
        flat, _ = self._reference_pairs(refs)
        return {"ref": self.encoder.token_strings(flat)}

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        flat_refs, owners = self._reference_pairs(refs)
        if not hyps:
            return []
        encoder = self.encoder
        ref_units = self._units(encoder, flat_refs)
        hyp_units = self._units(encoder, hyps)
        weight = self._weights((units for units, _ in ref_units), "ref")
        pairs = self._pairs(ref_units, [hyp_units[seg] for seg in owners], weight, weight)
        return self._segments(self._pair_pr(encoder, pairs), owners, len(hyps))


class YiSi2Metric(_YiSiEmbeddingBase):
    """YiSi-2: reference-free, between source and output with a cross-lingual
    model; source units weighted by idf over the sources of the call, output
    units by idf over the outputs of the call. The default MiniLM is
    English-only: pass `model=` a multilingual local model for real use.
    """

    name: ClassVar[str] = "yisi2"
    needs_refs: ClassVar[bool] = False
    needs_source: ClassVar[bool] = True
    idf_tables: ClassVar[tuple[str, ...]] = ("src", "hyp")

    def _idf_documents(self, hyps, refs, srcs) -> dict[str, list[list[str]]]:
        return {"src": self.encoder.token_strings(srcs), "hyp": self.encoder.token_strings(hyps)}

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
        encoder = self.encoder
        src_units = self._units(encoder, srcs)
        hyp_units = self._units(encoder, hyps)
        weight_src = self._weights((units for units, _ in src_units), "src")
        weight_hyp = self._weights((units for units, _ in hyp_units), "hyp")
        pairs = self._pairs(src_units, hyp_units, weight_src, weight_hyp)
        return self._segments(self._pair_pr(encoder, pairs), list(range(len(hyps))), len(hyps))
