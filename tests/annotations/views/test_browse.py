"""Dataset and item pages: counts, pagination, search, system filter, escaping."""

import re

import pytest
from django.urls import reverse

from annotations.views.datasets import ITEMS_PER_PAGE
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, ReferenceFactory, SystemFactory

pytestmark = pytest.mark.django_db


def _item_ids(response) -> list[str]:
    return re.findall(r'class="item-link">([^<]+)<', response.content.decode())


def test_dataset_page_counts(client, owner, dataset):
    client.force_login(owner)
    html = client.get(reverse("dataset-detail", args=[dataset.pk])).content.decode()
    assert re.search(r'data-stat="items">3<', html)
    assert re.search(r'data-stat="systems">2<', html)
    assert re.search(r'data-stat="outputs">5<', html)
    assert re.search(r'data-stat="references">3<', html)


def test_items_are_paginated_in_order(client, owner, project):
    ds = DatasetFactory(project=project, name="big")
    total = ITEMS_PER_PAGE * 2 + 3
    for i in range(total):
        ItemFactory(dataset=ds, external_id=f"x-{i:03d}", position=i)
    client.force_login(owner)
    url = reverse("dataset-detail", args=[ds.pk])
    pages = [_item_ids(client.get(url, {"page": p})) for p in (1, 2, 3)]
    assert [len(p) for p in pages] == [ITEMS_PER_PAGE, ITEMS_PER_PAGE, 3]
    assert sum(pages, []) == [f"x-{i:03d}" for i in range(total)]
    # Past the end: the last page, not an error.
    assert _item_ids(client.get(url, {"page": 99})) == pages[2]


def test_pagination_links_keep_the_search(client, owner, project):
    ds = DatasetFactory(project=project, name="big")
    for i in range(ITEMS_PER_PAGE + 5):
        ItemFactory(dataset=ds, external_id=f"match-{i:03d}", position=i)
    ItemFactory(dataset=ds, external_id="other", position=999)
    client.force_login(owner)
    html = client.get(reverse("dataset-detail", args=[ds.pk]), {"q": "match"}).content.decode()
    assert "q=match&amp;page=2" in html


@pytest.mark.parametrize(
    "query, expected",
    [
        ("item-2", ["item-2"]),  # external id
        ("leeds", ["item-2"]),  # source, case-insensitive
        ("sitting", ["item-1"]),  # reference
        ("feline", ["item-1"]),  # an output
        ("eatType", ["item-3"]),  # structured input
        ("Blue Spice", ["item-3"]),  # reference and outputs: listed once
        ("nothing like this", []),
    ],
)
def test_search(client, owner, dataset, query, expected):
    client.force_login(owner)
    response = client.get(reverse("dataset-detail", args=[dataset.pk]), {"q": query})
    assert _item_ids(response) == expected


def test_filter_by_system_lists_items_with_its_outputs(client, owner, dataset):
    client.force_login(owner)
    sys_b = dataset.systems.get(name="sysB")
    response = client.get(reverse("dataset-detail", args=[dataset.pk]), {"system": sys_b.pk})
    assert _item_ids(response) == ["item-1", "item-3"]
    html = response.content.decode()
    assert "Output of sysB" in html and "feline mat" in html
    # Combined with a search.
    response = client.get(reverse("dataset-detail", args=[dataset.pk]), {"system": sys_b.pk, "q": "cat"})
    assert _item_ids(response) == ["item-1"]


def test_filter_ignores_a_system_of_another_dataset(client, owner, dataset, project):
    foreign = SystemFactory(dataset=DatasetFactory(project=project), name="foreign")
    client.force_login(owner)
    response = client.get(reverse("dataset-detail", args=[dataset.pk]), {"system": foreign.pk})
    assert _item_ids(response) == ["item-1", "item-2", "item-3"]


def test_item_page_shows_input_references_and_every_output(client, owner, dataset):
    client.force_login(owner)
    item = dataset.items.get(external_id="item-3")
    ReferenceFactory(item=item, position=1, text="There is a pub called Blue Spice.")
    html = client.get(reverse("item-detail", args=[item.pk])).content.decode()
    # Triples as a table.
    assert re.search(r"<td>Blue Spice</td><td class=\"predicate\">eatType</td><td>pub</td>", html)
    assert "Blue Spice is a pub." in html and "There is a pub called Blue Spice." in html
    cards = re.findall(r'<article class="output-card" data-system="([^"]+)"', html)
    assert cards == ["sysA", "sysB"]
    assert "Blue Spice pub" in html and "pub Blue Spice" in html


def test_item_page_prev_next_follow_dataset_order(client, owner, dataset):
    client.force_login(owner)
    items = list(dataset.items.order_by("position"))
    middle = client.get(reverse("item-detail", args=[items[1].pk])).content.decode()
    assert f'href="{reverse("item-detail", args=[items[0].pk])}" rel="prev"' in middle
    assert f'href="{reverse("item-detail", args=[items[2].pk])}" rel="next"' in middle
    first = client.get(reverse("item-detail", args=[items[0].pk])).content.decode()
    assert 'rel="prev"' not in first
    last = client.get(reverse("item-detail", args=[items[2].pk])).content.decode()
    assert 'rel="next"' not in last


def test_outputs_sources_and_meta_are_escaped(client, owner, project):
    ds = DatasetFactory(project=project, name="xss")
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    item = ItemFactory(dataset=ds, external_id="<b>id</b>", source=evil, meta={"note": evil})
    ReferenceFactory(item=item, position=0, text=evil)
    OutputFactory(item=item, system=SystemFactory(dataset=ds, name="<i>sys</i>"), text=evil)
    client.force_login(owner)
    for url in (
        reverse("item-detail", args=[item.pk]),
        reverse("dataset-detail", args=[ds.pk]),
        reverse("dataset-detail", args=[ds.pk]) + "?q=%3Cscript%3E",
    ):
        html = client.get(url).content.decode()
        assert "<script>alert" not in html, url
        assert "<img src=x" not in html, url
        assert "<b>id</b>" not in html, url
        assert "&lt;script&gt;alert(" in html, url
