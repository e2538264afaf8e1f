"""Quality settings of a campaign: shares of controls, kinds of damage, rules, codes."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotations import protocols
from annotations.models import Campaign
from annotations.models.quality import QualitySettings
from annotations.quality.degrade import KINDS
from annotations.quality.rules import Rules

SETTINGS_FIELDS = ("degraded_share", "repeat_share", "degrade_kinds", "degrade_strength", "rules", "completion_codes")


# --- settings ------------------------------------------------------------------------


def _number(value, name: str, low: float, high: float, *, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError({name: f"{name} must be a number, got {value!r}"})
    if value < low or value > high or (low_open and value == low):
        raise ValidationError(
            {name: f"{name} must be {'above' if low_open else 'at least'} {low:g} and at most {high:g}, got {value:g}"}
        )
    return float(value)


def _rules_clean(rules) -> dict:
    if not isinstance(rules, dict):
        raise ValidationError({"rules": "rules must be an object"})
    allowed = set(Rules().as_dict())
    unknown = set(rules) - allowed
    if unknown:
        raise ValidationError(
            {"rules": f"unknown rule {', '.join(sorted(unknown))} (known: {', '.join(sorted(allowed))})"}
        )
    clean = {}
    for key, value in rules.items():
        if key == "exclude_straight_lining":
            if not isinstance(value, bool):
                raise ValidationError({"rules": f"{key} must be true or false"})
        elif key == "min_degraded":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError({"rules": f"{key} must be a whole number >= 1"})
        elif value is not None:
            limits = {
                "max_p": (0, 1),
                "min_controls_passed": (0, 1),
                "min_self_consistency": (0, 1),
                "min_median_seconds": (0, 86_400),
                "min_agreement": (-1, 1),
            }[key]
            value = _number(value, key, *limits)
        clean[key] = value
    return clean


def quality_settings_names_check(changes) -> None:
    """Only known setting names (a request body may name anything, `campaign` included)."""
    unknown = set(changes) - set(SETTINGS_FIELDS)
    if unknown:
        shown = ", ".join(sorted(str(k)[:40] for k in unknown)[:10])
        raise ValidationError(f"unknown setting {shown} (known: {', '.join(SETTINGS_FIELDS)})")


@transaction.atomic
def quality_settings_update(*, campaign: Campaign, **changes) -> QualitySettings:
    """Change a campaign's quality settings; unknown or out-of-range values are refused."""
    quality_settings_names_check(changes)
    refused = protocols.of(campaign).controls_refusal(campaign)
    if refused:
        for name in ("degraded_share", "repeat_share"):
            if changes.get(name):
                raise ValidationError({name: refused})
    current = QualitySettings.objects.select_for_update().filter(campaign=campaign).first()
    current = current or QualitySettings(campaign=campaign)
    for name in ("degraded_share", "repeat_share"):
        if name in changes:
            setattr(current, name, _number(changes[name], name, 0, 0.5))
    if "degrade_strength" in changes:
        current.degrade_strength = _number(changes["degrade_strength"], "degrade_strength", 0, 1, low_open=True)
    if "degrade_kinds" in changes:
        kinds = changes["degrade_kinds"]
        if not isinstance(kinds, list) or any(k not in KINDS for k in kinds):
            raise ValidationError(
                {"degrade_kinds": f"degrade_kinds must list some of {', '.join(KINDS)} (none: every kind that applies)"}
            )
        current.degrade_kinds = list(dict.fromkeys(kinds))
    if "rules" in changes:
        current.rules = {**(current.rules or {}), **_rules_clean(changes["rules"])}
    if "completion_codes" in changes:
        if not isinstance(changes["completion_codes"], bool):
            raise ValidationError({"completion_codes": "completion_codes must be true or false"})
        current.completion_codes = changes["completion_codes"]
    current.full_clean(exclude=["campaign"], validate_unique=False)
    current.save()
    return current
