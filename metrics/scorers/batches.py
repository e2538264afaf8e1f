"""Length-sorted batches of token ids and their padding, shared by the checkpoint metrics
(comet, cometkiwi, metricx): one batching, so the same inputs pad alike in every one of them.
No Django; torch is imported when a batch is padded."""

from __future__ import annotations

from collections.abc import Sequence

from metrics.scorers.loading import LazyModule

torch = LazyModule("torch")


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by length (longest first), cut into batches: little padding per batch."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    lengths = torch.tensor([len(s) for s in seqs])
    mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
    return ids.to(device), mask.to(device)
