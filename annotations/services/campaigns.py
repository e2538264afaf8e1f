"""Campaigns: a protocol, criteria, a scale and instructions over one dataset."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotations.models import Campaign, Dataset

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_SCALE_RE = re.compile(rf"^\s*({_NUMBER})\s*(?:-|\.\.|:|,|\s+to\s+)\s*({_NUMBER})\s*$")
CRITERION_MAX_CHARS = 100


def scale_parse(text: str) -> tuple[float, float]:
    """'1-5' -> (1, 5); negative bounds work: '-3-3' -> (-3, 3), '-3--1' -> (-3, -1).

    '1..5', '1:5' and '1,5' are accepted too.
    """
    match = _SCALE_RE.match(text or "")
    if not match:
        raise ValidationError(f"Invalid scale {text!r}: expected MIN-MAX, e.g. 1-5, 0-100 or -3-3.")
    low, high = float(match.group(1)), float(match.group(2))
    if not low < high:
        raise ValidationError(f"Invalid scale {text!r}: the minimum must be below the maximum.")
    return low, high


def criteria_parse(text: str) -> list[str]:
    """'fluency, adequacy' -> ['fluency', 'adequacy']."""
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _clean_criteria(criteria: Sequence[str]) -> list[str]:
    if isinstance(criteria, str):
        criteria = criteria_parse(criteria)
    cleaned: list[str] = []
    for criterion in criteria:
        if not isinstance(criterion, str) or not criterion.strip():
            raise ValidationError({"criteria": "Criteria must be non-empty strings."})
        criterion = criterion.strip()
        if len(criterion) > CRITERION_MAX_CHARS:
            raise ValidationError({"criteria": f"Criterion longer than {CRITERION_MAX_CHARS} characters."})
        if criterion in cleaned:
            raise ValidationError({"criteria": f"Criterion {criterion!r} is listed twice."})
        cleaned.append(criterion)
    if not cleaned:
        raise ValidationError({"criteria": "A campaign needs at least one criterion."})
    return cleaned


def _finite(value, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValidationError({field: "Must be a number."})
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationError({field: "Must be a number."}) from None
    if not math.isfinite(number):
        raise ValidationError({field: "Must be a finite number."})
    return number


@transaction.atomic
def campaign_create(
    *,
    dataset: Dataset,
    name: str,
    protocol: str,
    criteria: Sequence[str],
    scale_min: float | None = None,
    scale_max: float | None = None,
    instructions: str = "",
    redundancy: int = 1,
    anchor_value: float | None = None,
    tuple_size: int = 4,
) -> Campaign:
    """Create a campaign.

    Likert needs a scale; RankME magnitudes are unbounded by default (a scale
    may still be given); pairwise and best-worst campaigns have no scale.
    """
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "A campaign needs a name."})
    if protocol not in Campaign.Protocol.values:
        raise ValidationError(
            {"protocol": f"Unknown protocol {protocol!r}; expected one of {', '.join(Campaign.Protocol.values)}."}
        )
    criteria = _clean_criteria(criteria)
    scale_min, scale_max = _finite(scale_min, "scale_min"), _finite(scale_max, "scale_max")
    anchor_value = _finite(anchor_value, "anchor_value")
    if (scale_min is None) != (scale_max is None):
        raise ValidationError({"scale_min": "Give both ends of the scale or neither."})
    if scale_min is not None and not scale_min < scale_max:
        raise ValidationError({"scale_min": "The minimum of the scale must be below its maximum."})
    if protocol == Campaign.Protocol.LIKERT and scale_min is None:
        raise ValidationError({"scale_min": "A Likert / direct-assessment campaign needs a scale, e.g. 1-5 or 0-100."})
    if protocol in (Campaign.Protocol.PAIRWISE, Campaign.Protocol.BWS) and scale_min is not None:
        raise ValidationError({"scale_min": f"A {protocol} campaign has no rating scale."})
    if protocol == Campaign.Protocol.RANKME and anchor_value is not None and anchor_value <= 0:
        raise ValidationError({"anchor_value": "RankME magnitudes are positive: the anchor must be above 0."})
    if isinstance(redundancy, bool) or not isinstance(redundancy, int) or redundancy < 1:
        raise ValidationError({"redundancy": "Redundancy must be a whole number of at least 1."})
    if isinstance(tuple_size, bool) or not isinstance(tuple_size, int) or tuple_size < 2:
        raise ValidationError({"tuple_size": "A best-worst tuple holds at least 2 outputs."})
    if Campaign.objects.filter(name=name).exists():
        raise ValidationError({"name": f"A campaign called {name!r} already exists."})

    campaign = Campaign(
        dataset=dataset,
        name=name,
        protocol=protocol,
        criteria=criteria,
        scale_min=scale_min,
        scale_max=scale_max,
        instructions=instructions or "",
        redundancy=redundancy,
        anchor_value=anchor_value,
        tuple_size=tuple_size,
    )
    campaign.full_clean()
    try:
        with transaction.atomic():
            campaign.save()
    except IntegrityError:
        # A concurrent request took the name between our check and the insert.
        raise ValidationError({"name": f"A campaign called {name!r} already exists."}) from None
    return campaign
