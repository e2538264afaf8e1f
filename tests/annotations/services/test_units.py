"""Unit planning: what one screen holds for each protocol, and balanced designs."""

import itertools
import random
from collections import Counter

import pytest

from annotations.models import Campaign, Unit
from annotations.services.campaigns import campaign_create
from annotations.services.units import balanced_tuples, round_robin_rounds
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory


def _dataset(n_items: int, n_systems: int):
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"s{i}") for i in range(n_systems)]
    for i in range(n_items):
        item = ItemFactory(dataset=dataset, position=i)
        for system in systems:
            OutputFactory(item=item, system=system)
    return dataset, systems


def _create(dataset, protocol, **kwargs):
    defaults = {"criteria": ["q"], "redundancy": 2, "seed": 7}
    if protocol == "likert":
        defaults.update(scale_min=1, scale_max=5)
    return campaign_create(
        dataset=dataset, name=f"{protocol}-{random.random()}", protocol=protocol, **{**defaults, **kwargs}
    )


@pytest.mark.django_db
def test_likert_and_esa_plan_one_unit_per_output_of_the_chosen_systems():
    dataset, systems = _dataset(4, 3)
    likert = _create(dataset, "likert")
    assert likert.units.count() == 12 and all(len(u.outputs) == 1 for u in likert.units.all())
    esa = _create(dataset, "esa", systems=["s0", "s2"])
    assert (esa.scale_min, esa.scale_max, esa.options["severities"]) == (0, 100, ["minor", "major"])
    assert esa.units.count() == 8
    assert {s for u in esa.units.all() for s in u.systems} == {systems[0].pk, systems[2].pk}
    # Positions are a permutation: the planned order is shuffled, not the import order.
    positions = sorted(esa.units.values_list("position", flat=True))
    assert positions == list(range(8))


@pytest.mark.django_db
def test_rankme_groups_three_to_five_outputs_of_one_item():
    dataset, _ = _dataset(3, 7)
    campaign = _create(dataset, "rankme", tuple_size=3)
    sizes = Counter(len(u.outputs) for u in campaign.units.all())
    assert sizes == {4: 3, 3: 3}  # 7 outputs -> 4 + 3 per item
    assert all(len({campaign.units.get(pk=u.pk).item_id}) == 1 for u in campaign.units.all())
    assert campaign.options["anchor_value"] == 100


@pytest.mark.django_db
def test_pairwise_plans_every_pair_or_balanced_rounds():
    dataset, systems = _dataset(6, 4)
    every = _create(dataset, "pairwise")
    assert every.units.count() == 6 * 6  # C(4, 2) pairs per item
    rounds = _create(dataset, "pairwise", pair_rounds=1)
    units = list(rounds.units.all())
    assert len(units) == 6 * 2  # one round: 4 systems -> 2 disjoint pairs per item
    # Each system once per item, and across the 6 items every pair of systems twice.
    per_item = Counter((u.item_id, s) for u in units for s in u.systems)
    assert set(per_item.values()) == {1}
    pairs = Counter(frozenset(u.systems) for u in units)
    assert len(pairs) == 6 and set(pairs.values()) == {2}


def test_round_robin_meets_everyone_once():
    for n in range(2, 9):
        meetings = Counter(frozenset(p) for r in round_robin_rounds(n) for p in r)
        assert set(meetings) == {frozenset(p) for p in itertools.combinations(range(n), 2)}
        assert set(meetings.values()) == {1}


@pytest.mark.parametrize("n,size", [(5, 4), (8, 4), (6, 4), (7, 3), (12, 4), (9, 4), (3, 4)])
def test_best_worst_tuples_are_balanced(n, size):
    tuples = balanced_tuples(list(range(n)), size, random.Random(n))
    counts = Counter(x for t in tuples for x in t)
    assert set(counts) == set(range(n))
    assert len(set(counts.values())) == 1  # every output equally often
    assert all(len(set(t)) == len(t) == min(size, n) for t in tuples)
    assert len({frozenset(t) for t in tuples}) == len(tuples)  # no tuple twice


@pytest.mark.django_db
def test_bws_campaign_units_are_tuples_of_one_item():
    dataset, _ = _dataset(3, 5)
    campaign = _create(dataset, "bws", tuple_size=4)
    units = list(campaign.units.all())
    assert len(units) == 3 * 5 and all(len(u.outputs) == 4 for u in units)
    appearances = Counter(o for u in units for o in u.outputs)
    assert set(appearances.values()) == {4}


@pytest.mark.django_db
def test_plan_is_reproducible_from_the_seed():
    dataset, _ = _dataset(5, 5)
    a = _create(dataset, "bws", seed=42)
    b = _create(dataset, "bws", seed=42)
    plan = lambda c: [(u.position, u.outputs) for u in Unit.objects.filter(campaign=c).order_by("position")]
    assert plan(a) == plan(b)


@pytest.mark.django_db
def test_campaign_settings_are_validated():
    dataset, _ = _dataset(1, 3)
    from django.core.exceptions import ValidationError

    for kwargs in (
        {"protocol": "rankme", "tuple_size": 6},
        {"protocol": "esa", "severities": ["huge"]},
        {"protocol": "likert", "criteria_config": [{"name": "q", "widget": "radio", "scale_min": 0, "scale_max": 100}]},
        {"protocol": "likert", "criteria_config": [{"name": "other"}]},
        {"protocol": "likert", "systems": ["nope"]},
        {"protocol": "likert", "units_per_batch": 0},
    ):
        protocol = kwargs.pop("protocol")
        with pytest.raises(ValidationError):
            _create(dataset, protocol, **kwargs)
    assert not Campaign.objects.exists()


@pytest.mark.django_db
def test_per_criterion_scales_and_widgets():
    dataset, _ = _dataset(1, 2)
    campaign = _create(
        dataset,
        "likert",
        criteria=["fluency", "adequacy"],
        criteria_config=[
            {"name": "fluency", "question": "Fluent?", "scale_min": 1, "scale_max": 6},
            {"name": "adequacy", "scale_min": 0, "scale_max": 100, "min_label": "none", "max_label": "all"},
        ],
    )
    fluency, adequacy = campaign.criteria_configs()
    assert (fluency["scale_min"], fluency["scale_max"], fluency["widget"], fluency["question"]) == (
        1,
        6,
        "radio",
        "Fluent?",
    )
    assert (adequacy["scale_max"], adequacy["widget"], adequacy["max_label"]) == (100, "slider", "all")
