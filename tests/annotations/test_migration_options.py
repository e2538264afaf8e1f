"""Migration 0022 moves each campaign's protocol settings from their columns into
`Campaign.options`, without loss, and back."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotations", "0021_campaign_public_title")]
AFTER = [("annotations", "0022_campaign_options")]


@pytest.fixture
def back_to_the_latest_schema():
    yield
    # Whatever happened, the later tests get today's schema.
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_columns_move_into_options_and_back(back_to_the_latest_schema):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Project, Dataset, Campaign = (apps.get_model("annotations", m) for m in ("Project", "Dataset", "Campaign"))
    dataset = Dataset.objects.create(name="d", project=Project.objects.create(name="p"))
    tree = [{"name": "Meaning", "key": "m", "children": [{"name": "Wrong"}]}]
    rows = {
        "likert": dict(scale_min=1, scale_max=5, tuple_size=4, anchor_value=None),
        "rankme": dict(anchor_value=50.0, tuple_size=5),
        "pairwise": dict(pair_rounds=3),
        "bws": dict(tuple_size=2),
        "esa": dict(severities=["minor", "major", "critical"], scale_min=0, scale_max=100),
        "cesa": dict(severities=["major"], tuple_size=2),
        "mqm": dict(severities=["neutral", "major"], typology=tree, mqm_weights="Major:7 Neutral:0"),
        "mqm-defaults": dict(protocol="mqm"),
    }
    for name, fields in rows.items():
        Campaign.objects.create(
            dataset=dataset, name=name, protocol=fields.pop("protocol", name), criteria=["q"], **fields
        )

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    options = dict(apps.get_model("annotations", "Campaign").objects.values_list("name", "options"))
    assert options == {
        "likert": {},  # its tuple_size column held the unused default
        "rankme": {"anchor_value": 50.0, "tuple_size": 5},
        "pairwise": {"pair_rounds": 3},
        "bws": {"tuple_size": 2},
        "esa": {"severities": ["minor", "major", "critical"]},
        "cesa": {"severities": ["major"], "tuple_size": 2},
        "mqm": {"severities": ["neutral", "major"], "typology": tree, "mqm_weights": "Major:7 Neutral:0"},
        "mqm-defaults": {},  # empty columns meant the defaults; the protocol fills them in when read
    }

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    back = {c.name: c for c in apps.get_model("annotations", "Campaign").objects.all()}
    assert (back["rankme"].anchor_value, back["rankme"].tuple_size) == (50.0, 5)
    assert back["mqm"].typology == tree and back["mqm"].mqm_weights == "Major:7 Neutral:0"
    assert back["cesa"].severities == ["major"] and back["pairwise"].pair_rounds == 3
