"""Per-annotator reliability figures, as pure functions over plain values.

The Django side (`annotations.quality.selectors`) turns stored judgements into
the plain lists these functions take; nothing here touches the database, so
the same figures can be computed on judgements imported from anywhere.

What each figure means:

- degraded controls: the annotator's answer for a damaged copy of an output
  against their own answer for the original. Answers are put on one numeric
  scale per protocol (rating / ESA score; pairwise: 1 won, 0.5 tie, 0 lost;
  best-worst: +1 best, -1 worst, 0 neither). A control passes when the
  damaged copy scores lower than the original, or both sit at the floor of the
  scale (nothing is lower than the lowest score). The one-sided Mann-Whitney
  U test (scipy's `mannwhitneyu(degraded, original, alternative="less")`)
  asks whether the damaged copies score lower overall: Appraise's rule, an
  annotator passes at p <= 0.01. Scores are z-scored per annotator and
  criterion first (as Appraise does), so several criteria pool fairly.
- gold controls: an expected answer (score range, winner, best/worst, spans).
- self-consistency on repeats: 1 - mean |first - repeat| / scale range for
  bounded scores, mean min/max ratio for unbounded magnitudes (RankME), share
  of identical answers for choices. 1 means the same answer every time.
- time per unit: median and minimum seconds.
- agreement with the others (leave-one-out): Spearman's rho between the
  annotator's scores and the mean of the other annotators' scores on the same
  outputs; for choices (pairwise winner, best/worst) the share of answers that
  equal the others' majority.
- straight-lining: the same answer (or the same screen position) in at least
  90 % of at least 10 answers.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

STRAIGHT_LINE_SHARE = 0.9
STRAIGHT_LINE_MIN_ANSWERS = 10
MIN_SHARED_UNITS = 3


# --- degraded controls -------------------------------------------------------------


def zscores(values: Sequence[float]) -> list[float]:
    """Standard scores; a constant list (standard deviation 0) keeps unit spread, as Appraise does."""
    if not values:
        return []
    mean = statistics.fmean(values)
    sd = statistics.pstdev(values) if len(values) > 1 else 0.0
    sd = sd if sd > 0 else 1.0
    return [(v - mean) / sd for v in values]


def mann_whitney_p(degraded: Sequence[float], original: Sequence[float]) -> float | None:
    """One-sided p-value that `degraded` scores are lower than `original` scores (None if either is empty)."""
    if not degraded or not original:
        return None
    from scipy import stats  # lazy: scipy costs each web worker ~0.5 s and ~40 MB

    return float(stats.mannwhitneyu(list(degraded), list(original), alternative="less").pvalue)


@dataclass(frozen=True)
class DegradedPair:
    criterion: str
    degraded: float
    original: float
    floor: float | None = None


def degraded_test(pairs: Sequence[DegradedPair], scores_by_criterion: Mapping[str, Sequence[float]]) -> float | None:
    """Mann-Whitney p over all criteria, each criterion z-scored with the annotator's own
    mean and spread for it (`scores_by_criterion`: all their scores of that criterion)."""
    degraded, original = [], []
    for criterion in sorted({p.criterion for p in pairs}):
        population = list(scores_by_criterion.get(criterion) or [])
        mine = [p for p in pairs if p.criterion == criterion]
        population += [v for p in mine for v in (p.degraded, p.original)] if not population else []
        mean = statistics.fmean(population)
        sd = statistics.pstdev(population) if len(population) > 1 else 0.0
        sd = sd if sd > 0 else 1.0
        degraded += [(p.degraded - mean) / sd for p in mine]
        original += [(p.original - mean) / sd for p in mine]
    return mann_whitney_p(degraded, original)


# --- repeats, time, agreement, straight-lining ---------------------------------------


def self_consistency(
    pairs: Sequence[tuple], *, scale: tuple[float | None, float | None] | None = None, categorical: bool = False
) -> float | None:
    """How alike the first and the repeated answers are, from 0 (nothing alike) to 1 (identical)."""
    if not pairs:
        return None
    if categorical:
        return sum(a == b for a, b in pairs) / len(pairs)
    low, high = scale or (None, None)
    if low is not None and high is not None and high > low:
        return 1 - statistics.fmean(abs(a - b) for a, b in pairs) / (high - low)
    # Unbounded positive magnitudes: how close the two are as a ratio.
    ratios = [min(a, b) / max(a, b) if max(a, b) > 0 else 1.0 for a, b in pairs]
    return statistics.fmean(ratios)


def time_figures(milliseconds: Iterable[int | None]) -> tuple[float | None, float | None]:
    """(median, minimum) seconds per unit; (None, None) when no time was recorded."""
    values = [m / 1000 for m in milliseconds if m is not None]
    if not values:
        return None, None
    return float(statistics.median(values)), float(min(values))


def agreement_with_others(
    mine: Mapping[Hashable, float | str],
    others: Mapping[Hashable, Sequence[float | str]],
    *,
    categorical: bool = False,
    min_shared: int = MIN_SHARED_UNITS,
) -> float | None:
    """Leave-one-out agreement of one annotator with everyone else on the units they share.

    Ratings: Spearman's rho between the annotator's score and the mean of the
    others' scores (None when either side does not vary). Choices: share of
    answers equal to the others' majority (units where the others are tied
    are left out).
    """
    shared = [key for key in mine if others.get(key)]
    if categorical:
        hits = total = 0
        for key in shared:
            counts = Counter(others[key]).most_common()
            if len(counts) > 1 and counts[0][1] == counts[1][1]:
                continue
            total += 1
            hits += mine[key] == counts[0][0]
        return hits / total if total >= min_shared else None
    if len(shared) < min_shared:
        return None
    x = [float(mine[key]) for key in shared]
    y = [statistics.fmean(float(v) for v in others[key]) for key in shared]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return None
    from scipy import stats  # lazy: scipy costs each web worker ~0.5 s and ~40 MB

    rho = stats.spearmanr(x, y).statistic
    return None if math.isnan(rho) else float(rho)


def straight_lining(
    answers: Sequence[Hashable], *, share: float = STRAIGHT_LINE_SHARE, min_answers: int = STRAIGHT_LINE_MIN_ANSWERS
) -> bool | None:
    """True when one answer makes up at least `share` of the answers (None: too few to tell)."""
    if len(answers) < min_answers:
        return None
    return Counter(answers).most_common(1)[0][1] / len(answers) >= share


# --- one annotator's figures -------------------------------------------------------------


@dataclass
class Figures:
    """Everything measured for one annotator in one campaign (None: not measurable)."""

    annotator: str
    judgements: int = 0
    degraded_judged: int = 0
    degraded_passed: int = 0
    mann_whitney_p: float | None = None
    gold_judged: int = 0
    gold_passed: int = 0
    # Relative attention checks (a degraded copy beside clean outputs on one screen).
    relative_judged: int = 0
    relative_passed: int = 0
    repeats_judged: int = 0
    self_consistency: float | None = None
    median_seconds: float | None = None
    min_seconds: float | None = None
    agreement_with_others: float | None = None
    straight_lining: bool | None = None
    extra: dict = field(default_factory=dict)

    @property
    def controls_judged(self) -> int:
        return self.degraded_judged + self.gold_judged + self.relative_judged

    @property
    def controls_passed(self) -> float | None:
        """Share of degraded, gold and relative controls passed (repeats are measured by self-consistency)."""
        if not self.controls_judged:
            return None
        return (self.degraded_passed + self.gold_passed + self.relative_passed) / self.controls_judged

    def as_dict(self) -> dict:
        data = asdict(self)
        data["controls_passed"] = self.controls_passed
        data["controls_judged"] = self.controls_judged
        return data
