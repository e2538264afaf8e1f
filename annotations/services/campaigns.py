"""Campaigns: a protocol, criteria, a scale and instructions over one dataset."""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Callable, Mapping, Sequence

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotations import protocols
from annotations.allocation.state import params_clean
from annotations.models import Campaign, Dataset, System
from annotations.services.prefill import campaign_prefill, prefill_check
from annotations.services.units import (
    campaign_units_count,
    campaign_units_plan,
    campaign_units_plan_queue,
    plan_limits,
    units_cap_check,
)
from workbench.names import name_clean, taken

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_SCALE_RE = re.compile(rf"^\s*({_NUMBER})\s*(?:-|\.\.|:|,|\s+to\s+)\s*({_NUMBER})\s*$")
CRITERION_MAX_CHARS = 100
QUESTION_MAX_CHARS = 1000
LABEL_MAX_CHARS = 100
MAX_TIMEOUT_MINUTES = 7 * 24 * 60


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


def _bool(value, field: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError({field: "Must be true or false."})
    return value


def _whole(value, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError({field: f"Must be a whole number from {low} to {high}."})
    return value


def _systems_resolve(dataset: Dataset, systems) -> list[System]:
    if not systems:
        return []
    names = criteria_parse(systems) if isinstance(systems, str) else list(systems)
    found = {s.name: s for s in System.objects.filter(dataset=dataset, name__in=[str(n) for n in names])}
    unknown = [str(n) for n in names if str(n) not in found]
    if unknown:
        raise ValidationError({"systems": f"Not systems of dataset {dataset.name}: {', '.join(unknown)}."})
    return [found[str(n)] for n in dict.fromkeys(names)]


def _systems_cap_check(dataset: Dataset, chosen: list[System]) -> None:
    """At most WORKBENCH_CAMPAIGN_MAX_SYSTEMS systems (none ticked: all of the dataset's)."""
    cap = settings.WORKBENCH_CAMPAIGN_MAX_SYSTEMS
    count = len(chosen) or System.objects.filter(dataset=dataset).count()
    if count > cap:
        raise ValidationError(
            {
                "systems": f"This campaign would compare {count:,} systems; at most {cap:,} are allowed "
                "(WORKBENCH_CAMPAIGN_MAX_SYSTEMS). Tick the systems to compare."
            }
        )


def _criteria_config_clean(config, criteria: list[str], protocol: str) -> list[dict]:
    """Per-criterion settings, keyed by criterion name; unknown names are errors."""
    if not config:
        return []
    if not isinstance(config, list):
        raise ValidationError({"criteria_config": "Must be a list of objects, one per criterion."})
    cleaned = []
    for entry in config:
        if not isinstance(entry, dict) or entry.get("name") not in criteria:
            raise ValidationError({"criteria_config": "Each entry needs the `name` of one of the criteria."})
        unknown = set(entry) - {"name", "question", "scale_min", "scale_max", "widget", "min_label", "max_label"}
        if unknown:
            raise ValidationError({"criteria_config": f"Unknown keys: {', '.join(sorted(unknown))}."})
        item = {"name": entry["name"]}
        for key, limit in (
            ("question", QUESTION_MAX_CHARS),
            ("min_label", LABEL_MAX_CHARS),
            ("max_label", LABEL_MAX_CHARS),
        ):
            value = entry.get(key) or ""
            if not isinstance(value, str) or len(value) > limit:
                raise ValidationError(
                    {"criteria_config": f"{entry['name']}: {key} must be text of at most {limit} characters."}
                )
            item[key] = value.strip()
        # Null bounds on a protocol without scales say nothing (campaign.json writes them for every criterion).
        unscaled = (
            not protocols.get(protocol).has_scale and entry.get("scale_min") is None and entry.get("scale_max") is None
        )
        if ("scale_min" in entry or "scale_max" in entry) and not unscaled:
            if not protocols.get(protocol).has_scale:
                raise ValidationError(
                    {"criteria_config": f"{entry['name']}: a {protocol} campaign has no rating scale."}
                )
            low, high = (
                _finite(entry.get("scale_min"), "criteria_config"),
                _finite(entry.get("scale_max"), "criteria_config"),
            )
            if (low is None) != (high is None) or (low is not None and not low < high):
                raise ValidationError({"criteria_config": f"{entry['name']}: give a scale as minimum < maximum."})
            item["scale_min"], item["scale_max"] = low, high
        widget = entry.get("widget") or ""
        if widget and widget not in Campaign.Widget.values:
            raise ValidationError(
                {"criteria_config": f"{entry['name']}: widget must be one of {', '.join(Campaign.Widget.values)}."}
            )
        item["widget"] = widget
        cleaned.append(item)
    return cleaned


def _widgets_check(campaign: Campaign) -> None:
    protocol = protocols.of(campaign)
    if not protocol.has_scale:
        return
    for config in campaign.criteria_configs():
        low, high, widget = config["scale_min"], config["scale_max"], config["widget"]
        name = config["name"]
        protocol.criterion_scale_check(name, low, high)
        if widget in (Campaign.Widget.RADIO, Campaign.Widget.SLIDER) and low is None:
            raise ValidationError({"criteria_config": f"{name}: buttons and sliders need a bounded scale."})
        if widget == Campaign.Widget.RADIO and not (
            float(low).is_integer() and float(high).is_integer() and high - low <= 10
        ):
            raise ValidationError(
                {"criteria_config": f"{name}: buttons need a whole-number scale of at most 11 points."}
            )


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
    options: Mapping | None = None,
    systems: Sequence[str] | None = None,
    criteria_config: list[dict] | None = None,
    units_per_batch: int = 10,
    show_source: bool = True,
    show_reference: bool = False,
    assignment_timeout_minutes: int = 60,
    seed: int | None = None,
    allocation: str = Campaign.Allocation.OVERLAP_FIRST,
    allocation_params: dict | None = None,
    plan: str = "auto",
    progress: Callable[[int, int], None] | None = None,
    prefill_run: int | None = None,
    prefill_holdout: float = 0.0,
    public_title: str = "",
    **option_values,
) -> Campaign:
    """Create a campaign and plan its units.

    Likert needs a scale (campaign-wide or per criterion); ESA scores are
    0-100 unless told otherwise; RankME magnitudes are unbounded by default
    and the anchor defaults to 100; pairwise and best-worst campaigns have no
    scale. `systems` (names) restricts the campaign to some of the dataset's
    systems. Span protocols may start from a done run's spans (`prefill_run`,
    ESA^AI: annotations.services.prefill), holding back `prefill_holdout` of the
    outputs without suggestions. `allocation` is how units are handed out
    (annotations.allocation: overlap-first, spread, adaptive); `allocation_params` the adaptive knobs
    (annotations.allocation.adaptive.AdaptiveParams; defaults filled in).

    `options`: the protocol's own settings (RankME's anchor, a tuple size, severities, MQM's
    typology, ...), as its class declares them (annotations.protocols.options); checked by the
    protocol and completed with its defaults. Keyword arguments named after an option
    (`tuple_size=3`) are the same as giving it in `options`; None leaves it at its default.

    Its size is known before anything is written: above WORKBENCH_CAMPAIGN_MAX_UNITS units it is
    refused. `plan`: "auto" plans the units here up to WORKBENCH_CAMPAIGN_PLAN_ASYNC_UNITS and
    leaves bigger plans to a worker (the campaign's page shows the progress); "sync" plans here
    whatever the size, with `progress(done, total)` (the command line); "none" plans nothing (the
    set-up page's preview).
    """
    name = (name or "").strip() if isinstance(name, str) or name is None else name
    if not name:
        raise ValidationError({"name": "A campaign needs a name."})
    try:
        name = name_clean(name, "The name")
    except ValueError as exc:
        raise ValidationError({"name": str(exc)}) from None
    if protocol not in protocols.names():
        raise ValidationError(
            {"protocol": f"Unknown protocol {protocol!r}; expected one of {', '.join(protocols.names())}."}
        )
    criteria = _clean_criteria(criteria)
    scale_min, scale_max = _finite(scale_min, "scale_min"), _finite(scale_max, "scale_max")
    if (scale_min is None) != (scale_max is None):
        raise ValidationError({"scale_min": "Give both ends of the scale or neither."})
    if scale_min is not None and not scale_min < scale_max:
        raise ValidationError({"scale_min": "The minimum of the scale must be below its maximum."})
    if isinstance(redundancy, bool) or not isinstance(redundancy, int) or redundancy < 1:
        raise ValidationError({"redundancy": "Redundancy must be a whole number of at least 1."})
    chosen_protocol = protocols.get(protocol)
    found = chosen_protocol.settings_check(scale=(scale_min, scale_max))
    scale_min, scale_max = found["scale_min"], found["scale_max"]
    if options is not None and not isinstance(options, Mapping):
        raise ValidationError({"options": "options: must be an object of the protocol's settings."})
    options = chosen_protocol.options_check(
        {**(options or {}), **{k: v for k, v in option_values.items() if v is not None}}
    )
    ranked_by = options.get("adaptive_criterion")
    if ranked_by and ranked_by not in criteria:
        raise ValidationError(
            {
                "options": [
                    f"options.adaptive_criterion: {ranked_by!r} is not among the criteria ({', '.join(criteria)})"
                ]
            }
        )
    units_per_batch = _whole(units_per_batch, "units_per_batch", 1, 10_000)
    assignment_timeout_minutes = _whole(
        assignment_timeout_minutes, "assignment_timeout_minutes", 1, MAX_TIMEOUT_MINUTES
    )
    show_source, show_reference = _bool(show_source, "show_source"), _bool(show_reference, "show_reference")
    if seed is None:
        seed = secrets.randbits(62)
    seed = _whole(seed, "seed", 0, 2**62)
    allocation = allocation or Campaign.Allocation.OVERLAP_FIRST
    if allocation not in Campaign.Allocation.values:
        raise ValidationError(
            {
                "allocation": f"Unknown allocation {allocation!r}; expected one of "
                f"{', '.join(Campaign.Allocation.values)}."
            }
        )
    if allocation_params and allocation != Campaign.Allocation.ADAPTIVE:
        raise ValidationError({"allocation_params": "Adaptive parameters need allocation 'adaptive'."})
    try:
        allocation_params = params_clean(allocation_params) if allocation == Campaign.Allocation.ADAPTIVE else {}
    except ValueError as exc:
        raise ValidationError({"allocation_params": str(exc)}) from None
    chosen = _systems_resolve(dataset, systems)
    _systems_cap_check(dataset, chosen)
    prefill = None
    if prefill_run not in (None, ""):
        prefill = prefill_check(
            campaign_dataset=dataset, protocol=protocol, run_id=prefill_run, holdout=prefill_holdout
        )
    if taken(Campaign.objects.all(), "name", name):
        raise ValidationError(
            {"name": f"A campaign called {name!r} already exists (or one whose name looks the same)."}
        )

    campaign = Campaign(
        dataset=dataset,
        name=name,
        protocol=protocol,
        criteria=criteria,
        scale_min=scale_min,
        scale_max=scale_max,
        instructions=instructions or "",
        public_title=(public_title or "").strip(),
        redundancy=redundancy,
        options=options,
        criteria_config=_criteria_config_clean(criteria_config, criteria, protocol),
        units_per_batch=units_per_batch,
        show_source=show_source,
        show_reference=show_reference,
        assignment_timeout_minutes=assignment_timeout_minutes,
        seed=seed,
        allocation=allocation,
        allocation_params=allocation_params,
    )
    _widgets_check(campaign)
    campaign.full_clean()
    n_units = campaign_units_count(campaign=campaign, system_ids=[s.pk for s in chosen])
    units_cap_check(n_units)
    try:
        with transaction.atomic():
            campaign.save()
    except IntegrityError:
        # A concurrent request took the name between our check and the insert.
        raise ValidationError({"name": f"A campaign called {name!r} already exists."}) from None
    if chosen:
        campaign.systems.set(chosen)
    if prefill:
        campaign_prefill(campaign=campaign, run=prefill[0], holdout=prefill[1])
    if plan == "none":
        return campaign
    if plan == "auto" and n_units > plan_limits()[1]:
        campaign_units_plan_queue(campaign=campaign, total=n_units)
    else:
        campaign_units_plan(campaign=campaign, progress=progress)
    campaign.refresh_from_db(fields=["planned_at", "n_units", "plan_status", "plan_done", "plan_total"])
    return campaign
