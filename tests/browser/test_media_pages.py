"""Issue 41, an image source in Debian's Chromium at 390 px: the image is fetched through the unit's
media URL, decoded (a real PNG), announced by its alt text and no wider than the phone's screen."""

import json
import struct
import zlib

import pytest

from annotations.models import Membership
from annotations.services.campaigns import campaign_create
from annotations.services.imports.datasets import dataset_import
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.browser.conftest import log_in, open_unit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def png(width: int, height: int) -> bytes:
    """A red RGB image, written as the PNG specification lays it out (signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def test_an_image_source_at_390px(new_page, live_server, settings, tmp_path):
    settings.WORKBENCH_MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "bus.png").write_bytes(png(1200, 300))
    line = {
        "item": "img-1",
        "outputs": {"cap-SECRET": "A red bus."},
        "media": {"source": {"type": "image", "path": "bus.png", "alt": "A red bus at a stop"}},
    }
    dataset = dataset_import(
        stream=(json.dumps(line) + "\n").encode(), dataset_name="images", project_name="Pictures", filename="d.jsonl"
    ).dataset
    campaign = campaign_create(
        dataset=dataset, name="Captions", protocol="likert", criteria=["accuracy"], scale_min=1, scale_max=5
    )
    MembershipFactory(project=dataset.project, user=UserFactory(username="ann"), role=Membership.Role.ANNOTATOR)
    page = new_page(viewport={"width": 390, "height": 844})
    log_in(page, "ann", "pw-123456")
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    image = page.get_by_role("img", name="A red bus at a stop")
    image.wait_for()
    page.locator("img.media-image[src*='/media/source/']").wait_for()
    assert page.evaluate("document.querySelector('img.media-image').complete")
    assert page.evaluate("document.querySelector('img.media-image').naturalWidth") == 1200
    assert image.bounding_box()["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling
    assert "SECRET" not in page.content() and "bus.png" not in page.content()
