"""Exact minCER search with jiwer's CER as the embedded metric, strip included.

jiwer's CER strips leading and trailing whitespace of the hypothesis before
counting, and the seed's search (thibault-roux/mined `mincer.py`) hands each
corrected candidate to the embedded metric as a string, so a candidate is
worth D(S) = lev(strip(candidate_S), reference) edits. Without the strip,
D(S) = E - |S| exactly (the alignment is optimal, so every correction
removes one edit: the coherent shortcut). With it, corrections at the edges
interact: leaving a space uncorrected costs nothing once everything before
it is corrected away (`"xy abcdefghij"` -> `"abcdefghij"` needs 2
corrections, not 3), and restoring a deleted edge space gains nothing. The
stripped candidate can even align differently from the original alignment,
so no per-error formula is exact (random strings break every decomposition
tried); what follows is exact by construction.

For a segment with E errors and T the largest edit count that passes the
threshold, `min_corrections` returns the fewest corrections k (and one such
set) with D(S) <= T:

0. Closed form. When no slot within reach of either end can emit
   whitespace, the strip never removes anything: D(S) = E - |S| and
   k = E - T (about 2/3 of the HATS segments, nothing scored).
1. A lower bound. For any S, E <= lev(h, strip(c_S)) + D(S) (h = the
   hypothesis), and h turns into strip(c_S) by the corrections of S except
   that a stripped character costs one more edit when h has it (an
   uncorrected inserted or substituted space, a matched space) and one less
   when it exists only through a correction (a restored deleted space). So
   D(S) >= E - |S| - G(S), G = (stripped characters h has) - (stripped
   restored deletions). Whatever is stripped lies before the first (after
   the last) character that cannot be whitespace, and making those slots
   emit whitespace or nothing forces corrections (an inserted letter must be
   removed). Maximising G per stripped prefix/suffix length gives
   k >= k_lo = min over (prefix, suffix) of max(forced corrections, E - T - G).
2. A witness at k_lo: that prefix and suffix stripped, plus k_lo - forced
   corrections from the middle of the segment outwards, scored exactly (a
   Levenshtein distance of the stripped candidate). If it passes, k = k_lo.
   On HATS this settles all but about 1 in 60 of the remaining segments.
3. Otherwise a dynamic program over the lattice of candidates (each error
   slot: its uncorrected or corrected token) against the reference, with
   four phases for the strip (before the first non-space character: spaces
   are dropped; inside the text; a space inside the text, which a non-space
   must follow; the trailing spaces, dropped): state (phase, reference
   position, edits so far <= T) -> fewest corrections, then a backtrack for
   one minimal set. O(slots x reference length x T); past `DP_MAX_CELLS`
   it returns None and the caller falls back to its capped level search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rapidfuzz.distance import Levenshtein

if TYPE_CHECKING:
    from metrics.scorers.mined import Alignment

# Dynamic-programme table cells (slots x phases x reference positions x edit
# counts) kept for the backtrack, int32: 8M cells = 32 MB at most.
DP_MAX_CELLS = 8_000_000
# Witnesses tried at the lower bound before the dynamic programme (one
# Levenshtein distance each).
MAX_WITNESSES = 4

_START, _TEXT, _INNER, _TAIL = range(4)
_INF = np.int32(1 << 28)


@dataclass
class Found:
    k: int
    corrected: list[int]  # indices into alignment.errors, sorted
    reached: bool = True
    scored: int = 0  # candidates scored exactly (witnesses)
    method: str = "bound"  # "closed form", "bound" or "dp": which step settled k


def stripped_distance(alignment: Alignment, corrected) -> int:
    """jiwer's CER numerator for a candidate: edits between the stripped candidate and the reference."""
    return Levenshtein.distance(alignment.apply(corrected).strip(), alignment.reference)


def min_corrections(alignment: Alignment, max_edits: int) -> Found | None:
    """Fewest corrections leaving at most `max_edits` edits after jiwer's strip
    (None: the dynamic programme would exceed DP_MAX_CELLS)."""
    a, t = alignment, max_edits
    n_errors = len(a.errors)
    if t < 0:  # even the reference itself does not pass
        return Found(n_errors, list(range(n_errors)), reached=False, method="closed form")
    left, left_space = _strip_table(a, a.slots)
    right, right_space = _strip_table(a, a.slots[::-1])
    if not (left_space or right_space):
        # No slot can put whitespace at either end: the strip never removes
        # anything, D(S) = E - |S|, and any E - T corrections do.
        k = max(0, n_errors - t)
        return Found(k, list(range(k)), method="closed form")
    bounds = []
    for pl, (cost_l, gain_l) in enumerate(left):
        for pr, (cost_r, gain_r) in enumerate(right):
            if pl + pr > len(a.slots):  # without a hard slot the two walks cover everything: no overlap
                continue
            bounds.append((max(0, cost_l + cost_r, n_errors - t - gain_l - gain_r), pl, pr))
    k_lo = min(b[0] for b in bounds)
    scored = 0
    for _, pl, pr in [b for b in bounds if b[0] == k_lo][:MAX_WITNESSES]:
        corrected = _witness(a, k_lo, pl, pr)
        if corrected is None:
            continue
        scored += 1
        if stripped_distance(a, corrected) <= t:
            return Found(k_lo, corrected, scored=scored)
    found = _lattice_search(a, t)
    if found is not None:
        found.scored = scored
    return found


