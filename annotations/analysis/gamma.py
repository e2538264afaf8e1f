"""The gamma agreement (Mathet, Widlöcher & Métivier 2015) as pygamma-agreement 0.5.9 computes it, and
factgenie's use of it for span agreement (ufal/factgenie, factgenie/iaa/gamma.py, commit 5258f59b352e).

Without pygamma's dependencies (cvxpy, cvxopt, numba, pyannote): numpy and scipy only.

* A continuum: per annotator, the set of its units (start, end, category), sorted by (start, end,
  category); equal units collapse, as in pygamma's SortedSet; zero-length units are left out.
* Dissimilarity: pygamma's `CombinedCategoricalDissimilarity` (alpha * positional + beta * categorical),
  positional = ((|s1 - s2| + |e1 - e2|) / (d1 + d2))² · delta_empty, categorical = delta_empty
  when categories differ. Computed in float32 in the same order of operations as pygamma's numba
  code, so that the disorders are the same floats.
* Best alignment: every unitary alignment (one unit or the empty unit per annotator) whose summed
  pairwise dissimilarity is at most C(n,2) · delta_empty · n (the paper's section 5.1.1 filter),
  enumerated in pygamma's order (the first annotator's index fastest; the all-empty one dropped);
  the set of them minimising total disorder with every unit in exactly one (hard gamma) or in at
  least one (soft gamma: a unit may align with several) is a 0/1 linear program, solved exactly by
  `scipy.optimize.milp` (HiGHS; its relaxation first) where pygamma calls GLPK through cvxpy; with
  two annotators (factgenie's reference group and metric) as the equivalent bipartite matching
  (`linear_sum_assignment`), as exact and much faster. Disorder = sum of the chosen ones (float32,
  in enumeration order) / average units per annotator.
* Chance disorder: pygamma's default `StatisticalContinuumSampler` (the one factgenie gets: it
  passes no sampler): per annotator a normal number of units, normal gaps and durations, categories
  by their frequency, all from the reference continuum's statistics, drawn from numpy's legacy
  generator in pygamma's order; expected disorder = mean of `n_samples` (30) sampled continua's best
  disorders. gamma = 1 - observed / expected (1 when observed is 0), in float32 as there.

Seeded as factgenie seeds it (`np.random.seed(42)` before each continuum) the figures equal
pygamma's (tests/annotations/analysis/test_gamma.py against bench/reference/gamma_expected.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np
from scipy.optimize import LinearConstraint, linear_sum_assignment, linprog, milp
from scipy.sparse import csc_array

FACTGENIE_SEED = 42
N_SAMPLES = 30
SEGMENT_PRECISION = 1e-6  # pyannote.core's: shorter sampled segments are drawn again
MAX_ALIGNMENTS = 2_000_000  # candidate unitary alignments one continuum may have (3+ annotators)

GAMMA_LABEL = (
    "factgenie span gamma (soft gamma agreement, Mathet et al. 2015, of the metric's spans with the "
    "annotators' as pygamma-agreement computes it: alpha 1, beta 1, delta_empty 1, severity as the "
    "category, 30 sampled continua, seed 42; mean over outputs both marked)"
)

Unit = tuple[float, float, str]


@dataclass(frozen=True)
class GammaResult:
    gamma: float
    observed: float
    expected: float
    chance: tuple[float, ...]


def continuum(annotations: dict[str, list[Unit]]) -> dict[str, list[Unit]]:
    """{annotator: units} -> pygamma's continuum: sorted annotators, each with its sorted set of
    non-empty units."""
    out = {}
    for annotator in sorted(annotations):
        units = {(float(s), float(e), str(c)) for s, e, c in annotations[annotator] if float(e) - float(s) != 0}
        out[annotator] = sorted(units)
    return out


def _arrays(cont: dict[str, list[Unit]]) -> list[np.ndarray]:
    """pygamma's unit arrays: float32 start, end, duration (end - start in float64) and category index."""
    categories = sorted({u[2] for units in cont.values() for u in units})
    index = {c: i for i, c in enumerate(categories)}
    arrays = []
    for units in cont.values():
        a = np.empty((len(units), 4), dtype=np.float32)
        for i, (s, e, c) in enumerate(units):
            a[i] = (s, e, e - s, index[c])
        arrays.append(a)
    return arrays


