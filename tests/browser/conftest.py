"""Playwright (sync API) driving Debian's Chromium against pytest-django's live server."""
import os
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django would
# otherwise refuse ORM calls made from the test body.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (install Debian's chromium: `make browser`)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    # Nothing outside the live server may load (no CDN, no fonts): fail loudly if a page tries.
    outside: list[str] = []

    def guard(route):
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()
    assert not outside, f"pages tried to load external resources: {outside}"


@pytest.fixture
def screenshot_dir(tmp_path) -> Path:
    """Where screenshots go: $WORKBENCH_SCREENSHOTS if set (to look at them), else a temp dir."""
    target = Path(os.environ.get("WORKBENCH_SCREENSHOTS") or tmp_path / "screenshots")
    target.mkdir(parents=True, exist_ok=True)
    return target


def log_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