def interior_errors(alignment: Alignment) -> list[int]:
    """Errors from the first to the last slot that always emits a non-space
    (a matched letter, a substitution between letters): the candidate
    correcting only one of them starts and ends as the stripped hypothesis
    does, so it is worth exactly E - 1 edits, no need to score it."""
    slots = alignment.slots
    first = next((i for i, slot in enumerate(slots) if _stripped_choice(alignment, slot) is None), None)
    if first is None:
        return []
    last = next(i for i in range(len(slots) - 1, first - 1, -1) if _stripped_choice(alignment, slots[i]) is None)
    return [s for s in slots[first : last + 1] if isinstance(s, int)]


# ---- lower bound and witness ---------------------------------------------------
def _stripped_choice(a: Alignment, slot: str | int) -> tuple[int, int] | None:
    """(corrections, gain) of the best way for a slot to emit whitespace or
    nothing, None when it must emit a non-space (a matched letter, a
    substitution between letters). gain: +1 for a space h has (the strip
    saves an edit), -1 for a space that exists only through a correction."""
    if isinstance(slot, str):
        return (0, 1) if slot.isspace() else None
    e = a.errors[slot]
    hyp_space = e.hyp is not None and e.hyp.isspace()
    if e.type == "insertion":
        return (0, 1) if hyp_space else (1, 0)  # keep the space / remove the letter
    if e.type == "deletion":
        return (0, 0)  # leave it deleted (restoring a space would cost 1 and gain -1)
    if hyp_space:
        return (0, 1)
    if e.ref.isspace():
        return (1, 0)
    return None


def _strip_table(a: Alignment, slots) -> tuple[list[tuple[int, int]], bool]:
    """For p = 0, 1, ...: (corrections, gain) when slots[:p] are all stripped,
    each slot at its best choice, up to the first slot that cannot be; and
    whether any slot up to and including that one can emit whitespace."""
    table = [(0, 0)]
    cost = gain = 0
    space = False
    for slot in slots:
        space = space or any(c is not None and c.isspace() for c, _ in _options(a, slot))
        choice = _stripped_choice(a, slot)
        if choice is None:
            break
        cost, gain = cost + choice[0], gain + choice[1]
        table.append((cost, gain))
    return table, space


def _witness(a: Alignment, k: int, pl: int, pr: int) -> list[int] | None:
    """k corrections: the forced ones of the stripped prefix (pl slots) and
    suffix (pr slots), then errors of the middle, from its centre outwards
    (far from the edges, where a correction cannot change what is stripped),
    restored spaces last."""
    n_slots = len(a.slots)
    corrected = []
    for i in [*range(pl), *range(n_slots - pr, n_slots)]:
        slot = a.slots[i]
        if isinstance(slot, int) and _stripped_choice(a, slot)[0]:
            corrected.append(slot)
    middle = [s for s in a.slots[pl : n_slots - pr] if isinstance(s, int)]
    need = k - len(corrected)
    if need < 0 or need > len(middle):
        return None
    centre = (len(middle) - 1) / 2
    # Restoring a space comes last: near an edge it may be stripped again (no gain).
    order = sorted(range(len(middle)), key=lambda i: (_restores_space(a, middle[i]), abs(i - centre), i))
    corrected.extend(middle[i] for i in order[:need])
    return sorted(corrected)


def _restores_space(a: Alignment, error: int) -> bool:
    ref = a.errors[error].ref
    return ref is not None and ref.isspace()


# ---- dynamic programme -----------------------------------------------------------
def _options(a: Alignment, slot: str | int) -> list[tuple[str | None, int]]:
    """(emitted character or None, corrections) of each choice of a slot."""
    if isinstance(slot, str):
        return [(slot, 0)]
    e = a.errors[slot]
    return [(e.hyp, 0), (e.ref, 1)]


def _shift_edits(x: np.ndarray) -> np.ndarray:
    """One more edit: value at (.., d) moves to (.., d + 1)."""
    out = np.full_like(x, _INF)
    out[..., 1:] = x[..., :-1]
    return out


