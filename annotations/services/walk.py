"""Each annotator's own order of a campaign's units: a keyed permutation of
the units' planned positions, computed step by step.

Step s of the annotator with seed `seed` is the unit at position
`walk_position(seed, n, s)`, for s = 0 .. n-1 (n regular units, positions
0 .. n-1). The permutation is a Feistel network keyed by the seed, restricted
to 0 .. n-1 by cycle walking: a bijection for every n, independent-looking
for different seeds, and computed for the next few steps without touching the
other units. That is what lets the engine pick an annotator's next unit with a
handful of index lookups instead of ranking every free unit of the campaign
(`annotations.services.assignments`).
"""

from __future__ import annotations

from functools import lru_cache

_MASK64 = (1 << 64) - 1
# Rounds of the network: 4 make a pseudo-random permutation (Luby-Rackoff);
# a few more cost microseconds and mix small domains better.
ROUNDS = 6


def _mix(x: int) -> int:
    """splitmix64's finaliser: a 64-bit bijection with full avalanche."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


@lru_cache(maxsize=4096)
def _network(seed: int, n: int) -> tuple[int, int, tuple[int, ...]]:
    """(bits of a half, mask of a half, round keys) for a walk over n positions."""
    half = max(1, ((n - 1).bit_length() + 1) // 2)
    keys = tuple(_mix((seed + 0x9E3779B97F4A7C15 * (r + 1)) & _MASK64) for r in range(ROUNDS))
    return half, (1 << half) - 1, keys


def walk_position(seed: int, n: int, step: int) -> int:
    """The position the annotator with `seed` reaches at `step` (0 <= step < n)."""
    if not 0 <= step < n:
        raise ValueError(f"step {step} outside 0..{n - 1}")
    half, mask, keys = _network(seed, n)
    x = step
    while True:  # cycle walking: ends, since the cycle through `step` (< n) comes back to it
        left, right = x >> half, x & mask
        for key in keys:
            left, right = right, left ^ (_mix(right ^ key) & mask)
        x = (left << half) | right
        if x < n:
            return x


def walk_positions(seed: int, n: int, start: int, count: int) -> list[tuple[int, int]]:
    """(step, position) for the steps start .. start+count-1 that exist."""
    return [(step, walk_position(seed, n, step)) for step in range(max(0, start), min(n, start + count))]
