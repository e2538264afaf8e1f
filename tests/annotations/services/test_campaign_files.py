"""Campaign files and protocol options: create -> export -> create --from gives the same settings for
every registered protocol; options are checked by the protocol's declaration with errors that name
the option; the published schema is the generated one."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations import protocols
from annotations.models import Campaign
from annotations.models.quality import QualitySettings
from annotations.protocols import options as opt
from annotations.protocols.common_options import COMMON, RELATIVE, SPAN_TEXT
from annotations.services.campaign_files import campaign_file_schema
from annotations.services.campaigns import campaign_create
from annotations.services.imports import dataset_import

ROOT = Path(__file__).resolve().parents[3]


def settings_of(campaign: Campaign) -> dict:
    """Every setting a campaign file carries, as the campaign uses it, and its unit plan."""
    protocol = protocols.of(campaign)
    qs = QualitySettings.objects.filter(campaign=campaign).first() or QualitySettings(campaign=campaign)
    return {
        "protocol": campaign.protocol,
        "criteria": campaign.criteria,
        "criteria_configs": campaign.criteria_configs(),
        "scale": (campaign.scale_min, campaign.scale_max),
        "redundancy": campaign.redundancy,
        "instructions": campaign.instructions,
        "public_title": campaign.public_title,
        "units_per_batch": campaign.units_per_batch,
        "show": (campaign.show_source, campaign.show_reference),
        "timeout": campaign.assignment_timeout_minutes,
        "seed": campaign.seed,
        "allocation": campaign.allocation,
        "allocation_params": campaign.allocation_params,
        "options": {o.name: protocol.option(campaign, o.name) for o in protocol.options},
        "systems": sorted(s.name for s in campaign.systems.all())
        or sorted(campaign.dataset.systems.values_list("name", flat=True)),
        "quality": (
            qs.degraded_share,
            qs.repeat_share,
            qs.degrade_kinds,
            qs.degrade_strength,
            qs.rules,
            qs.completion_codes,
        ),
        "units": list(
            campaign.units.filter(kind="regular")
            .order_by("position")
            .values_list("item__external_id", "systems", "position")
        ),
    }


def other_value(option: opt.Option):
    """A valid value of an option other than its default, from its declaration alone."""
    if option.type in (opt.INTEGER, opt.NUMBER):
        value = option.maximum if option.maximum is not None else (option.minimum or 0) + 7
        if value == option.default:
            value = option.minimum + (0 if not option.exclusive_minimum else 1)
        return int(value) if option.type == opt.INTEGER else float(value)
    if option.type == opt.STRINGS and not option.choices:  # free texts (special answers)
        return ["[missing]"]
    if option.type == opt.STRINGS:
        return [option.choices[0]] if option.default != [option.choices[0]] else list(option.choices[:2])
    return option.default


def _own(options: dict) -> dict:
    """A protocol's own options (those of every protocol and the relative checks of the multi-output
    protocols, issue 41, left at their defaults, left out)."""
    common = {o.name: o.default for o in (*COMMON, SPAN_TEXT, *RELATIVE)}
    assert all(options[name] == common[name] for name in options if name in common)
    return {k: v for k, v in options.items() if k not in common}


def _jsonl(*objects) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode()


@pytest.fixture
def dataset(db):
    lines = [
        {
            "item": f"i{n}",
            "references": [f"the reference {n}"],
            "outputs": {s: f"{s} says {n} things" for s in ("A", "B", "C", "D", "E")},
        }
        for n in range(6)
    ]
    return dataset_import(stream=_jsonl(*lines), dataset_name="files").dataset


def _run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


@pytest.mark.parametrize("name", protocols.names())
def test_create_export_create_from_gives_the_same_settings(dataset, name, tmp_path):
    protocol = protocols.get(name)
    options = {o.name: other_value(o) for o in protocol.options}
    scale = {"scale_min": -3, "scale_max": 3} if protocol.has_scale else {}
    first = campaign_create(
        dataset=dataset,
        name=f"first-{name}",
        protocol=name,
        criteria=["q", "r"],
        instructions="Judge *carefully*.",
        public_title="A study of outputs",
        redundancy=2,
        options=options,
        systems=["A", "B", "D"],
        units_per_batch=7,
        show_reference=True,
        assignment_timeout_minutes=45,
        allocation="adaptive",
        allocation_params={"alpha": 0.1},
        **scale,
    )
    from annotations.quality.services.settings import quality_settings_update

    if not protocol.controls_refused:  # post-editing has no control units
        quality_settings_update(campaign=first, degraded_share=0.1, repeat_share=0.2, rules={"max_p": 0.01})
    assert {k: protocols.get(name).option(first, k) for k in options} == options
    out = tmp_path / "export"
    _run("export_dataset", "--campaign", first.name, "--format", "jsonl", "--out", str(out))
    written = json.loads((out / "campaign.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(campaign_file_schema()).validate(written)
    made = _run("create_campaign", "--from", str(out / "campaign.json"), "--name", f"again-{name}")
    assert made["options"] == written["options"]
    again = Campaign.objects.get(name=f"again-{name}")
    assert settings_of(again) == settings_of(first)


def test_options_errors_name_the_option(dataset):
    with pytest.raises(ValidationError) as exc:
        campaign_create(dataset=dataset, name="r", protocol="rankme", criteria=["q"], options={"tuple_size": 6})
    assert exc.value.message_dict == {"options": ["options.tuple_size: must be between 3 and 5"]}
    with pytest.raises(ValidationError) as exc:
        campaign_create(
            dataset=dataset,
            name="r",
            protocol="rankme",
            criteria=["q"],
            options={"anchor_value": 0, "severities": ["minor"]},
        )
    assert sorted(exc.value.message_dict["options"]) == [
        "options.anchor_value: must be above 0",
        "options.severities: not a setting of rankme campaigns (it has anchor_value, tuple_size, relative_checks, "
        "relative_damage and the options of every protocol)",
    ]
    with pytest.raises(ValidationError) as exc:
        campaign_create(
            dataset=dataset, name="m", protocol="mqm", criteria=["q"], options={"severities": ["minor", "critical"]}
        )
    assert exc.value.message_dict["options"][0].startswith("options.mqm_weights: no weight for the severity 'critical'")


def test_create_campaign_option_flag_and_old_flags(dataset, tmp_path):
    made = _run(
        "create_campaign",
        "--dataset",
        "files",
        "--name",
        "b",
        "--protocol",
        "bws",
        "--criteria",
        "q",
        "--option",
        "tuple_size=3",
    )
    assert _own(made["options"]) == {"tuple_size": 3}
    made = _run(
        "create_campaign",
        "--dataset",
        "files",
        "--name",
        "r",
        "--protocol",
        "rankme",
        "--criteria",
        "q",
        "--anchor",
        "50",
        "--tuple-size",
        "4",
    )
    assert _own(made["options"]) == {"anchor_value": 50.0, "tuple_size": 4}
    (tmp_path / "t.json").write_text(json.dumps([{"name": "Meaning"}]))
    made = _run(
        "create_campaign",
        "--dataset",
        "files",
        "--name",
        "m",
        "--protocol",
        "mqm",
        "--criteria",
        "q",
        "--option",
        f"typology=@{tmp_path / 't.json'}",
        "--severities",
        "minor,major",
    )
    assert made["options"]["severities"] == ["minor", "major"]
    assert [n["name"] for n in made["options"]["typology"]] == ["Meaning"]
    err = StringIO()
    with pytest.raises(CommandError):
        call_command(
            "create_campaign",
            "--dataset",
            "files",
            "--name",
            "x",
            "--protocol",
            "pairwise",
            "--criteria",
            "q",
            "--option",
            "pair_rounds=many",
            "--option",
            "tuple_size=3",
            stderr=err,
        )
    assert err.getvalue().splitlines() == [
        "options.pair_rounds (--option pair_rounds): must be a whole number, got 'many'",
        "options.tuple_size (--option tuple_size): not a setting of pairwise campaigns (it has pair_rounds, "
        "relative_checks, relative_damage and the options of every protocol)",
    ]


def test_an_older_campaign_file_with_options_at_the_top_level_is_read(dataset, tmp_path):
    # Exports before `options` wrote every protocol setting at the top level, used or not.
    old = {
        "name": "old",
        "dataset": "files",
        "protocol": "bws",
        "criteria": ["q"],
        "scale": [None, None],
        "systems": ["A", "B", "C"],
        "redundancy": 1,
        "instructions": "",
        "anchor_value": None,
        "tuple_size": 3,
        "severities": [],
        "pair_rounds": 0,
        "seed": 5,
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    made = _run("create_campaign", "--from", str(tmp_path / "old.json"))
    assert _own(made["options"]) == {"tuple_size": 3} and made["seed"] == 5


def test_a_campaign_file_with_an_unknown_key_is_refused(dataset, tmp_path):
    (tmp_path / "bad.json").write_text(
        json.dumps(
            {
                "dataset": "files",
                "protocol": "likert",
                "criteria": ["q"],
                "scale": [1, 5],
                "name": "bad",
                "redundancy_k": 3,
            }
        )
    )
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("create_campaign", "--from", str(tmp_path / "bad.json"), stderr=err)
    assert "Unknown key redundancy_k" in err.getvalue()
    assert not Campaign.objects.filter(name="bad").exists()


def test_the_published_schema_is_the_generated_one():
    out = StringIO()
    call_command("campaign_schema", stdout=out)
    published = (ROOT / "docs" / "reference" / "campaign.schema.json").read_text(encoding="utf-8")
    assert out.getvalue() == published, "run: manage.py campaign_schema --out docs/reference/campaign.schema.json"
    jsonschema.Draft202012Validator.check_schema(json.loads(published))


def test_the_options_page_lists_every_declared_option():
    page = (ROOT / "docs" / "reference" / "campaign-files.md").read_text(encoding="utf-8")
    for name in protocols.names():
        section = page.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        common = page.split("### Options of every protocol", 1)[1].split("\n### ", 1)[0]
        for option in protocols.get(name).options:
            assert f"| `{option.name}`" in (common if option.common else section), (name, option.name)
