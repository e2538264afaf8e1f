"""How far the annotators agree, per unit and per item (defined in the README's export section).

A unit's consensus is its protocol's (`Protocol.unit_consensus`):

- ratings and ESA scores on a bounded scale [lo, hi]: 1 - s / ((hi - lo) / 2), where s is the
  population standard deviation of the unit's scores (1 = everyone gave the same score, 0 = half
  at each end of the scale); unbounded magnitudes (RankME without a scale) have none;
- pairwise: the majority share (the share of the most frequent answer a / b / tie), as
  `correlate --min-consensus`;
- best-worst: the mean of the majority shares of "best" and of "worst".

A unit judged by fewer than two annotators has no consensus (None). An item's consensus is the
mean over its units and criteria that have one.
"""

from __future__ import annotations

from collections import defaultdict

from annotations.protocols import JudgementRow, Protocol


def item_consensus(protocol: Protocol, rows: list[JudgementRow], scales: dict[str, tuple]) -> float | None:
    """Mean consensus of the item's (unit, criterion) groups that have one."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in rows:
        groups[(protocol.unit_key(r), r.criterion)].append(protocol.consensus_value(r))
    return mean_or_none(
        [
            protocol.unit_consensus(values, scales.get(criterion, (None, None)))
            for (_, criterion), values in groups.items()
        ]
    )


def mean_or_none(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None
