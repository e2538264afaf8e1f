"""Playwright (sync API) driving Debian's Chromium against pytest-django's live server.

Every page a test drives comes from `new_page` (or `page`, its default), which
waits for the `load` event after every navigation: a click on a link, a form
submit or a key press that leaves the page, a reload, a script's redirect.
Playwright's click only waits for the new page to *start* loading, so a style
or a box read right after it can be the unstyled one (the clean-clone suite
failed that way on a loaded machine); waiting in one place keeps every test
from having to remember.
"""
import os
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.conftest import wait_until

# Playwright's sync API runs an event loop in this thread; Django would
# otherwise refuse ORM calls made from the test body.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


class Loaded:
    """A Page (or a Locator, Keyboard, Mouse of it) that, before each use, waits
    for the `load` event of any document the main frame navigated to since
    the last use. Values that belong to the page come back wrapped the same
    way; everything else is Playwright's own object."""

    def __init__(self, target, state: "_Navigations"):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_state", state)

    def __getattr__(self, name):
        self._state.settle()
        value = getattr(self._target, name)
        if not callable(value):
            return self._state.wrap(value)

        def call(*args, **kwargs):
            self._state.settle()
            args = [unwrap(a) for a in args]
            kwargs = {k: unwrap(v) for k, v in kwargs.items()}
            return self._state.wrap(value(*args, **kwargs))

        return call

    def __setattr__(self, name, value):
        setattr(self._target, name, value)

    def __repr__(self):
        return f"Loaded({self._target!r})"


def unwrap(value):
    """Playwright's own object (for `expect(...)` and arguments such as `has=`)."""
    return value._target if isinstance(value, Loaded) else value


class _Navigations:
    """Notes main-frame navigations (Playwright's `framenavigated`) and waits for their `load`."""

    def __init__(self, page):
        self.page = page
        self.pending = False
        page.on("framenavigated", self.noted)

    def noted(self, frame):
        if frame.parent_frame is None:
            self.pending = True

    def settle(self):
        if self.pending:
            self.pending = False
            # Returns at once when the document has loaded already (a same-document navigation too).
            self.page.wait_for_load_state("load")

    def wrap(self, value):
        from playwright.sync_api import FrameLocator, Keyboard, Locator, Mouse

        return Loaded(value, self) if isinstance(value, (Locator, FrameLocator, Keyboard, Mouse)) else value


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
def new_page(browser, request):
    """Open a page in a new browser context (own cookies and storage), as `new_page(viewport=..., ...)`.

    `base_url` defaults to the live server's. Nothing outside `base_url` may
    load (no CDN, no fonts): the test fails loudly if a page tries.
    """
    contexts, outside = [], []

    def open_page(*, base_url: str | None = None, viewport: dict | None = None, allow: tuple[str, ...] = (),
                  **context_options) -> Loaded:
        """`allow`: other origins the test itself serves (a stub crowd platform), which may load."""
        base = base_url or request.getfixturevalue("live_server").url
        context = browser.new_context(base_url=base, viewport=viewport or {"width": 1280, "height": 900},
                                      **context_options)
        contexts.append(context)

        def guard(route):
            if route.request.url.startswith((base, *allow)):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        context.route("**/*", guard)
        page = context.new_page()
        page.set_default_timeout(10_000)
        return Loaded(page, _Navigations(page))

    yield open_page
    for context in contexts:
        context.close()
    assert not outside, f"pages tried to load external resources: {outside}"


@pytest.fixture
def page(new_page, live_server):
    return new_page()


@pytest.fixture
def screenshot_dir(tmp_path) -> Path:
    """Where screenshots go: $WORKBENCH_SCREENSHOTS if set (to look at them), else a temp dir."""
    target = Path(os.environ.get("WORKBENCH_SCREENSHOTS") or tmp_path / "screenshots")
    target.mkdir(parents=True, exist_ok=True)
    return target


@pytest.fixture
def demo(live_server):
    """The demo projects (`load_demo`); its users are demo/demo (owner) and annot/annot (annotator)."""
    call_command("load_demo", "--without-finished", verbosity=0, stdout=open(os.devnull, "w"))


def browser_wait_until(page, predicate, timeout: float, what: str):
    """`wait_until` for a test that drives a browser: between polls Playwright's event loop
    keeps running (a plain `time.sleep` would hold every request of the page at the
    context's route handler, which runs in this thread, so the page could not save anything)."""
    return wait_until(predicate, timeout, what, pause=lambda seconds: page.wait_for_timeout(seconds * 1000))


def log_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")


@contextmanager
def next_screen(page, timeout: float | None = None):
    """Around an action that leaves the unit on screen (a submit, a skip): wait until the next one is
    there, drawn in place by the page's script (annotate.js answers a submit with the next unit as
    data: no navigation) or a new document (the finished page, a completion code, a skip's POST).
    The work page names its unit on `<body data-assignment>`; off it, this is `expect_navigation`."""
    old = page.locator("body").get_attribute("data-assignment")
    if old is None:
        with page.expect_navigation(timeout=timeout):
            yield
        return
    yield
    page.locator(f"body:not([data-assignment='{old}'])").wait_for(state="attached", timeout=timeout)
    page.wait_for_load_state("load")  # at once when the unit was drawn in place
    if page.locator("#unit-config").count():
        page.locator("body[data-unit-ready='1']").wait_for(state="attached")


def open_unit(page, campaign_pk: int) -> None:
    """Open a campaign's landing page and press Start / Continue: the POST that hands out
    (or resumes) the unit, then the unit page (GETs never hand out a unit)."""
    page.goto(f"/annotate/campaigns/{campaign_pk}/")
    page.locator("#start").click()
    page.wait_for_url(f"**/annotate/campaigns/{campaign_pk}/unit/")
