"""Campaign files: the campaign.json that `export_dataset` writes, read back to create a campaign.

`create_campaign --from campaign.json` and `POST /api/campaigns/` with the same JSON both come
here, so an exported campaign re-created has the same settings. The file's JSON Schema
(`campaign_file_schema`) is generated from the protocols' option declarations; the command
`campaign_schema` prints it and docs/reference/campaign.schema.json holds a copy (a test keeps
the two equal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict

from django.core.exceptions import ValidationError
from django.db import transaction

from annotations import protocols
from annotations.allocation.adaptive import AdaptiveParams
from annotations.allocation.state import PARAM_BOUNDS
from annotations.models import Campaign
from annotations.quality.services.settings import quality_settings_update
from annotations.services.campaigns import MAX_TIMEOUT_MINUTES, campaign_create

# Keys of campaign.json that set the campaign, each passed to `campaign_create` as is.
SETTINGS_KEYS = (
    "criteria",
    "criteria_config",
    "systems",
    "redundancy",
    "instructions",
    "public_title",
    "options",
    "units_per_batch",
    "show_source",
    "show_reference",
    "assignment_timeout_minutes",
    "seed",
    "allocation",
    "allocation_params",
)
# Keys written for the record only: what happened (stopped, agreement figures, waves), or what
# belongs to another database (the prefill run's id); a re-created campaign starts afresh.
RECORDED_KEYS = (
    "counterbalancing",
    "stopped",
    "prefill",
    "agreement",
    "agreement_pairwise_derived",
    "waves",
    "intra_annotator_agreement",
    "recruitment",
)
# Quality-control settings applied after creation; gold_units is a count (the units are not in the file).
QUALITY_KEYS = ("degraded_share", "repeat_share", "degrade_kinds", "degrade_strength", "rules", "completion_codes")
SCHEMA_ID = "https://nlg-workbench.invalid/schemas/campaign.schema.json"


def _legacy_option_names() -> set[str]:
    # Exports before `options` wrote each protocol's settings at the top level (and unused ones, such
    # as a Likert campaign's tuple_size): read as options where the protocol declares them.
    return {o.name for name in protocols.names() for o in protocols.get(name).options}


def campaign_file_read(config, *, name: str | None = None, dataset: str | None = None) -> tuple[str, dict, dict]:
    """(dataset name, `campaign_create` keywords, quality-control settings) from a campaign file;
    `name` and `dataset` replace the file's. ValidationError keyed by the file's key."""
    if not isinstance(config, Mapping):
        raise ValidationError({"campaign": "A campaign file is a JSON object (campaign.json of export_dataset)."})
    known = {"name", "dataset", "protocol", "scale", "quality_control", *SETTINGS_KEYS, *RECORDED_KEYS}
    legacy = _legacy_option_names()
    unknown = sorted(str(k) for k in config if k not in known and k not in legacy)
    if unknown:
        raise ValidationError(
            {
                "campaign": f"Unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})."
            }
        )
    protocol = config.get("protocol")
    if protocol not in protocols.names():
        raise ValidationError(
            {"protocol": f"Unknown protocol {protocol!r}; expected one of {', '.join(protocols.names())}."}
        )
    kwargs = {key: config[key] for key in SETTINGS_KEYS if key in config and config[key] is not None}
    declared = {o.name for o in protocols.get(protocol).options}
    options = dict(kwargs.get("options") or {}) if isinstance(kwargs.get("options", {}), Mapping) else kwargs["options"]
    if isinstance(options, dict):
        for key in sorted(legacy & set(config)):
            if key in declared and config[key] not in (None, "", []) and key not in options:
                options[key] = config[key]
    kwargs["options"] = options
    params = kwargs.get("allocation_params")
    if isinstance(params, Mapping):
        # Knobs the workbench fixes (certainty) are written with the settable ones: read back only
        # where they differ from the fixed value (then params_clean says they cannot be set).
        fixed = asdict(AdaptiveParams())
        kwargs["allocation_params"] = {
            k: v for k, v in params.items() if k in PARAM_BOUNDS or k not in fixed or v != fixed[k]
        }
    scale = config.get("scale", [None, None])
    if not isinstance(scale, list) or len(scale) != 2:
        raise ValidationError({"scale": "scale is [minimum, maximum], or [null, null] for none."})
    kwargs["scale_min"], kwargs["scale_max"] = scale
    kwargs["name"] = name or config.get("name")
    quality = config.get("quality_control") or {}
    if not isinstance(quality, Mapping):
        raise ValidationError({"quality_control": "quality_control is an object."})
    dataset_name = dataset or config.get("dataset")
    if not isinstance(dataset_name, str) or not dataset_name:
        raise ValidationError({"dataset": "Name the dataset (the file's `dataset`, or --dataset)."})
    return dataset_name, kwargs, {k: quality[k] for k in QUALITY_KEYS if k in quality}


@transaction.atomic
def campaign_create_from_file(
    *,
    config,
    datasets,
    name: str | None = None,
    dataset: str | None = None,
    plan: str = "auto",
    progress: Callable[[int, int], None] | None = None,
) -> Campaign:
    """Create the campaign a campaign file describes, on a dataset of `datasets` (a queryset: the
    caller decides which datasets may be used), with its quality-control settings."""
    dataset_name, kwargs, quality = campaign_file_read(config, name=name, dataset=dataset)
    found = datasets.filter(name=dataset_name).first()
    if found is None:
        raise ValidationError({"dataset": f"No dataset called {dataset_name!r}."})
    campaign = campaign_create(dataset=found, protocol=config["protocol"], plan=plan, progress=progress, **kwargs)
    if quality:
        quality_settings_update(campaign=campaign, **quality)
    return campaign


def _nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


def campaign_file_schema() -> dict:
    """campaign.json's JSON Schema (draft 2020-12), with each protocol's options from its declaration."""
    names = protocols.names()
    per_protocol = []
    for name in names:
        protocol = protocols.get(name)
        per_protocol.append(
            {
                "if": {"properties": {"protocol": {"const": name}}, "required": ["protocol"]},
                "then": {
                    "properties": {
                        "options": {
                            "type": "object",
                            "description": f"{protocol.label}: its own settings.",
                            "properties": {o.name: o.schema() for o in protocol.options},
                            "additionalProperties": False,
                        }
                    }
                },
            }
        )
    criterion = {
        "type": "object",
        "required": ["name"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "question": {"type": "string", "maxLength": 1000},
            "scale_min": _nullable({"type": "number"}),
            "scale_max": _nullable({"type": "number"}),
            "widget": {"enum": ["", *Campaign.Widget.values]},
            "min_label": {"type": "string", "maxLength": 100},
            "max_label": {"type": "string", "maxLength": 100},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Campaign file (campaign.json)",
        "description": "What export_dataset writes as campaign.json and create_campaign --from (or POST "
        "/api/campaigns/) reads. Keys marked 'recorded' describe what happened and are ignored "
        "when a campaign is created from the file.",
        "type": "object",
        "required": ["protocol", "criteria"],
        "properties": {
            "name": {"type": "string", "maxLength": 200, "description": "Campaign name (--name replaces it)."},
            "dataset": {"type": "string", "description": "Dataset name (--dataset replaces it)."},
            "protocol": {"enum": names, "description": "The human-evaluation protocol."},
            "criteria": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 100},
                "minItems": 1,
                "description": "The questions, by name.",
            },
            "criteria_config": {
                "type": "array",
                "items": criterion,
                "description": "Per criterion: question, scale, widget, labels.",
            },
            "scale": {
                "type": "array",
                "prefixItems": [_nullable({"type": "number"}), _nullable({"type": "number"})],
                "minItems": 2,
                "maxItems": 2,
                "description": "[minimum, maximum] of the rating scale; [null, null] for none or the "
                "protocol's default.",
            },
            "systems": {
                "type": "array",
                "items": {"type": "string"},
                "description": "System names judged (empty: every system of the dataset).",
            },
            "redundancy": {"type": "integer", "minimum": 1, "description": "Annotators per unit (k)."},
            "instructions": {"type": "string", "description": "Markdown shown above every unit."},
            "public_title": {
                "type": "string",
                "maxLength": 200,
                "description": "The title annotators see (empty: the campaign's name).",
            },
            "options": {"type": "object", "description": "The protocol's own settings; see each protocol."},
            "units_per_batch": {"type": "integer", "minimum": 1, "maximum": 10_000},
            "show_source": {"type": "boolean"},
            "show_reference": {"type": "boolean"},
            "assignment_timeout_minutes": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MINUTES},
            "seed": {
                "type": "integer",
                "minimum": 0,
                "maximum": 2**62,
                "description": "Seed of the unit plan: the same seed plans the same units.",
            },
            "allocation": {"enum": list(Campaign.Allocation.values)},
            "allocation_params": {
                "type": "object",
                "propertyNames": {"enum": list(asdict(AdaptiveParams()))},
                "description": "Adaptive allocation's knobs (settable: "
                f"{', '.join(PARAM_BOUNDS)}; the others are recorded).",
            },
            "quality_control": {
                "type": "object",
                "description": "Quality-control settings (gold_units: recorded count).",
                "properties": {
                    "degraded_share": {"type": "number", "minimum": 0, "maximum": 0.5},
                    "repeat_share": {"type": "number", "minimum": 0, "maximum": 0.5},
                    "degrade_kinds": {"type": "array", "items": {"type": "string"}},
                    "degrade_strength": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                    "rules": {"type": "object"},
                    "completion_codes": {"type": "boolean"},
                    "gold_units": {"type": "integer", "minimum": 0},
                    "gold_unit_contents": {
                        "type": "array",
                        "description": "Recorded (the gold units' items, outputs by system, expected answers); "
                        "ignored when creating a campaign.",
                    },
                },
            },
            **{key: {"description": "Recorded; ignored when creating a campaign."} for key in RECORDED_KEYS},
        },
        "additionalProperties": False,
        "allOf": per_protocol,
    }
