"""Item search at scale: the same answers on both plans, served by the trigram
indexes, counts that stop early. (Timings: bench/bench_search.py.)"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotations import selectors
from annotations.models import DatasetCount, Item, Membership, Output, Reference, System
from annotations.selectors import search as search_selectors
from annotations.services.imports import dataset_import
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ReferenceFactory,
    SystemFactory,
)

pytestmark = pytest.mark.django_db

TEXTS = [
    "The Golden Curry serves Italian food.",
    "A pub near the river.",
    "Zizzi is a coffee shop.",
    "golden hour at the riverside",
    "Nothing to see.",
    "THE END",
]


@pytest.fixture
def dataset():
    dataset = DatasetFactory(name="search")
    systems = [SystemFactory(dataset=dataset, name=f"s{i}") for i in range(2)]
    for n in range(30):
        text = TEXTS[n % len(TEXTS)]
        item = ItemFactory(
            dataset=dataset,
            external_id=f"id-{n:03d}",
            position=n,
            source=f"source {n} {text if n % 4 == 0 else ''}",
            data=[["Golden Curry", "food", "Italian"]] if n % 7 == 0 else [],
        )
        ReferenceFactory(item=item, position=0, text=TEXTS[(n + 1) % len(TEXTS)] if n % 3 == 0 else "plain")
        OutputFactory(item=item, system=systems[0], text=text)
        if n % 2:
            OutputFactory(item=item, system=systems[1], text=TEXTS[(n + 2) % len(TEXTS)])
    DatasetFactory(name="elsewhere")  # another dataset's items never match
    return dataset


def expected(dataset, query: str) -> list[str]:
    """The definition: a case-insensitive substring of the id, source, data, a reference or an output."""
    q = query.lower()
    found = []
    for item in Item.objects.filter(dataset=dataset).order_by("position", "id"):
        texts = [item.external_id, item.source, str(item.data).replace("'", '"')]
        texts += list(item.references.values_list("text", flat=True)) + list(
            item.outputs.values_list("text", flat=True)
        )
        if any(q in t.lower() for t in texts):
            found.append(item.external_id)
    return found


@pytest.mark.parametrize(
    "query", ["golden", "GOLDEN curry", "the", "river", "zizzi", "id-01", "Italian", "nope", "50%", "a_b", "end"]
)
@pytest.mark.parametrize(
    "probe_rows, dense_share",
    [
        (5000, 2.0),  # a rare term: the trigram indexes find every item
        (2, 2.0),  # common by the index probes: walk in order
        (5000, 0.0),  # common by the sample: walk in order at once
    ],
)
def test_every_plan_finds_exactly_the_matching_items_in_order(dataset, monkeypatch, query, probe_rows, dense_share):
    monkeypatch.setattr(search_selectors, "SEARCH_PROBE_ROWS", probe_rows)
    monkeypatch.setattr(search_selectors, "SEARCH_DENSE_SHARE", dense_share)
    found = list(selectors.dataset_item_search(dataset=dataset, query=query).values_list("external_id", flat=True))
    assert found == expected(dataset, query)


def test_queries_under_three_characters_match_item_ids_only(dataset):
    found = list(selectors.dataset_item_search(dataset=dataset, query="00").values_list("external_id", flat=True))
    assert found == [f"id-{n:03d}" for n in range(30) if "00" in f"id-{n:03d}"]
    assert list(selectors.dataset_item_search(dataset=dataset, query="he")) == []  # "the" is in texts, not ids


@pytest.mark.parametrize(
    "table, expression, index",
    [
        ("annotations_item", "UPPER(external_id::text)", "item_external_id_trgm"),
        ("annotations_item", "UPPER(source::text)", "item_source_trgm"),
        ("annotations_item", "UPPER((data)::text::text)", "item_data_trgm"),
        ("annotations_reference", "UPPER(text::text)", "reference_text_trgm"),
        ("annotations_output", "UPPER(text::text)", "output_text_trgm"),
    ],
)
def test_the_trigram_indexes_serve_the_lookups_django_writes(dataset, table, expression, index):
    # Written as Django's icontains writes it; with sequential scans off, only a matching index can answer.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN SELECT id FROM {table} WHERE {expression} LIKE UPPER(%s)", ["%golden%"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert index in plan, plan


def test_dataset_pages_are_read_in_order_from_an_index(dataset):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(
            "EXPLAIN SELECT id FROM annotations_item WHERE dataset_id = %s ORDER BY position, id LIMIT 25 OFFSET 100",
            [dataset.pk],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "item_dataset_position" in plan and "Sort" not in plan, plan


def test_search_counts_stop_at_the_cap_on_the_page_and_in_the_api(dataset, monkeypatch, client):
    monkeypatch.setattr(selectors, "SEARCH_COUNT_CAP", 4)  # read by the paginators
    user = MembershipFactory(project=dataset.project, role=Membership.Role.OWNER).user
    client.force_login(user)
    page = client.get(f"/datasets/{dataset.pk}/", {"q": "the"}).content.decode()
    assert "More than 4 matching items" in page
    api = APIClient()
    api.force_authenticate(user)
    body = api.get("/api/items/", {"dataset": dataset.pk, "q": "the"}).json()
    assert body["count"] == 4 and len(body["results"]) == 4 and body["next"] is None
    # A plain listing is counted in full.
    assert api.get("/api/items/", {"dataset": dataset.pk}).json()["count"] == 30


def recount(dataset) -> dict[str, int]:
    """The counts by counting the rows (what the counters must equal)."""
    return {
        "items": Item.objects.filter(dataset=dataset).count(),
        "systems": System.objects.filter(dataset=dataset).count(),
        "outputs": Output.objects.filter(item__dataset=dataset).count(),
        "references": Reference.objects.filter(item__dataset=dataset).count(),
    }


def test_dataset_counts_are_the_database_counters_equal_to_a_recount_after_every_write(django_assert_num_queries):
    """Issue 45: the project and dataset pages read a dataset's counts from counters the database
    keeps (migration 0029), one query, never a count of its rows; any write path keeps them exact.
    (Before: a count of every output, cached per import, so a write outside an import went unseen.)"""
    dataset = dataset_import(stream=b'{"item": "a", "outputs": {"A": "x"}}\n{"item": "b"}\n', dataset_name="c").dataset
    other = dataset_import(
        stream=b'{"item": "z", "outputs": {"A": "x", "B": "y"}, "references": ["r"]}\n', dataset_name="d"
    ).dataset
    with django_assert_num_queries(1):
        assert selectors.dataset_counts(dataset=dataset) == {"items": 2, "systems": 1, "outputs": 1, "references": 0}
    OutputFactory(item=Item.objects.get(dataset=dataset, external_id="b"), system=System.objects.get(dataset=dataset))
    ReferenceFactory(item=Item.objects.get(dataset=dataset, external_id="b"))
    assert selectors.dataset_counts(dataset=dataset) == {"items": 2, "systems": 1, "outputs": 2, "references": 1}
    dataset_import(stream=b'{"item": "c", "outputs": {"B": "y"}, "references": ["r"]}\n', dataset_name="c")
    assert (
        selectors.dataset_counts(dataset=dataset)
        == recount(dataset)
        == {
            "items": 3,
            "systems": 2,
            "outputs": 3,
            "references": 2,
        }
    )
    # Deletes: one output; an item with its outputs and references (Django's cascade); a system.
    Output.objects.filter(item__dataset=dataset, item__external_id="a").delete()
    Item.objects.get(dataset=dataset, external_id="c").delete()
    System.objects.filter(dataset=dataset, name="A").delete()
    assert (
        selectors.dataset_counts(dataset=dataset)
        == recount(dataset)
        == {
            "items": 2,
            "systems": 1,
            "outputs": 0,
            "references": 1,
        }
    )
    Reference.objects.filter(item__dataset=dataset).delete()
    assert selectors.dataset_counts(dataset=dataset) == recount(dataset)
    # The other dataset was never touched; a new empty one counts nothing; all in one query.
    empty = DatasetFactory(name="empty")
    with django_assert_num_queries(1):
        counts = selectors.dataset_counts_of(dataset_ids=[dataset.pk, other.pk, empty.pk])
    assert counts[other.pk] == recount(other) == {"items": 1, "systems": 2, "outputs": 2, "references": 1}
    assert counts[empty.pk] == recount(empty) == {"items": 0, "systems": 0, "outputs": 0, "references": 0}
    # A dataset deleted with everything in it leaves no counter behind.
    other.delete()
    assert not DatasetCount.objects.filter(dataset_id=other.pk).exists()


def test_the_project_page_reads_its_datasets_counts_in_one_query_however_many(client, django_assert_max_num_queries):
    """The project page counted each dataset's rows (a query or four per dataset, seconds at 1M
    outputs on a first load): now one read of the counters, the same number of queries for
    one dataset as for five."""
    dataset = DatasetFactory(name="one")
    user = MembershipFactory(project=dataset.project, role=Membership.Role.OWNER).user
    client.force_login(user)
    for n in range(4):
        system = SystemFactory(dataset=dataset, name=f"s{n}")
        OutputFactory(item=ItemFactory(dataset=dataset), system=system)
    with CaptureQueriesContext(connection) as one:
        page = client.get(f"/projects/{dataset.project_id}/")
    assert page.status_code == 200
    for n in range(4):
        more = DatasetFactory(name=f"more-{n}", project=dataset.project)
        OutputFactory(item=ItemFactory(dataset=more), system=SystemFactory(dataset=more))
    with django_assert_max_num_queries(len(one)):
        page = client.get(f"/projects/{dataset.project_id}/")
    assert page.status_code == 200
    # No count of the outputs, items or references tables: the page reads the counters.
    with CaptureQueriesContext(connection) as five:
        client.get(f"/projects/{dataset.project_id}/")
    counting = [q["sql"] for q in five if "COUNT(" in q["sql"].upper() and "annotations_output" in q["sql"]]
    assert counting == []


def test_the_items_api_builds_its_output_serializer_once_a_page(dataset, monkeypatch):
    """A page of items built an output serializer, and deep-copied its fields, for each item (half of
    the deep page's time at 1M, bench_pages): one a page now, with the same outputs in the answer."""
    from annotations.apis.datasets import OutputOutputSerializer

    built = []
    get_fields = OutputOutputSerializer.get_fields
    monkeypatch.setattr(OutputOutputSerializer, "get_fields", lambda self: built.append(1) or get_fields(self))
    user = MembershipFactory(project=dataset.project, role=Membership.Role.OWNER).user
    api = APIClient()
    api.force_authenticate(user)
    body = api.get("/api/items/", {"dataset": dataset.pk}).json()
    assert len(body["results"]) == 30 and len(built) == 1
    expected = {
        item.pk: [
            {"id": o.pk, "item": item.pk, "system": o.system_id, "system_name": o.system.name, "text": o.text}
            for o in Output.objects.filter(item=item).select_related("system").order_by("system__name")
        ]
        for item in Item.objects.filter(dataset=dataset)
    }
    assert {row["id"]: row["outputs"] for row in body["results"]} == expected