def _pair_matrix(a: np.ndarray, b: np.ndarray, alpha: float, beta: float, delta_empty: np.float32) -> np.ndarray:
    """Dissimilarity of every unit of a with every unit of b, plus a row and column for the empty unit."""
    sa, ea, da, ca = (a[:, k][:, None] for k in range(4))
    sb, eb, db, cb = (b[:, k][None, :] for k in range(4))
    dist = (np.abs(sa - sb) + np.abs(ea - eb)) / (da + db)  # float32 throughout, as the numba code
    pos = dist * dist * delta_empty
    cat = np.where(ca == cb, 0.0, 1.0) * np.float64(delta_empty)
    d = (alpha * pos.astype(np.float64) + beta * cat).astype(np.float32)
    m = np.full((len(a) + 1, len(b) + 1), delta_empty, dtype=np.float32)
    m[: len(a), : len(b)] = d
    return m


def valid_alignments(
    cont: dict[str, list[Unit]], alpha: float = 1.0, beta: float = 1.0, delta_empty: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """(disorders float32, alignments: one unit index per annotator, the annotator's unit count for
    the empty unit), in pygamma's enumeration order and with its filter."""
    arrays = _arrays(cont)
    n = len(arrays)
    sizes = [len(a) for a in arrays]
    total = int(np.prod([s + 1 for s in sizes]))
    if total > MAX_ALIGNMENTS:
        raise ValueError(f"{total} candidate unitary alignments: too many to solve")
    de = np.float32(delta_empty)
    # The first annotator's index varies fastest, as pygamma's iter_tuples.
    grid = np.array(list(product(*[range(s + 1) for s in reversed(sizes)])), dtype=np.int64).reshape(-1, n)[:, ::-1]
    disorder = np.zeros(len(grid), dtype=np.float64)
    for a in range(n):
        for b in range(a):
            disorder += _pair_matrix(arrays[a], arrays[b], alpha, beta, de)[grid[:, a], grid[:, b]]
    c2n = n * (n - 1) // 2
    keep = np.flatnonzero(disorder <= c2n * np.float64(de) * n)[:-1]  # the last one is all-empty
    return disorder[keep].astype(np.float32) / np.float32(c2n), grid[keep]


def best_disorder(
    cont: dict[str, list[Unit]],
    *,
    soft: bool,
    alpha: float = 1.0,
    beta: float = 1.0,
    delta_empty: float = 1.0,
    program: bool = False,
) -> np.float32:
    """The disorder of the best alignment (pygamma's get_best_alignment, or get_best_soft_alignment):
    two annotators by a matching, more (or `program`) by the 0/1 linear program."""
    if len(cont) == 2 and not program:
        return _best_disorder_two(cont, soft=soft, alpha=alpha, beta=beta, delta_empty=delta_empty)
    disorders, alignments = valid_alignments(cont, alpha, beta, delta_empty)
    sizes = [len(u) for u in cont.values()]
    offsets = np.cumsum([0] + sizes[:-1])
    rows, cols = [], []
    for k, size in enumerate(sizes):
        real = np.flatnonzero(alignments[:, k] != size)
        rows.append(offsets[k] + alignments[real, k])
        cols.append(real)
    n_units = sum(sizes)
    A = csc_array(
        (np.ones(sum(len(r) for r in rows)), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_units, len(disorders)),
    )
    x = _solve(disorders.astype(np.float64), A, soft)
    chosen = disorders[x > 0.9]
    return np.sum(chosen) / (n_units / len(cont))


def _best_disorder_two(
    cont: dict[str, list[Unit]], *, soft: bool, alpha: float, beta: float, delta_empty: float
) -> np.float32:
    """Two annotators: the same 0/1 program as a bipartite matching, solved exactly by
    `linear_sum_assignment` (a hundred times faster than a linear program per sampled continuum).
    Hard: every unit aligned with one of the other side's (weight w) or with the empty unit
    (delta_empty): min = sum of delta_empty + min over matchings of (w - 2 delta_empty). Soft (an edge
    cover, a unit may align with several): with m(v) the cheapest option covering v, min = sum m(v) +
    min over matchings of (w - m(u) - m(v)) (Schrijver, Combinatorial Optimization, 19.3); the
    vertices left unmatched take their cheapest option. Alignments above pygamma's filter
    (C(2,2) * delta_empty * 2) are not candidates. The chosen alignments' disorders are then summed
    in float32 in pygamma's enumeration order, as there."""
    a, b = _arrays(cont)
    de = np.float32(delta_empty)
    full = _pair_matrix(b, a, alpha, beta, de)  # rows: the second annotator's units, as pygamma's
    w = full[: len(b), : len(a)].T.astype(np.float64)  # [unit of the first, unit of the second]
    valid = w <= 2 * np.float64(de)
    empty = np.float64(de)
    if soft:
        m_a = np.minimum(empty, np.where(valid, w, np.inf).min(axis=1, initial=np.inf))
        m_b = np.minimum(empty, np.where(valid, w, np.inf).min(axis=0, initial=np.inf))
    else:
        m_a, m_b = np.full(len(a), empty), np.full(len(b), empty)
    gain = np.where(valid, np.minimum(0.0, w - m_a[:, None] - m_b[None, :]), 0.0)
    rows, cols = linear_sum_assignment(gain)
    chosen: set[tuple[int, int]] = set()
    covered_a, covered_b = set(), set()
    for i, j in zip(rows, cols):
        if gain[i, j] < 0:
            chosen.add((i, j))
            covered_a.add(i)
            covered_b.add(j)
    na, nb = len(a), len(b)
    for i in set(range(na)) - covered_a:
        j = _cheapest(w[i], valid[i], empty) if soft else None
        chosen.add((i, nb if j is None else j))
    for j in set(range(nb)) - covered_b:
        i = _cheapest(w[:, j], valid[:, j], empty) if soft else None
        chosen.add((na if i is None else i, j))
    order = sorted(chosen, key=lambda t: (t[1], t[0]))  # the first annotator's index varies fastest
    values = np.array([full[j, i] for i, j in order], dtype=np.float32)
    return np.sum(values) / ((na + nb) / 2)


def _cheapest(weights: np.ndarray, valid: np.ndarray, empty: float) -> int | None:
    """The cheapest alignment covering a unit: the index of a unit of the other side, or None for the
    empty unit (which pygamma enumerates after every real one: it wins ties only against none)."""
    candidates = np.where(valid, weights, np.inf)
    if not len(candidates) or candidates.min() > empty:
        return None
    return int(np.argmin(candidates))


def _solve(cost: np.ndarray, A: csc_array, soft: bool) -> np.ndarray:
    """The 0/1 program min cost·x, A x = 1 (hard) or A x >= 1 (soft). Its linear relaxation first
    (simplex: a vertex): with two annotators A is the incidence matrix of a bipartite graph, totally
    unimodular, so that vertex is integral; `milp` where it is not (three annotators or more)."""
    ones = np.ones(A.shape[0])
    if soft:
        lp = linprog(cost, A_ub=-A, b_ub=-ones, bounds=(0, 1), method="highs-ds")
    else:
        lp = linprog(cost, A_eq=A, b_eq=ones, bounds=(0, 1), method="highs-ds")
    if lp.x is not None and np.all(np.minimum(np.abs(lp.x), np.abs(lp.x - 1)) < 1e-9):
        return lp.x
    res = milp(
        cost,
        constraints=LinearConstraint(A, lb=1, ub=np.inf if soft else 1),
        integrality=np.ones(len(cost)),
        bounds=(0, 1),
        options={"mip_rel_gap": 0},
    )
    if res.x is None:
        raise ValueError(f"no alignment found: {res.message}")
    return res.x


class StatisticalSampler:
    """pygamma's StatisticalContinuumSampler, initialised on a reference continuum."""

    def __init__(self, cont: dict[str, list[Unit]]):
        self.annotators = list(cont)
        # pygamma appends the gaps within annotators first, then every annotator's first start > 0.
        gaps = [0.0] + [g for units in cont.values() for g in (u[0] - p[1] for p, u in zip(units, units[1:]))]
        gaps += [units[0][0] for units in cont.values() if units and units[0][0] > 0]
        self.avg_gap, self.std_gap = float(np.mean(gaps)), float(np.std(gaps))
        durations = [e - s for units in cont.values() for s, e, _ in units]
        self.avg_duration, self.std_duration = float(np.mean(durations)), float(np.std(durations))
        categories = sorted({c for units in cont.values() for _, _, c in units})
        self.categories = np.array(categories)
        weights = np.zeros(len(categories))
        for units in cont.values():
            for _, _, c in units:
                weights[categories.index(c)] += 1
        self.weights = weights / sum(len(u) for u in cont.values())
        counts = [len(u) for u in cont.values()]
        self.avg_units, self.std_units = float(np.mean(counts)), float(np.std(counts))

    def sample(self, rng: np.random.RandomState) -> dict[str, list[Unit]]:
        out: dict[str, set] = {}
        for annotator in self.annotators:
            out[annotator] = set()
            last = 0
            count = abs(int(rng.normal(self.avg_units, self.std_units)))
            if not any(out.values()):
                count = max(1, count)
            for _ in range(count):
                start = last + rng.normal(self.avg_gap, self.std_gap)
                end = start + abs(rng.normal(self.avg_duration, self.std_duration))
                while end - start < SEGMENT_PRECISION:
                    end = start + abs(rng.normal(self.avg_duration, self.std_duration))
                category = rng.choice(self.categories, p=self.weights)
                out[annotator].add((float(start), float(end), str(category)))
                last = end
        return {a: sorted(u) for a, u in out.items()}


def gamma(
    annotations: dict[str, list[Unit]],
    *,
    soft: bool = True,
    alpha: float = 1.0,
    beta: float = 1.0,
    delta_empty: float = 1.0,
    n_samples: int = N_SAMPLES,
    seed: int = FACTGENIE_SEED,
) -> GammaResult:
    """pygamma's `Continuum.compute_gamma(CombinedCategoricalDissimilarity(alpha, beta, delta_empty),
    soft=soft)` after `np.random.seed(seed)`: {annotator: [(start, end, category)]} (at least two
    annotators with units) -> gamma, observed and expected disorder."""
    cont = continuum(annotations)
    if len(cont) < 2 or not any(cont.values()):
        raise ValueError("gamma needs at least two annotators and one unit")
    observed = best_disorder(cont, soft=soft, alpha=alpha, beta=beta, delta_empty=delta_empty)
    sampler = StatisticalSampler(cont)
    rng = np.random.RandomState(seed)
    samples = [sampler.sample(rng) for _ in range(n_samples)]  # drawn first, in order, as pygamma
    chance = np.array(
        [best_disorder(s, soft=soft, alpha=alpha, beta=beta, delta_empty=delta_empty) for s in samples],
        dtype=np.float32,
    )
    expected = float(np.mean(chance))
    value = 1 if observed == 0 else 1 - observed / expected
    return GammaResult(
        gamma=float(value), observed=float(observed), expected=expected, chance=tuple(float(c) for c in chance)
    )


def output_gamma(reference: list[dict], hypothesis: list[dict]) -> dict:
    """One output's factgenie gamma: the reference spans (every annotator's, one annotator group) and
    the hypothesis spans as the two annotators of a continuum (category: the severity; zero-length
    spans and spans without a position left out), soft gamma with alpha = beta = delta_empty = 1 after
    seeding with 42. Where a side has no span there is no gamma but factgenie's s_empty,
    1 / (1 + the other side's spans)."""
    sides = {"human": _units(reference), "metric": _units(hypothesis)}
    if all(sides.values()):
        return {"gamma": gamma(sides).gamma, "s_empty": None}
    return {"gamma": None, "s_empty": 1 / (1 + sum(len(u) for u in sides.values()))}


def factgenie_gamma(per_output: list[dict]) -> dict:
    """`output_gamma` of each output -> factgenie's means: gamma over the outputs where both sides
    marked a span, s_empty over the others. factgenie rounds both to three decimals; these are not
    rounded."""
    gammas = [o["gamma"] for o in per_output if o["gamma"] is not None]
    s_empty = [o["s_empty"] for o in per_output if o["s_empty"] is not None]
    return {
        "gamma": float(np.mean(gammas)) if gammas else None,
        "outputs": len(gammas),
        "s_empty": float(np.mean(s_empty)) if s_empty else None,
        "s_empty_outputs": len(s_empty),
    }


def _units(spans: list[dict]) -> list[Unit]:
    return [
        (int(s["start"]), int(s["end"]), str(s.get("severity") or ""))
        for s in spans or []
        if not s.get("missing") and s.get("start") is not None and s.get("end") is not None
        if int(s["start"]) != int(s["end"])
    ]
