"""Exclusion rules: thresholds on the reliability figures, set per campaign.

A rule excludes an annotator only when its figure was measured and misses the
threshold; a figure that could not be measured yet (no controls judged, too
few shared units) never excludes anyone, but the reason says so. A decision
taken by hand (with its reason) overrides the rules either way. Exclusion
never deletes a judgement: analysis and export filter by it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from annotations.quality.reliability import Figures

# Appraise's threshold for the degraded-vs-original Mann-Whitney test.
DEFAULT_MAX_P = 0.01


@dataclass(frozen=True)
class Rules:
    # Exclude when the one-sided Mann-Whitney p of degraded vs original is above this
    # (needs at least `min_degraded` judged degraded controls).
    max_p: float | None = DEFAULT_MAX_P
    min_degraded: int = 5
    min_controls_passed: float | None = None
    min_self_consistency: float | None = None
    min_median_seconds: float | None = None
    min_agreement: float | None = None
    # Off by default: on skewed scales careful annotators give the same top score
    # nearly everywhere (in the E2E crowd data, several of the most trusted workers).
    exclude_straight_lining: bool = False

    @classmethod
    def from_dict(cls, data: dict | None) -> Rules:
        """Rules from stored JSON; unknown keys are ignored, absent keys take the defaults."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in names})

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> list[str]:
        """The active rules, in words, for pages and exports."""
        out = []
        if self.max_p is not None:
            out.append(
                f"degraded controls score lower than their originals: one-sided Mann-Whitney "
                f"p <= {self.max_p:g} (from {self.min_degraded} judged controls)"
            )
        if self.min_controls_passed is not None:
            out.append(f"controls passed >= {self.min_controls_passed:.0%}")
        if self.min_self_consistency is not None:
            out.append(f"self-consistency on repeats >= {self.min_self_consistency:g}")
        if self.min_median_seconds is not None:
            out.append(f"median time per unit >= {self.min_median_seconds:g} s")
        if self.min_agreement is not None:
            out.append(f"agreement with the others >= {self.min_agreement:g}")
        if self.exclude_straight_lining:
            out.append("no straight-lining (the same answer nearly everywhere)")
        return out


@dataclass(frozen=True)
class Verdict:
    included: bool
    # Why excluded (rules missed), or why a rule could not decide yet.
    reasons: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    manual: bool = False


def verdict(figures: Figures, rules: Rules) -> Verdict:
    """Whether the rules keep this annotator, and why not."""
    reasons: list[str] = []
    pending: list[str] = []

    def below(value, threshold, label, fmt="{:.3g}"):
        if threshold is None:
            return
        if value is None:
            pending.append(f"{label}: not measurable yet")
        elif value < threshold:
            reasons.append(f"{label} {fmt.format(value)} < {fmt.format(threshold)}")

    if rules.max_p is not None and figures.degraded_judged:
        if figures.degraded_judged < rules.min_degraded or figures.mann_whitney_p is None:
            pending.append(f"degraded controls: {figures.degraded_judged} judged, {rules.min_degraded} needed")
        elif figures.mann_whitney_p > rules.max_p:
            reasons.append(
                f"degraded controls not scored lower: Mann-Whitney p = {figures.mann_whitney_p:.3g} > {rules.max_p:g}"
            )
    below(figures.controls_passed, rules.min_controls_passed, "controls passed", "{:.0%}")
    below(figures.self_consistency, rules.min_self_consistency, "self-consistency")
    below(figures.median_seconds, rules.min_median_seconds, "median seconds per unit", "{:.1f}")
    below(figures.agreement_with_others, rules.min_agreement, "agreement with the others")
    if rules.exclude_straight_lining and figures.straight_lining:
        reasons.append("straight-lining: the same answer nearly everywhere")
    return Verdict(included=not reasons, reasons=tuple(reasons), pending=tuple(pending))
