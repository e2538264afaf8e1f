"""Log in and browse projects -> datasets -> items, search, and see outputs side by side."""

import pytest

from annotations.models import Membership
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.browser.conftest import log_in, unwrap

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_log_in_and_browse_to_an_item_with_outputs_side_by_side(page, demo, screenshot_dir):
    page.goto("/")
    page.wait_for_url("**/accounts/login/**")  # anonymous: sent to the login page
    page.screenshot(path=screenshot_dir / "login.png")
    log_in(page, "demo", "demo")

    page.get_by_role("link", name="Demo").click()
    page.get_by_role("heading", name="Datasets").wait_for()
    page.screenshot(path=screenshot_dir / "project.png", full_page=True)

    page.get_by_role("link", name="demo-restaurants-d2t").first.click()
    assert page.locator('[data-stat="items"]').inner_text() == "12"
    assert page.locator('[data-stat="systems"]').inner_text() == "3"
    page.screenshot(path=screenshot_dir / "dataset.png", full_page=True)

    page.get_by_role("link", name="e2e-001", exact=True).click()
    page.get_by_role("heading", name="e2e-001").wait_for()
    # The layout is measured on the styled page: the `page` fixture waits for `load` (stylesheet in)
    # after each navigation (a box read before it arrives is the unstyled one).
    # The input as a table of triples.
    assert page.locator("table.triples tbody tr").count() == 7
    cards = page.locator("article.output-card")
    assert cards.count() == 3
    boxes = [cards.nth(i).bounding_box() for i in range(3)]
    # Side by side: one row, left to right, not overlapping.
    assert len({round(b["y"]) for b in boxes}) == 1
    assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"]
    assert boxes[1]["x"] + boxes[1]["width"] <= boxes[2]["x"]
    assert [cards.nth(i).get_attribute("data-system") for i in range(3)] == ["llm-7b", "seq2seq", "template"]
    page.screenshot(path=screenshot_dir / "item.png", full_page=True)

    # Next item by link, then back with the left arrow key.
    page.get_by_role("link", name="e2e-002 →").click()
    page.get_by_role("heading", name="e2e-002").wait_for()
    page.keyboard.press("ArrowLeft")
    page.get_by_role("heading", name="e2e-001").wait_for()


def test_search_and_filter_a_dataset(page, demo, screenshot_dir):
    log_in(page, "demo", "demo")
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name="demo-news-de-en").first.click()
    page.get_by_placeholder("Search item id, source, references or outputs").fill("Hamburg")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**q=Hamburg**")
    assert page.locator("a.item-link").all_inner_texts() == ["mt-de-en-001"]

    # Filter by system: its outputs appear in the list.
    page.get_by_role("link", name="Clear").click()
    page.locator('select[name="system"]').select_option(label="phrase-based")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**system=**")
    assert page.locator("a.item-link").count() == 10
    assert page.get_by_text("Output of phrase-based").is_visible()
    page.screenshot(path=screenshot_dir / "search.png", full_page=True)


def test_html_in_an_output_is_shown_as_text_and_never_runs(page, live_server):
    user = UserFactory(username="rosa")
    ds = DatasetFactory(name="xss")
    MembershipFactory(project=ds.project, user=user, role=Membership.Role.RESEARCHER)
    evil = '<script>window.__pwned = 1</script><img src="/nope" onerror="window.__pwned = 2">'
    item = ItemFactory(dataset=ds, external_id="x1", source=evil)
    OutputFactory(item=item, system=SystemFactory(dataset=ds, name="sys"), text=evil)
    log_in(page, "rosa", "pw-123456")
    page.goto(f"/items/{item.pk}/")
    assert page.locator("article.output-card .output-text").inner_text() == evil
    assert page.locator(".source-text").inner_text() == evil
    assert page.locator("article.output-card img").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_annotator_sees_no_import_button(page, demo):
    log_in(page, "annot", "annot")
    # Someone who only annotates starts at their home (their campaigns): projects are for staff.
    page.wait_for_url("**/annotate/")
    assert page.get_by_role("link", name="Import a dataset").count() == 0
    response = page.goto("/datasets/upload/")
    assert response.status == 404


def test_the_page_fixture_waits_for_load_after_a_click(page, demo):
    """A link's click returns once the next page has started loading; the fixture's page then
    waits for its `load` (stylesheet applied) before anything reads it. Each request made slow
    here, so a read that did not wait would find the document still loading."""
    log_in(page, "demo", "demo")
    cdp = page.context.new_cdp_session(unwrap(page))
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 800, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    page.get_by_role("link", name="Demo").click()
    assert page.evaluate("document.readyState") == "complete"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(245, 246, 248)"
