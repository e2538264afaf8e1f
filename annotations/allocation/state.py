"""Adaptive parameters and verdicts to and from the JSON stored on the campaign (pure, no Django)."""

from __future__ import annotations

from dataclasses import asdict, fields

from annotations.allocation.adaptive import AdaptiveParams, Verdict

# Bounds of each knob: (type, low, high).
PARAM_BOUNDS = {
    "min_per_system": (int, 1, 100_000),
    "alpha": (float, 1e-6, 0.5),
    "stable_checks": (int, 1, 1_000),
    "check_every": (int, 1, 1_000_000),
}


def params_clean(raw) -> dict:
    """The adaptive knobs given (a dict, unknown keys refused), checked, with the defaults filled in.
    Raises ValueError with a one-line message naming the knob."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ValueError("adaptive parameters must be an object")
    unknown = sorted(set(raw) - set(PARAM_BOUNDS))
    if unknown:
        raise ValueError(f"unknown adaptive parameter {unknown[0]!r}; expected {', '.join(PARAM_BOUNDS)}")
    clean = asdict(AdaptiveParams())
    for name, value in raw.items():
        if value is None:
            continue
        kind, low, high = PARAM_BOUNDS[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            raise ValueError(f"{name} must be a{' whole' if kind is int else ''} number")
        value = kind(value)
        if not low <= value <= high or value != value:
            raise ValueError(f"{name} must be between {low:g} and {high:g}")
        clean[name] = value
    return clean


def params_from(raw) -> AdaptiveParams:
    known = {f.name for f in fields(AdaptiveParams)}
    return AdaptiveParams(**{k: v for k, v in (raw or {}).items() if k in known})


def _pairs_out(pairs) -> list[list[str]]:
    return sorted(sorted(p) for p in pairs)


def verdict_to_json(v: Verdict) -> dict:
    return {
        "ranking": list(v.ranking),
        "clusters": [list(c) for c in v.clusters],
        "decided": _pairs_out(v.decided),
        "undecided": _pairs_out(v.undecided),
        "cold": v.cold,
        "stable": v.stable,
        "stop": v.stop,
        "reason": v.reason,
        "out_of_reach": _pairs_out(v.out_of_reach),
    }


def verdict_from_json(raw) -> Verdict | None:
    if not raw:
        return None
    return Verdict(
        tuple(raw["ranking"]),
        tuple(tuple(c) for c in raw["clusters"]),
        frozenset(frozenset(p) for p in raw["decided"]),
        frozenset(frozenset(p) for p in raw["undecided"]),
        bool(raw["cold"]),
        int(raw["stable"]),
        bool(raw["stop"]),
        str(raw["reason"]),
        frozenset(frozenset(p) for p in raw.get("out_of_reach") or ()),
    )  # absent before issue 38
