"""Issue 41, the item page in Debian's Chromium at 390 px: the item's document (its segments in order, the
item's own marked, a right-to-left segment read right to left), its image (fetched, decoded, announced by
its alt text, no wider than the screen), reached with the keyboard alone, and no serious or critical
axe-core violation."""

import json

import pytest

from annotations.models import Item, Membership
from annotations.services.imports.datasets import dataset_import
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import assert_accessible, audited_page, axe_script  # noqa: F401
from tests.browser.test_media_pages import png

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_item_page_at_390px_with_its_document_and_image(audited_page, axe_script, live_server, settings, tmp_path):  # noqa: F811
    settings.WORKBENCH_MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "bus.png").write_bytes(png(1200, 300))
    rows = [
        {
            "item": "seg-2",
            "source": "The bus stops at the market square.",
            "doc": "news-7",
            "doc_pos": 2,
            "media": {"source": {"type": "image", "path": "bus.png", "alt": "A red bus at a stop"}},
            "outputs": {"sysA": "Der Bus hält am Marktplatz."},
        },
        {
            "item": "seg-0",
            "source": "A long first segment " + "with many words " * 12,
            "doc": "news-7",
            "doc_pos": 0,
            "outputs": {"sysA": "Ein langer erster Abschnitt."},
        },
        {
            "item": "seg-1",
            "source": "האוטובוס מגיע בבוקר.",
            "doc": "news-7",
            "doc_pos": 1,
            "outputs": {"sysA": "Der Bus kommt am Morgen."},
        },
    ]
    dataset = dataset_import(
        stream="".join(json.dumps(r) + "\n" for r in rows).encode(),
        dataset_name="news",
        project_name="News",
        filename="d.jsonl",
    ).dataset
    owner = UserFactory(username="olivia")
    MembershipFactory(project=dataset.project, user=owner, role=Membership.Role.OWNER)
    page = audited_page(390)
    log_in(page, "olivia", "pw-123456")
    page.goto(f"/items/{Item.objects.get(external_id='seg-2').pk}/")

    segments = page.locator(".item-document-segment")
    assert [s.get_attribute("data-item") for s in segments.all()] == ["seg-0", "seg-1", "seg-2"]
    current = page.locator(".item-document-segment[aria-current='true']")
    assert current.get_attribute("data-item") == "seg-2"
    hebrew = page.locator(".item-document-segment[data-item='seg-1'] .segment-text")
    assert hebrew.evaluate("el => getComputedStyle(el).direction") == "rtl"
    image = page.get_by_role("img", name="A red bus at a stop")
    image.wait_for()
    page.wait_for_function("document.querySelector('img.media-image').complete")
    assert page.evaluate("document.querySelector('img.media-image').naturalWidth") == 1200
    assert image.bounding_box()["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling

    # The keyboard alone: Tab reaches the link to the document's first segment, Enter opens it.
    link = page.locator(".item-document-segment[data-item='seg-0'] a.segment-id")
    for _ in range(60):
        page.keyboard.press("Tab")
        if link.evaluate("el => el === document.activeElement"):
            break
    else:
        raise AssertionError("Tab never reached the first segment's link")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/items/{Item.objects.get(external_id='seg-0').pk}/")
    page.locator(".item-document-segment[aria-current='true'][data-item='seg-0']").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert_accessible(page, axe_script, "item page of seg-0 at 390 px")
    page.goto(f"/items/{Item.objects.get(external_id='seg-2').pk}/")
    page.locator("img.media-image").wait_for()
    assert_accessible(page, axe_script, "item page of seg-2 (image) at 390 px")
