"""Segments where the two waves differ by more than a threshold (issue 42 item 5, WMT25's list
of segments whose human1 and human2 differ by more than 50 points): JSON, page, CSV, card."""

import pytest

from annotations.analysis import waves as wv
from annotations.models import Campaign
from tests.annotations.analysis.test_protocols import dataset  # noqa: F401
from tests.annotations.analysis.test_rankings_rules import _researcher
from tests.annotations.analysis.test_waves import _per_output, run, waves  # noqa: F401

pytestmark = pytest.mark.django_db


def test_discrepancies_are_strictly_more_than_the_threshold():
    outputs = {
        1: {"item": 10, "item_ext": "a", "system": "x"},
        2: {"item": 11, "item_ext": "b", "system": "x"},
        3: {"item": 12, "item_ext": "c", "system": "y"},
    }
    rows = wv.discrepancies({1: 10.0, 2: 90.0, 3: 40.0}, {1: 60.0, 2: 20.0, 3: 91.0}, outputs)
    # 50 apart is not more than 50; 70 and 51 are, largest first, the sign human2 - human1.
    assert [(r["output"], r["difference"]) for r in rows] == [(2, -70.0), (3, 51.0)]
    assert wv.discrepancies({1: 10.0}, {1: 60.0}, outputs, threshold=49.5)[0]["item_ext"] == "a"


def test_wave_discrepancies_on_json_page_csv_and_card(waves, client):  # noqa: F811
    first, second = waves
    h1, h2 = _per_output(first), _per_output(second)
    expected = sorted(((s, i), h2[(s, i)] - h1[(s, i)]) for (s, i) in h1 if abs(h2[(s, i)] - h1[(s, i)]) > 0.5)
    assert expected  # the simulated second wave moves some outputs by a point

    fig = run("agreement", "--campaign", "likert", "--bootstrap", "0")["waves"]
    assert fig["discrepancy_threshold"] == 50 and fig["criteria"]["adequacy"]["discrepancies"] == []  # a 1-5 scale

    campaign = Campaign.objects.get(name="likert")
    _researcher(client, campaign)
    url = f"/campaigns/{campaign.pk}/analysis/meta/"
    page = client.get(url, {"discrepancy": "0.5"}).content.decode()
    assert 'id="wave-discrepancies"' in page and "differ by more than 0.5 points" in page
    lines = client.get(url, {"discrepancy": "0.5", "format": "csv", "table": "discrepancies"}).content.decode()
    rows = [line.split(",") for line in lines.splitlines()[1:]]
    got = sorted(((r[2], r[1]), float(r[5])) for r in rows)
    assert [k for k, _ in got] == [k for k, _ in expected]
    assert [d for _, d in got] == pytest.approx([d for _, d in expected], abs=1e-9)
    # Each row links to its item.
    from annotations.models import Item

    item = Item.objects.get(dataset=campaign.dataset, external_id=rows[0][1])
    assert f'href="/items/{item.pk}/"' in page


def test_wave_discrepancies_show_document_and_media(waves, client):  # noqa: F811
    """Each row's document and media markers, as the other item lists (it had none), escaped."""
    from django.core.cache import cache

    from tests.annotations.analysis.test_item_places import _check_places, _place_items

    campaign = Campaign.objects.get(name="likert")
    items = _place_items(campaign)
    cache.clear()
    _researcher(client, campaign)
    response = client.get(f"/campaigns/{campaign.pk}/analysis/meta/", {"discrepancy": "0.5"})
    rows = response.context["discrepancies"]["rows"]
    assert rows and all(r["place"]["doc"] for r in rows)
    _check_places(response.content.decode(), [(r["item"], r["url"]) for r in rows], items)
