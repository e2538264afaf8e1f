"""Issue 41: the item page shows the item's document: the other segments of the same document in
document order (doc_pos), the item's own marked, each text in its own direction; none for an item in
no document. Everything escaped."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotations.selectors.documents import item_document
from tests.annotations.factories import DatasetFactory, ItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def doc_items(project):
    dataset = DatasetFactory(project=project, name="docs")
    # Inserted out of document order (dataset positions differ from doc_pos), with a second document.
    rows = [
        ("s3", "news", 2, "Third <b>sentence</b>."),
        ("s1", "news", 0, "First sentence."),
        ("x1", "other", 0, "Else."),
    ]
    rows += [("s2", "news", 1, "מה שלום"), ("lone", "", None, "No document.")]
    return {
        ext: ItemFactory(dataset=dataset, external_id=ext, position=k, doc=doc, doc_pos=pos, source=source)
        for k, (ext, doc, pos, source) in enumerate(rows)
    }


def _segments(html: str) -> list[tuple[str, bool]]:
    return [
        (m.group(3), bool(m.group(2)))
        for m in re.finditer(
            r'<li class="item-document-segment( current)?"( aria-current="true")? data-item="([^"]+)"', html
        )
    ]


def test_the_item_page_lists_its_document_in_order(client, owner, doc_items):
    client.force_login(owner)
    html = client.get(reverse("item-detail", args=[doc_items["s2"].pk])).content.decode()
    assert _segments(html) == [("s1", False), ("s2", True), ("s3", False)]
    assert "Else." not in html  # another document of the dataset
    # The others link to their pages; texts take their own direction (Hebrew reads right to left).
    assert f'<a class="segment-id" href="{reverse("item-detail", args=[doc_items["s1"].pk])}">s1</a>' in html
    assert (
        '<strong class="segment-id">s2</strong>' in html
        and '<div class="segment-text" dir="auto">מה שלום</div>' in html
    )
    assert "Third &lt;b&gt;sentence&lt;/b&gt;." in html and "<b>sentence</b>" not in html
    assert "3 segments" in html


def test_an_item_in_no_document_has_no_document_section(client, owner, doc_items):
    client.force_login(owner)
    html = client.get(reverse("item-detail", args=[doc_items["lone"].pk])).content.decode()
    assert "item-document" not in html


def test_a_long_document_keeps_the_current_segment_in_view(doc_items):
    item = doc_items["s3"]
    found = item_document(item=item, limit=1)
    assert found["total"] == 3
    assert [(s["external_id"], s["current"]) for s in found["segments"]] == [("s1", False), ("s3", True)]
    assert item_document(item=doc_items["lone"]) is None


def test_the_item_page_reads_the_document_in_two_statements(client, owner, doc_items):
    client.force_login(owner)
    url = reverse("item-detail", args=[doc_items["s2"].pk])
    client.get(url)  # warm (session, content types)
    with CaptureQueriesContext(connection) as with_doc:
        client.get(url)
    with CaptureQueriesContext(connection) as no_doc:
        client.get(reverse("item-detail", args=[doc_items["lone"].pk]))
    assert len(with_doc) - len(no_doc) == 2
