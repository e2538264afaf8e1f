"""Overlap-first's pick stays an index read: PostgreSQL's plan for its statement reads the two
partial indexes (started units, fresh units) and never scans the campaign's units."""

import pytest
from django.db import connection

from annotations.models import Assignment, Unit
from annotations.services.assignments import _overlap_params, _overlap_sql
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import AnnotatorFactory, DatasetFactory, ItemFactory, OutputFactory, SystemFactory

pytestmark = pytest.mark.django_db


def test_the_overlap_first_pick_reads_its_partial_indexes():
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"s{i}") for i in range(4)]
    # Large enough that the planner's choices are those of a real table (on a tiny one it may read all
    # rows, cheaper there); bulk-created to keep the test quick.
    items = ItemFactory._meta.model.objects.bulk_create(
        [ItemFactory.build(dataset=dataset, position=i, external_id=f"i{i}") for i in range(1500)]
    )
    OutputFactory._meta.model.objects.bulk_create(
        [OutputFactory.build(item=item, system=system) for item in items for system in systems]
    )
    campaign = campaign_create(
        dataset=dataset, name="big", protocol="likert", criteria=["q"], scale_min=1, scale_max=5, redundancy=3
    )
    assert campaign.n_units == 6000
    # A campaign under way: the first 300 units complete, the next 40 started.
    Unit.objects.filter(campaign=campaign, position__lt=300).update(n_taken=3, n_done=3)
    Unit.objects.filter(campaign=campaign, position__gte=300, position__lt=340).update(n_taken=1, n_done=1)
    annotator = AnnotatorFactory(project=dataset.project)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Unit._meta.db_table}")
        cursor.execute(f"ANALYZE {Assignment._meta.db_table}")
        cursor.execute("EXPLAIN " + _overlap_sql(), _overlap_params(campaign, annotator))
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "unit_started_by_position" in plan and "unit_fresh_by_position" in plan, plan
    assert f"Seq Scan on {Unit._meta.db_table}" not in plan, plan
