"""SemDist (Kim et al. 2021): 1 - cosine similarity of sentence embeddings.

Sentence embeddings as sentence-transformers computes them for the model
(pooling from its 1_Pooling/config.json, mean over non-padding tokens by
default; truncation at its max_seq_length). With several references the
smallest distance counts. Lower is better; 0 = same meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from metrics.scorers.base import Metric, SegmentResult, Triple
from metrics.scorers.encoder import get_encoder
from metrics.scorers.errors import InputError
from metrics.scorers.loading import DEFAULT_EMBEDDING_MODEL, compute_dtype_name


class SemDistMetric(Metric):
    name: ClassVar[str] = "semdist"
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = False
    uses_model: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {"model": None, "batch_size": 64, "device": None}
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {"batch_size": (1, 4096)}

    def distances(self, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> list[float]:
        """1 - cos(hyp, ref), the minimum over each hypothesis' references."""
        import torch  # lazy: heavy optional dependency, loaded only by model metrics

        for i, group in enumerate(refs):
            if isinstance(group, str) or len(group) == 0:
                raise InputError(f"{self.name}: segment {i + 1} needs a non-empty list of references")
        if not hyps:
            return []
        encoder = get_encoder(self.options["model"], self.options["device"])
        ref_flat = [r for group in refs for r in group]
        unique = list(dict.fromkeys(list(hyps) + ref_flat))
        vectors = encoder.sentence_embeddings(unique, batch_size=self.options["batch_size"], normalize=True)
        index = {t: i for i, t in enumerate(unique)}
        hyp_idx = torch.tensor([index[h] for h, group in zip(hyps, refs) for _ in group], device=vectors.device)
        ref_idx = torch.tensor([index[r] for r in ref_flat], device=vectors.device)
        cosine = (vectors[hyp_idx] * vectors[ref_idx]).sum(dim=1).clamp(-1.0, 1.0)
        distance = (1.0 - cosine).cpu().tolist()
        out, pos = [], 0
        for group in refs:
            out.append(min(distance[pos : pos + len(group)]))
            pos += len(group)
        return out

    def score(
        self,
        hyps: Sequence[str],
        refs: Sequence[Sequence[str]] | None = None,
        srcs: Sequence[str] | None = None,
        data: Sequence[Sequence[Triple]] | None = None,
    ) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        return [SegmentResult(score=d) for d in self.distances(hyps, refs)]

    def library_versions(self) -> dict[str, str]:
        import torch  # lazy: heavy optional dependency, loaded only by model metrics
        import transformers  # lazy: heavy optional dependency, loaded only by model metrics

        return {"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__}

    def signature_fields(self) -> dict[str, Any]:
        """Only what changes the scores: the model and the compute dtype."""
        return {
            "model": self.options["model"] or DEFAULT_EMBEDDING_MODEL,
            "dtype": compute_dtype_name(self.options["device"]),
        }