def _close_deletions(x: np.ndarray, t: int) -> np.ndarray:
    """Reference characters deleted (one edit each) between emissions: (j, d)
    -> (j + s, d + s) for every s, by doubling shifts (s < 2^steps > t)."""
    s = 1
    while s <= t and s < x.shape[-2]:
        shifted = np.full_like(x, _INF)
        shifted[..., s:, s:] = x[..., :-s, :-s]
        np.minimum(x, shifted, out=x)
        s *= 2
    return x


def _emit(src: np.ndarray, code: int, ref_codes: np.ndarray) -> np.ndarray:
    """An emitted character aligned: against the next reference character
    (match, or substitution: one edit) or inserted (one edit)."""
    out = np.full_like(src, _INF)
    same = (ref_codes == code)[:, None]
    out[1:, :] = np.where(same, src[:-1, :], _shift_edits(src[:-1, :]))
    np.minimum(out, _shift_edits(src), out=out)
    return out


def _step(a: Alignment, slot: str | int, prev: np.ndarray, ref_codes: np.ndarray) -> np.ndarray:
    """The table after one more slot, before deletions are closed."""
    new = np.full_like(prev, _INF)
    for char, cost in _options(a, slot):
        v = prev + cost if cost else prev
        if char is None:
            np.minimum(new, v, out=new)
        elif char.isspace():
            np.minimum(new[_START], v[_START], out=new[_START])  # leading: stripped
            np.minimum(new[_TAIL], np.minimum(v[_TAIL], v[_TEXT]), out=new[_TAIL])  # trailing: stripped
            np.minimum(new[_INNER], _emit(np.minimum(v[_TEXT], v[_INNER]), ord(char), ref_codes), out=new[_INNER])
        else:
            src = np.minimum(np.minimum(v[_START], v[_TEXT]), v[_INNER])
            np.minimum(new[_TEXT], _emit(src, ord(char), ref_codes), out=new[_TEXT])
    np.minimum(new, _INF, out=new)
    return new


def _lattice_search(a: Alignment, t: int) -> Found | None:
    ref = a.ref_tokens
    n = len(ref)
    if (len(a.slots) + 1) * 4 * (n + 1) * (t + 1) > DP_MAX_CELLS:
        return None
    ref_codes = np.array([ord(c) for c in ref], dtype=np.int64)
    table = np.full((4, n + 1, t + 1), _INF, dtype=np.int32)
    table[_START, 0, 0] = 0
    layers = [_close_deletions(table, t)]
    for slot in a.slots:
        layers.append(_close_deletions(_step(a, slot, layers[-1], ref_codes), t))
    # A candidate ends anywhere but inside the text after an aligned space
    # (that space would have been trailing, hence stripped).
    final = layers[-1][[_START, _TEXT, _TAIL], n, :]
    k = int(final.min())
    phase_i, edits = np.unravel_index(int(final.argmin()), final.shape)
    corrected = _backtrack(a, layers, ref_codes, (_START, _TEXT, _TAIL)[phase_i], n, int(edits), k, t)
    return Found(k, corrected, method="dp")


def _sources(phase: int, char: str | None, j: int, d: int, ref: list[str]) -> list[tuple[int, int, int]]:
    """States (phase, j, d) one choice of a slot can come from (the inverse of `_step`)."""
    if char is None:
        return [(phase, j, d)]

    def aligned(phases):
        moves = []
        for p in phases:
            if j >= 1:
                moves.append((p, j - 1, d - (char != ref[j - 1])))
            moves.append((p, j, d - 1))
        return moves

    if char.isspace():
        return {
            _START: [(_START, j, d)],
            _TAIL: [(_TAIL, j, d), (_TEXT, j, d)],
            _INNER: aligned((_TEXT, _INNER)),
        }.get(phase, [])
    return aligned((_START, _TEXT, _INNER)) if phase == _TEXT else []


def _backtrack(a: Alignment, layers, ref_codes, phase: int, j: int, d: int, value: int, t: int) -> list[int]:
    corrected = []
    for i in range(len(a.slots), 0, -1):
        slot, prev = a.slots[i - 1], layers[i - 1]
        before = _step(a, slot, prev, ref_codes)
        while before[phase, j, d] != value:  # undo deletions closed after this slot
            j, d = j - 1, d - 1
        for char, cost in _options(a, slot):
            match = next(
                (
                    (p, sj, sd)
                    for p, sj, sd in _sources(phase, char, j, d, a.ref_tokens)
                    if 0 <= sd <= t and prev[p, sj, sd] + cost == value
                ),
                None,
            )
            if match is not None:
                if cost:
                    corrected.append(slot)
                phase, j, d = match
                value -= cost
                break
        else:  # pragma: no cover - the tables are built by the same transitions
            raise AssertionError("minCER backtrack lost its path")
    return sorted(corrected)
