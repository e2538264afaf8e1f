"""Migration 0007 gives campaigns planned before it their number of regular units (the walk's
domain) when their positions are 0..n-1, and leaves the others to the full scan."""

import importlib

import pytest
from django.db import connection

from annotations.models import Campaign, Unit
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory

pytestmark = pytest.mark.django_db


def _campaign(name):
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"s{i}") for i in range(2)]
    for i in range(3):
        item = ItemFactory(dataset=dataset, position=i)
        for system in systems:
            OutputFactory(item=item, system=system)
    return campaign_create(
        dataset=dataset, name=name, protocol="likert", criteria=["q"], scale_min=1, scale_max=5, redundancy=1
    )


def test_the_migration_counts_the_regular_units_of_campaigns_planned_before_it():
    planned, gapped = _campaign("planned"), _campaign("gapped")
    Unit.objects.filter(campaign=gapped, position=2).delete()  # positions 0, 1, 3, 4, 5: not a walk's domain
    Campaign.objects.update(n_units=None)
    migration = importlib.import_module("annotations.migrations.0007_walk").Migration
    with connection.cursor() as cursor:
        cursor.execute(migration.operations[-1].sql)
    assert Campaign.objects.get(pk=planned.pk).n_units == 6
    assert Campaign.objects.get(pk=gapped.pk).n_units is None
