"""The demo's protocol pages half-answered, at 1280 px and 390 px: no horizontal
scroll, no system name; screenshots go to $WORKBENCH_SCREENSHOTS (docs/screenshots in
the README) when it is set."""

import pytest

from annotations.models import Campaign, System
from tests.browser.conftest import log_in, open_unit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _half_answer(page, protocol):
    if protocol == "likert":
        page.keyboard.press("4")
    elif protocol == "rankme":
        inputs = page.locator('input[name^="s-0-"]')
        for i, value in enumerate(["120", "80", "120"][: inputs.count()]):
            inputs.nth(i).fill(value)
    elif protocol == "pairwise":
        page.keyboard.press("a")
    elif protocol == "bws":
        page.keyboard.press("1")
        page.keyboard.press("3")
    elif protocol == "cesa":
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("2")  # a major error in output 1
        page.keyboard.press("s")
        page.keyboard.press("PageUp")
        page.keyboard.press("PageUp")  # output 1 scored 20
        page.keyboard.press("t")
        page.keyboard.press("ArrowDown")  # output 2
        page.keyboard.press("m")
        page.keyboard.press("1")  # a minor missing-content marker
    elif protocol == "esa":
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("2")
        page.keyboard.press("m")
        page.keyboard.press("1")
    elif protocol == "mqm":
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("a")  # Accuracy
        page.keyboard.press("3")  # Mistranslation
        page.keyboard.press("3")  # major
        page.keyboard.press("ArrowRight")
        page.keyboard.press("f")  # Fluency: its subcategory question left open


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_protocol_pages_at_desktop_and_phone_width(new_page, demo, screenshot_dir, width, height):
    page = new_page(viewport={"width": width, "height": height})
    log_in(page, "annot", "annot")
    names = list(System.objects.values_list("name", flat=True))
    for campaign in Campaign.objects.order_by("pk"):
        open_unit(page, campaign.pk)
        page.locator(
            "body[data-unit-ready='1']"
        ).wait_for()  # a selector: polling a JS string needs eval, which the CSP forbids
        _half_answer(page, campaign.protocol)
        html = page.content()
        assert not [n for n in names if f">{n}<" in html or f'"{n}"' in html], campaign.protocol
        assert page.evaluate("document.documentElement.scrollWidth") <= width, campaign.protocol
        page.screenshot(path=screenshot_dir / f"annotate-{campaign.protocol}-{width}.png", full_page=True)
    if width == 1280:
        page.context.clear_cookies()
        log_in(page, "demo", "demo")
        likert = Campaign.objects.get(protocol="likert")
        page.goto(f"/campaigns/{likert.pk}/")
        page.screenshot(path=screenshot_dir / "campaign-progress-1280.png", full_page=True)
        page.goto(f"/projects/{likert.dataset.project_id}/campaigns/new/")
        page.select_option("#id_protocol", "esa")
        page.fill("#id_name", "New ESA campaign")
        page.get_by_role("button", name="Preview as an annotator").click()
        page.screenshot(path=screenshot_dir / "campaign-setup-preview-1280.png", full_page=True)
