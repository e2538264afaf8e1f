"""BERTScore (Zhang et al. 2020), equal to the bert-score package.

Greedy cosine matching of contextual token embeddings: precision averages,
over candidate tokens, the best cosine with any reference token; recall the
same over reference tokens; F = 2PR/(P+R). As in bert-score:
- texts are stripped; [CLS]/[SEP] (<s>/</s>) stay in the sequence and may be
  matched, but weigh 0; every other token weighs 1, or its idf with idf=true:
  idf(t) = log((M+1)/(df(t)+1)) over the M references of the call (a list
  with one entry per reference of every segment, duplicates included), or,
  for chunked runs, over all references of the corpus (`corpus_state()`,
  loaded with `load_corpus_state()`: bert-score's `idf_sents`);
- an empty candidate or reference (no token besides the specials) scores 0;
  so does a side whose weights sum to 0 (bert-score gives NaN for P or R there);
- several references: the element-wise maximum of P, R and F;
- baseline rescaling (x - b) / (1 - b) of P, R, F with the row of a
  bert-score style csv (`LAYER,P,R,F`) for the layer used.
One deliberate difference: bert-score multiplies the similarities of padded
positions by 0 before taking the maxima, so a token whose best cosine is
negative gets 0 instead when its pair happens to be padded in its batch (the
result then depends on batch_size). We always take the best real cosine,
which is what bert-score computes with batch_size=1. The matching runs in
float64 and is rounded to float32, so a pair's P/R/F do not depend on which
other pairs share its chunk; the token vectors themselves do, at float32
rounding (1e-7), as in bert-score with another batch_size.

The difference is speed: identical texts are embedded once with a fast
tokenizer, batches are sorted by token length, the forward pass stops at the
requested layer, and the matching of many pairs runs as one padded bmm per
chunk on the model's device.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from metrics.scorers.loading import LazyModule

torch = LazyModule("torch")  # imported on first use (see LazyModule)

from metrics.scorers import files
from metrics.scorers.base import CorpusResult, Metric, SegmentResult, Triple
from metrics.scorers.encoder import Encoder, TokenEmbedding, get_encoder
from metrics.scorers.errors import InputError, OptionError
from metrics.scorers.loading import DEFAULT_EMBEDDING_MODEL, compute_dtype_name, model_num_layers

# Elements of one chunk's similarity tensor (pairs x hyp tokens x ref tokens).
_MAX_CHUNK_ELEMENTS = 1 << 24
# Fill for padding before a max: below any cosine, finite so 0-weights stay 0.
_PAD_SIM = -2.0


def _chunks(pairs: Sequence[tuple[int, int]], lengths: Sequence[int], max_elements: int) -> list[list[int]]:
    """Pair indices grouped so that padding each group to its longest candidate
    and longest reference wastes little: pairs sorted by (candidate length in
    steps of 8 tokens, reference length), a group closed when its padded
    volume would exceed 1.3x the real one (or `max_elements`)."""
    order = sorted(range(len(pairs)), key=lambda k: (lengths[pairs[k][0]] // 8, lengths[pairs[k][1]]))
    chunks: list[list[int]] = []
    current: list[int] = []
    max_h = max_r = real = 0
    for k in order:
        lh, lr = lengths[pairs[k][0]], lengths[pairs[k][1]]
        new_h, new_r, new_real = max(max_h, lh), max(max_r, lr), real + lh * lr
        padded = (len(current) + 1) * new_h * new_r
        if current and (padded > max_elements or (len(current) >= 16 and padded > 1.3 * new_real)):
            chunks.append(current)
            current, new_h, new_r, new_real = [], lh, lr, lh * lr
        current.append(k)
        max_h, max_r, real = new_h, new_r, new_real
    if current:
        chunks.append(current)
    return chunks


def greedy_match(
    pairs: Sequence[tuple[int, int]],
    vectors: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor],
    *,
    max_elements: int = _MAX_CHUNK_ELEMENTS,
) -> torch.Tensor:
    """P, R, F of each (candidate, reference) pair of text indices, as [n_pairs, 3].

    `vectors[i]` are unit-norm token vectors [n_i, dim] of text i (all on one
    device) and `weights[i]` their weights [n_i]. Pairs are grouped by length
    and each group is matched with one batched matrix product.
    """
    if not pairs:
        return torch.zeros((0, 3))
    device = vectors[pairs[0][0]].device
    lengths = [v.shape[0] for v in vectors]
    pad = torch.nn.utils.rnn.pad_sequence
    out = torch.zeros((len(pairs), 3), dtype=torch.float32, device=device)
    for chunk in _chunks(pairs, lengths, max_elements):
        hs = [pairs[k][0] for k in chunk]
        rs = [pairs[k][1] for k in chunk]
        hyp = pad([vectors[i] for i in hs], batch_first=True)
        ref = pad([vectors[i] for i in rs], batch_first=True)
        hyp_w = pad([weights[i] for i in hs], batch_first=True)
        ref_w = pad([weights[i] for i in rs], batch_first=True)
        hyp_len = torch.tensor([lengths[i] for i in hs], device=device)
        ref_len = torch.tensor([lengths[i] for i in rs], device=device)
        hyp_mask = torch.arange(hyp.shape[1], device=device)[None, :] < hyp_len[:, None]
        ref_mask = torch.arange(ref.shape[1], device=device)[None, :] < ref_len[:, None]
        # float64 from here, rounded to float32 at the end: a float32 product's or
        # sum's rounding depends on the padded shapes (kernel blocking, reduction
        # tree), so the same pair would score differently in different chunks.
        sim = torch.bmm(hyp.double(), ref.double().transpose(1, 2))
        # Padding must never win a max; cosines are >= -1, so -2 is below any real match.
        best_for_hyp = sim.masked_fill(~ref_mask[:, None, :], _PAD_SIM).amax(dim=2)
        best_for_ref = sim.masked_fill_(~hyp_mask[:, :, None], _PAD_SIM).amax(dim=1)
        hyp_w64, ref_w64 = hyp_w.double(), ref_w.double()
        precision = ((best_for_hyp * hyp_w64).sum(1) / hyp_w64.sum(1)).float()
        recall = ((best_for_ref * ref_w64).sum(1) / ref_w64.sum(1)).float()
        f1 = 2 * precision * recall / (precision + recall)
        result = torch.stack([precision, recall, f1], dim=1)
        out[torch.tensor(chunk, device=device)] = torch.nan_to_num(result, nan=0.0, posinf=0.0, neginf=0.0)
    return out.cpu()


def read_baseline(path: str | Path, layer: int) -> torch.Tensor:
    """(P, R, F) baselines of `layer` from a bert-score style csv (header LAYER,P,R,F),
    read only from an allowed directory (metrics.scorers.files)."""
    rows = list(csv.reader(io.StringIO(files.read_text("baseline", str(path)), newline="")))
    if not rows or [c.strip().upper() for c in rows[0][:4]] != ["LAYER", "P", "R", "F"]:
        raise OptionError("baseline file: first line must be the header LAYER,P,R,F")
    for line_no, row in enumerate(rows[1:], start=2):
        try:
            if row and int(float(row[0])) == layer:
                return torch.tensor([float(row[1]), float(row[2]), float(row[3])])
        except (ValueError, IndexError) as exc:
            raise OptionError(f"baseline file, line {line_no}: expected LAYER,P,R,F numbers") from exc
    raise OptionError(f"baseline file has no row for layer {layer}")


def _file_digest(option: str, path: str | Path) -> str:
    return hashlib.sha256(files.read_bytes(option, str(path))).hexdigest()[:8]


class BERTScoreMetric(Metric):
    """BERTScore F1 per segment, with precision and recall alongside."""

    name: ClassVar[str] = "bertscore"
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    uses_model: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        "model": None,
        "layer": None,
        "idf": False,
        "baseline": None,
        "batch_size": 64,
        "device": None,
    }
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"layer": (0, 1000), "batch_size": (1, 4096)}
    # Options that change the scores, in signature order (batch size and device change only the speed).
    signature_keys: ClassVar[tuple[str, ...]] = ("model", "layer", "idf", "baseline")

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._fixed_df: tuple[Counter, int] | None = None

    # ---- corpus state: idf over all references -----------------------------
    @property
    def corpus_state_reads(self) -> frozenset[str]:  # idf tables need the references; without idf, nothing
        return frozenset({"refs"}) if self.options.get("idf") else frozenset()

    def corpus_state(self, hyps, refs=None, srcs=None, data=None) -> dict | None:
        """With idf=true: document frequencies of token ids over every reference
        of the corpus (bert-score's `idf_sents`), so that chunks weigh tokens alike."""
        if not self.options.get("idf"):
            return None
        if refs is None:
            raise InputError(f"{self.name} needs references")
        texts = [r.strip() for group in refs for r in group]
        ids = self.encoder().tokenize(texts)
        df = Counter(t for seq in ids for t in set(seq))
        return {"idf": {"m": len(ids), "df": {str(t): c for t, c in sorted(df.items())}}}

    def load_corpus_state(self, state: dict | None) -> None:
        super().load_corpus_state(state)
        self._fixed_df = None
        table = (state or {}).get("idf")
        if table is not None:
            try:
                self._fixed_df = (Counter({int(t): int(c) for t, c in table["df"].items()}), int(table["m"]))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise InputError(f"{self.name}: corpus state has a malformed idf table ({exc})") from None

    def idf_from(self, references: Sequence[str]) -> None:
        """Fix the idf table to these references for every later call
        (shorthand for `load_corpus_state(corpus_state(...))`)."""
        self.load_corpus_state(self.corpus_state([""] * len(references), [[r] for r in references]))

    # ---- model -------------------------------------------------------------
    def encoder(self) -> Encoder:
        return get_encoder(self.options["model"], self.options["device"])

    def resolved_layer(self) -> int:
        """The hidden state used; the top layer when none is given (read from config.json)."""
        if self.options["layer"] is not None:
            return self.options["layer"]
        return model_num_layers(self.options["model"])

    # ---- weights -----------------------------------------------------------
    @staticmethod
    def special_ids(encoder: Encoder) -> set[int]:
        tok = encoder.tokenizer
        return {i for i in (tok.cls_token_id, tok.sep_token_id) if i is not None}

    def token_weights(
        self, encoder: Encoder, embeddings: dict[str, TokenEmbedding], ref_texts: list[str]
    ) -> dict[str, torch.Tensor]:
        """Weight of every token of every text: 1 or idf, 0 for [CLS]/[SEP]."""
        specials = self.special_ids(encoder)
        idf: dict[int, float] | None = None
        default = 1.0
        if self.options["idf"]:
            if self._fixed_df is not None:
                df, m = self._fixed_df
            else:
                df = Counter(t for text in ref_texts for t in set(embeddings[text].input_ids))
                m = len(ref_texts)
            idf = {t: math.log((m + 1) / (c + 1)) for t, c in df.items()}
            default = math.log(m + 1)
        out = {}
        for text, emb in embeddings.items():
            values = [
                0.0 if (tid in specials or special) else (idf.get(tid, default) if idf is not None else 1.0)
                for tid, special in zip(emb.input_ids, emb.special_mask)
            ]
            out[text] = torch.tensor(values, dtype=torch.float32)
        return out

    # ---- scoring -----------------------------------------------------------
    def prf(self, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> torch.Tensor:
        """[n, 3] precision, recall, F1 of each hypothesis against its references
        (element-wise max over references, then baseline rescaling)."""
        for i, group in enumerate(refs):
            if isinstance(group, str):
                raise InputError(f"{self.name}: references of segment {i + 1} must be a list of strings")
            if len(group) == 0:
                raise InputError(f"{self.name}: segment {i + 1} has no reference")
        if not hyps:
            return torch.zeros((0, 3))
        encoder = self.encoder()
        layer = encoder.check_layer(self.options["layer"])
        baseline = read_baseline(self.options["baseline"], layer) if self.options["baseline"] else None
        hyp_texts = [h.strip() for h in hyps]
        ref_groups = [[r.strip() for r in group] for group in refs]
        ref_flat = [r for group in ref_groups for r in group]
        unique = list(dict.fromkeys(hyp_texts + ref_flat))
        embs = encoder.token_embeddings(unique, layer=layer, batch_size=self.options["batch_size"])
        by_text = dict(zip(unique, embs))
        weights = self.token_weights(encoder, by_text, ref_flat)
        index = {t: i for i, t in enumerate(unique)}
        empty = [all(e.special_mask) for e in embs]  # nothing but [CLS]/[SEP]
        # Unit-normalise every text's vectors in one operation.
        vectors = list(
            torch.nn.functional.normalize(torch.cat([e.vectors for e in embs]), dim=-1).split(
                [e.vectors.shape[0] for e in embs]
            )
        )
        # One host-to-device copy for all weights, split back per text.
        weight_list = list(
            torch.cat([weights[t] for t in unique]).to(vectors[0].device).split([e.vectors.shape[0] for e in embs])
        )
        pairs, owner = [], []
        for seg, (hyp, group) in enumerate(zip(hyp_texts, ref_groups)):
            for ref in group:
                pairs.append((index[hyp], index[ref]))
                owner.append(seg)
        scores = greedy_match(pairs, vectors, weight_list)
        pair_empty = torch.tensor([empty[h] or empty[r] for h, r in pairs])
        scores[pair_empty] = 0.0
        owner_t = torch.tensor(owner)
        result = torch.full((len(hyps), 3), -math.inf)
        result = result.scatter_reduce(0, owner_t[:, None].expand(-1, 3), scores, reduce="amax")
        if baseline is not None:
            result = (result - baseline) / (1 - baseline)
        return result

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        values = self.prf(hyps, refs).tolist()
        return [SegmentResult(score=f, extra={"precision": p, "recall": r, "f1": f}) for p, r, f in values]

    def corpus_score(self, segments: Sequence[SegmentResult]) -> CorpusResult:
        """Means of F1 (the score), precision and recall over segments, as bert-score reports."""
        if not segments:
            return CorpusResult(math.nan)
        n = len(segments)
        extra = {key: sum(s.extra[key] for s in segments) / n for key in ("precision", "recall", "f1")}
        return CorpusResult(extra["f1"], extra)

    # ---- reproducibility ---------------------------------------------------
    def library_versions(self) -> dict[str, str]:
        import torch as _torch  # lazy: heavy optional dependency, loaded only by model metrics
        import transformers  # lazy: heavy optional dependency, loaded only by model metrics

        return {"torch": _torch.__version__.split("+")[0], "transformers": transformers.__version__}

    def signature_value(self, key: str) -> Any:
        value = self.options.get(key)
        if key == "model":
            return value or DEFAULT_EMBEDDING_MODEL
        if key == "layer":
            return self.resolved_layer()
        if key in ("baseline", "frequency_file"):
            return f"{Path(value).name}@{_file_digest(key, value)}" if value else None
        return value

    def signature_fields(self) -> dict[str, Any]:
        """Only the options that change the scores, the layer resolved, and the
        compute dtype (bf16 on CUDA by default, fp32 as bert-score on CPU):
        `bertscore|v:1|model:…|layer:6|idf:no|baseline:none|dtype:fp32|torch:…|transformers:…`."""
        fields = {key: self.signature_value(key) for key in self.signature_keys}
        fields["dtype"] = compute_dtype_name(self.options["device"])
        return fields
