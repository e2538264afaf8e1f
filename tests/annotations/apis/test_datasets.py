"""Datasets, items and outputs: content and filters."""

from tests.annotations.factories import ItemFactory, OutputFactory, ReferenceFactory


def test_item_detail_has_references_and_outputs(world):
    item = world.mine.items[1]
    body = world.client("researcher").get(f"/api/items/{item.pk}/").json()
    assert body["external_id"] == "mine-item-1"
    assert body["dataset"] == world.mine.dataset.pk
    assert body["references"] == [{"position": 0, "text": "reference of mine-item-1"}]
    assert [(o["system_name"], o["text"]) for o in body["outputs"]] == [
        ("mine-sys0", "mine-sys0 says mine-item-1"),
        ("mine-sys1", "mine-sys1 says mine-item-1"),
    ]
    # Annotators see items only in their units (the unit API): the item API answers them 404.
    assert world.client("annotator").get(f"/api/items/{item.pk}/").status_code == 404


def _external_ids(client, query):
    response = client.get("/api/items/" + query)
    assert response.status_code == 200, response.content
    return [row["external_id"] for row in response.json()["results"]]


def test_item_search_and_filters(world):
    client = world.client("researcher")
    dataset = world.mine.dataset
    special = ItemFactory(
        dataset=dataset,
        external_id="e2e-17",
        position=10,
        source="The Eagle is a pub.",
        data=[["Blue Spice", "eatType", "coffee shop"]],
    )
    ReferenceFactory(item=special, position=0, text="A riverside café.")
    OutputFactory(item=special, system=world.mine.systems[0], text="Zizzi serves sushi.")

    assert _external_ids(client, f"?dataset={dataset.pk}") == [f"mine-item-{i}" for i in range(3)] + ["e2e-17"]
    assert _external_ids(client, "?q=E2E-1") == ["e2e-17"]  # external id, case-insensitive
    assert _external_ids(client, "?q=eagle") == ["e2e-17"]  # source
    assert _external_ids(client, "?q=blue spice") == ["e2e-17"]  # structured data
    assert _external_ids(client, "?q=riverside") == ["e2e-17"]  # reference
    assert _external_ids(client, "?q=sushi") == ["e2e-17"]  # output
    assert _external_ids(client, "?q=mine-sys1 says") == [f"mine-item-{i}" for i in range(3)]
    # Only items with an output of system 1 (the special item has none).
    assert _external_ids(client, f"?system={world.mine.systems[1].pk}") == [f"mine-item-{i}" for i in range(3)]
    # Searching never reaches into other projects.
    assert _external_ids(client, "?q=other-item") == []


def test_output_filters(world):
    client = world.client("owner")
    systems, items = world.mine.systems, world.mine.items

    def texts(query):
        return [o["text"] for o in client.get("/api/outputs/" + query).json()["results"]]

    assert texts(f"?system={systems[1].pk}") == [f"mine-sys1 says mine-item-{i}" for i in range(3)]
    assert texts(f"?item={items[2].pk}") == ["mine-sys0 says mine-item-2", "mine-sys1 says mine-item-2"]
    assert texts(f"?dataset={world.mine.dataset.pk}&system={systems[0].pk}&item={items[0].pk}") == [
        "mine-sys0 says mine-item-0"
    ]


def test_bad_filter_values_are_400_not_500(world):
    client = world.client("owner")
    for url in (
        "/api/items/?dataset=abc",
        "/api/items/?dataset=0",
        f"/api/items/?dataset={2**70}",
        "/api/outputs/?system=-1",
        "/api/items/?q=" + "x" * 201,
        "/api/items/?q=a%00b",
        "/api/assignments/?status=lost",
    ):
        assert client.get(url).status_code == 400, url
    assert client.get(f"/api/items/{2**70}/").status_code == 404
