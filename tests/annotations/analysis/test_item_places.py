"""The analysis pages that list outputs one by one (disagreements, error severity, NLI facts, the MQM
error items) show where each item sits (issue 41): its document and position as a link to the item
page's document, and a marker for each medium it carries (linking to the item page, which plays it);
escaped, and read for the whole page at once: a page costs the same statements with documents and
media as without, whatever the number of rows."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotations.models import Item, Membership
from tests.annotations.analysis.test_protocols import SYSTEMS, dataset  # noqa: F401
from tests.annotations.analysis.test_views import _client, _likert_rows, likert  # noqa: F401

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("d")</script>'


def _place_items(campaign):
    """Every item in one of two documents (one named with markup), in order; the first item with an
    image source, the second with an audio reference."""
    items = list(Item.objects.filter(dataset=campaign.dataset).order_by("position", "id"))
    for k, item in enumerate(items):
        item.doc = HOSTILE if k % 2 else "news-7"
        item.doc_pos = k // 2
        if k == 0:
            item.media = {"source": {"type": "image", "path": "img/a.png", "mime": "image/png", "alt": "a"}}
        if k == 1:
            item.media = {"reference": {"type": "audio", "path": "aud/b.wav", "mime": "audio/wav"}}
    Item.objects.bulk_update(items, ["doc", "doc_pos", "media"])
    return items


def _count(c, url, params=None) -> int:
    cache.clear()
    with CaptureQueriesContext(connection) as ctx:
        assert c.get(url, params or {}).status_code == 200
    return len(ctx.captured_queries)


def _check_places(body: str, rows, items):
    by_pk = {i.pk: i for i in items}
    assert HOSTILE not in body and "&lt;script&gt;alert(&quot;d&quot;)&lt;/script&gt;" in body
    for row_item, url in rows:
        item = by_pk[row_item]
        link = f'href="{url}#item-document"'
        assert link in body
        fragment = body[body.index(link) : body.index(link) + 400]
        expected = "news-7" if item.doc == "news-7" else "&lt;script&gt;"
        assert expected in fragment and f"· {item.doc_pos}</a>" in fragment
    assert "media-marker media-image" in body and "source image" in body
    assert "media-marker media-audio" in body and "reference audio" in body


def test_the_disagreement_page_shows_document_and_media(client, likert):  # noqa: F811
    c = _client(client, likert, Membership.Role.RESEARCHER)
    url = reverse("analysis-disagreement", args=[likert.pk])
    _count(c, url)  # the first request of a session reads more (its session, its role)
    before = _count(c, url)
    items = _place_items(likert)
    assert _count(c, url) == before  # the item's own fields: no statement of its own
    cache.clear()
    response = c.get(url)
    shown = response.context["data"]["items"]
    assert len(shown) == 12
    _check_places(response.content.decode(), [(it["id"], it["url"]) for it in shown], items)
    first = next(it for it in shown if it["id"] == items[0].pk)
    assert first["place"] == {
        "doc": "news-7",
        "doc_pos": 0,
        "media": [{"role": "source", "type": "image"}],
    }


def test_the_error_severity_page_shows_document_and_media(client, likert):  # noqa: F811
    c = _client(client, likert, Membership.Role.RESEARCHER)
    url = reverse("analysis-errors", args=[likert.pk])
    _count(c, url)  # the first request of a session reads more (its session, its role)
    few, many = _count(c, url, {"limit": "4"}), _count(c, url, {"limit": "48"})
    items = _place_items(likert)
    # One statement for the page's places, none per row: 4 rows and 48 rows cost the same.
    assert _count(c, url, {"limit": "4"}) - few == _count(c, url, {"limit": "48"}) - many
    response = c.get(url, {"limit": "48"})
    rows = response.context["data"]["rows"]
    assert len(rows) == 48
    by_pk = {i.pk: i for i in items}
    assert all(r["place"]["doc"] == by_pk[r["item_id"]].doc for r in rows)
    _check_places(response.content.decode(), [(r["item_id"], r["url"]) for r in rows], items)


def test_rows_of_items_without_document_or_media_show_nothing(client, likert):  # noqa: F811
    c = _client(client, likert, Membership.Role.RESEARCHER)
    response = c.get(reverse("analysis-errors", args=[likert.pk]))
    assert all(r["place"] is None for r in response.context["data"]["rows"])
    body = response.content.decode()
    assert "doc-place" not in body and "media-marker" not in body


def test_the_nli_facts_page_shows_document_and_media(client, likert):  # noqa: F811
    from django.utils import timezone

    from annotations.models import Output
    from metrics.models import MetricRun, OutputScore, RunStatus

    run = MetricRun.objects.create(
        dataset=likert.dataset,
        metric="nli",
        signature="nli|test",
        status=RunStatus.DONE,
        finished_at=timezone.now(),
        higher_is_better=True,
    )
    OutputScore.objects.bulk_create(
        OutputScore(run=run, output=o, score=1.0, extra={"label": "OK", "confidence": 0.9, "facts": []})
        for o in Output.objects.filter(item__dataset=likert.dataset)
    )
    c = _client(client, likert, Membership.Role.RESEARCHER)
    url = reverse("analysis-facts", args=[likert.pk])
    _count(c, url)
    few, many = _count(c, url, {"offset": "44"}), _count(c, url)
    items = _place_items(likert)
    assert _count(c, url, {"offset": "44"}) - few == _count(c, url) - many  # 4 rows, 48 rows
    response = c.get(url)
    rows = response.context["data"]["rows"]
    assert len(rows) == 48
    _check_places(response.content.decode(), [(r["item_id"], r["url"]) for r in rows], items)


def test_the_mqm_error_items_show_document_and_media(client, tmp_path):
    """The items behind one cell of the MQM breakdown (a WMT-shaped TSV import), with their places."""
    from annotations.models import Campaign
    from tests.annotations.factories import MembershipFactory, UserFactory
    from tests.annotations.protocols.test_mqm import _dataset as mqm_dataset, generate, run

    texts, tsv = generate()
    mqm_dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    (tmp_path / "r.tsv").write_text(tsv, encoding="utf-8")
    run("import_judgements", str(tmp_path / "r.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    campaign = Campaign.objects.get(name="mqm")
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    url = reverse("analysis-mqm-errors", args=[campaign.pk])
    params = {"annotators": "all", "cell": "sysA"}
    _count(client, url, params)
    before = _count(client, url, params)
    items = _place_items(campaign)
    # The page's places in one statement, with documents and media or without: none per row.
    assert _count(client, url, params) == before
    response = client.get(url, params)
    rows = response.context["data"]["items"]
    assert len(rows) >= 4
    fewer = {**params, "severity": "major"}
    assert len(client.get(url, fewer).context["data"]["items"]) < len(rows)
    _count(client, url, fewer)
    assert _count(client, url, fewer) == before
    _check_places(response.content.decode(), [(r["item_id"], r["url"]) for r in rows], items)


def test_the_disagreement_page_costs_the_same_statements_for_3_items_as_for_12(client, likert):  # noqa: F811
    """Its item details are read for the whole page at once (the page once read each item, its
    outputs, references, metric runs and judgements one item at a time: ~180 statements for 12)."""
    from annotations.models import RatingJudgement

    c = _client(client, likert, Membership.Role.RESEARCHER)
    url = reverse("analysis-disagreement", args=[likert.pk])
    _count(c, url)  # the first request of a session reads more (its session, its role)
    many = _count(c, url)
    assert len(c.get(url).context["data"]["items"]) == 12
    items = list(Item.objects.filter(dataset=likert.dataset).order_by("position", "id"))
    RatingJudgement.objects.filter(campaign=likert, item__in=items[3:]).delete()
    cache.clear()
    assert len(c.get(url).context["data"]["items"]) == 3
    assert _count(c, url) == many


def test_the_scatter_table_shows_document_and_media(client, likert):  # noqa: F811
    """Its points (one an output) had no document or media marker while the other item lists had one;
    read in one statement for the page, whatever the number of points."""
    c = _client(client, likert, Membership.Role.RESEARCHER)
    url = reverse("analysis-scatter", args=[likert.pk])
    _count(c, url)
    few, many = _count(c, url, {"system": ["s1"]}), _count(c, url)
    items = _place_items(likert)
    assert _count(c, url, {"system": ["s1"]}) - few == _count(c, url) - many
    cache.clear()
    response = c.get(url)
    points = response.context["data"]["points"]
    assert len(points) == 48
    by_pk = {i.pk: i for i in items}
    assert all(p["place"]["doc"] == by_pk[p["item_id"]].doc for p in points)
    _check_places(response.content.decode(), [(p["item_id"], p["url"]) for p in points], items)
