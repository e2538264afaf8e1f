"""Issue 46, item 6: the dataset page's search has the API's limits and runs the API's query."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotations import pagination, selectors
from annotations.models import Membership
from tests.annotations.factories import DatasetFactory, ItemFactory, MembershipFactory, OutputFactory, SystemFactory

pytestmark = pytest.mark.django_db

WORDS = "the cat sat on the mat while a dog ran past the river bank".split()


@pytest.fixture
def owner_dataset():
    membership = MembershipFactory(role=Membership.Role.OWNER)
    dataset = DatasetFactory(project=membership.project)
    systems = [SystemFactory(dataset=dataset, name=f"s{i}") for i in range(3)]
    for n in range(60):
        item = ItemFactory(dataset=dataset, external_id=f"it-{n:03d}", position=n, source=" ".join(WORDS[n % 7 :]))
        for k, system in enumerate(systems):
            OutputFactory(item=item, system=system, text=" ".join(WORDS[(n + k) % 11 :: 2]))
    client = Client()
    client.force_login(membership.user)
    api = APIClient()
    api.force_login(membership.user)
    return dataset, client, api


def _page_ids(client, dataset, query: str) -> list[str]:
    ids, page = [], 1
    while True:
        response = client.get(f"/datasets/{dataset.pk}/", {"q": query, "page": page})
        assert response.status_code == 200
        ids += [item.external_id for item in response.context["page"].object_list]
        if not response.context["page"].has_next():
            return ids
        page += 1


def _api_ids(api, dataset, query: str) -> list[str]:
    ids, url = [], f"/api/items/?dataset={dataset.pk}&q={query}"
    while url:
        body = api.get(url).json()
        ids += [item["external_id"] for item in body["results"]]
        url = body["next"]
    return ids


@pytest.mark.parametrize("query", ["the cat", "cat sat on", "RIVER", "it-01", "no such words"])
def test_page_and_api_find_the_same_items(owner_dataset, query):
    dataset, client, api = owner_dataset
    page = _page_ids(client, dataset, query)
    assert page == _api_ids(api, dataset, query)
    # The definition (a case-insensitive substring of the id, source or an output), not our output.
    expected = [
        item.external_id
        for item in dataset.items.order_by("position")
        if any(
            query.lower() in t.lower()
            for t in [item.external_id, item.source, *item.outputs.values_list("text", flat=True)]
        )
    ]
    assert page == expected


def test_an_over_long_query_is_refused_on_the_page_with_a_message(owner_dataset):
    dataset, client, api = owner_dataset
    query = " ".join(["cat"] * 300)  # the probe's 300-word query: 1,199 characters
    response = client.get(f"/datasets/{dataset.pk}/", {"q": query})
    assert response.status_code == 400
    assert f"at most {selectors.SEARCH_MAX_CHARS} are searched" in response.content.decode()
    assert api.get(f"/api/items/?dataset={dataset.pk}&q={query}").status_code == 400
    # A query at the limit is searched.
    at_limit = ("cat " * 100)[: selectors.SEARCH_MAX_CHARS]
    assert client.get(f"/datasets/{dataset.pk}/", {"q": at_limit}).status_code == 200


def test_the_search_page_runs_a_bounded_number_of_statements(owner_dataset):
    dataset, client, _ = owner_dataset
    client.get(f"/datasets/{dataset.pk}/")  # the session's user and role, read once
    counts = []
    for extra in (0, 60):
        for n in range(extra):
            ItemFactory(dataset=dataset, external_id=f"more-{n}", position=100 + n, source="the cat again")
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/datasets/{dataset.pk}/", {"q": "the cat"}).status_code == 200
        counts.append(len(queries))
    assert counts[1] <= counts[0] <= 20, counts  # more matching items, no more statements


def test_the_items_of_one_system_are_counted_no_further_than_the_lists_cap(owner_dataset, monkeypatch):
    """The dataset page filtered by a system counted every item with an output of it (an EXISTS per
    item: 0.15-0.25 s over 100,000 items, bench_pages at 1M): it counts LIST_COUNT_CAP + 1 at most,
    like the API's lists, and says there are more."""
    dataset, client, _ = owner_dataset
    system = dataset.systems.order_by("name").first()
    monkeypatch.setattr(pagination, "LIST_COUNT_CAP", 30)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(f"/datasets/{dataset.pk}/", {"system": system.pk})
    assert page.status_code == 200
    assert "More than 30 matching items" in page.content.decode()
    counts = [q["sql"] for q in queries.captured_queries if q["sql"].upper().startswith("SELECT COUNT(*)")]
    assert counts and all("LIMIT 31" in sql for sql in counts if "EXISTS" in sql.upper())
    # Under the cap the count is exact.
    monkeypatch.setattr(pagination, "LIST_COUNT_CAP", 100)
    assert "60 matching items" in client.get(f"/datasets/{dataset.pk}/", {"system": system.pk}).content.decode()
