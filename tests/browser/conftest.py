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

from tests.browser.login import session_log_in
from tests.waiting import wait_until

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

    def __init__(self, page, live_server_url: str | None = None):
        self.page = page
        self.pending = False
        # Where `log_in` may hand the page a session made in this process (tests/browser/login.py):
        # the live server's address when the page was opened on it, else None.
        self.live_server_url = live_server_url
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

    def open_page(
        *, base_url: str | None = None, viewport: dict | None = None, allow: tuple[str, ...] = (), **context_options
    ) -> Loaded:
        """`allow`: other origins the test itself serves (a stub crowd platform), which may load."""
        base = base_url or request.getfixturevalue("live_server").url
        context = browser.new_context(
            base_url=base, viewport=viewport or {"width": 1280, "height": 900}, **context_options
        )
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
        return Loaded(page, _Navigations(page, base if base_url is None else None))

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


class Snapshot:
    """Every row of every table of the test database, and its sequences, as they were when taken;
    `restore()` puts them back. A test that needs the demo gets it for a fraction of what
    `load_demo` costs (it imports datasets, simulates annotators and scores every output). The
    live server's tests are transactional: each ends with the database flushed, so the demo
    cannot simply stay; copied back, it is the very rows `load_demo` wrote, ids included."""

    def __init__(self):
        from django.db import connection

        raw = connection.connection  # psycopg's own connection: COPY is not in Django's cursor API
        self.tables = {}
        for table in connection.introspection.django_table_names(only_existing=True, include_views=False):
            with raw.cursor() as cursor, cursor.copy(f'COPY "{table}" TO STDOUT (FORMAT binary)') as copy:
                self.tables[table] = b"".join(bytes(block) for block in copy)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT schemaname || '.' || sequencename, last_value FROM pg_sequences WHERE last_value IS NOT NULL"
            )
            self.sequences = cursor.fetchall()

    def restore(self) -> None:
        from django.contrib.contenttypes.models import ContentType
        from django.db import connection, transaction

        with transaction.atomic():
            raw = connection.connection
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL DEFERRED")  # Django's foreign keys: checked at commit
                # The rows go back as they were taken: the triggers that keep the unit counters
                # (annotations_unitcount) must not fire again on the copied units and assignments,
                # or the counters' own rows, copied too, would collide with the ones they add.
                cursor.execute("SET LOCAL session_replication_role = replica")
                # Whatever the flush left (content types and permissions, which it recreates) goes too:
                # the snapshot's own rows are the ones its foreign keys point to. DELETE, not TRUNCATE:
                # the tables are all but empty, and TRUNCATE would make new files for each of them.
                # One round trip for every table, as tests/db_flush.py does.
                cursor.execute("".join(f'DELETE FROM "{table}";' for table in self.tables))
            for table, data in self.tables.items():
                if len(data) > 19 + 2:  # more than the header and trailer of an empty binary COPY
                    with raw.cursor() as cursor, cursor.copy(f'COPY "{table}" FROM STDIN (FORMAT binary)') as copy:
                        copy.write(data)
            with connection.cursor() as cursor:
                for sequence, value in self.sequences:
                    # Never backwards: ids handed out since (another test's rows, cached by id) stay unique.
                    cursor.execute(
                        f"SELECT setval(%s, GREATEST(%s, (SELECT last_value FROM {sequence})))", [sequence, value]
                    )
        ContentType.objects.clear_cache()


@pytest.fixture(scope="session")
def set_up_snapshots() -> dict:
    """Set-ups that many tests share, built once per session (per pytest-xdist process): {key:
    (its Snapshot, what it returned)}. See `built_once_per_session`."""
    return {}


def built_once_per_session(snapshots: dict, key: str, build):
    """`build()` (rows written to the database, a value naming them) the first time `key` is asked
    for in the session; afterwards its rows copied back (`Snapshot.restore`, the same ids) and the
    value it returned the first time. The value must name rows by id only (read them again per
    test): a model instance would carry one test's changes into the next."""
    if key in snapshots:
        snapshot, value = snapshots[key]
        snapshot.restore()
        # The cache (this process's: the live server runs here) holds what earlier tests computed from
        # rows with these very ids (figures, progress tables): emptied, as if the rows were new.
        from django.core.cache import cache

        cache.clear()
        return value
    value = build()
    snapshots[key] = (Snapshot(), value)
    return value


@pytest.fixture(scope="session")
def demo_snapshots(django_db_setup, django_db_blocker):
    """`load_demo --without-finished` run once per session: {"open": its snapshot, "full": None until
    `full_demo` first asks}. The database is flushed afterwards, as pytest-django leaves it after a
    transactional test, so tests that do not ask for the demo never see it."""
    with django_db_blocker.unblock():
        call_command("load_demo", "--without-finished", verbosity=0, stdout=open(os.devnull, "w"))
        snapshots = {"open": Snapshot(), "full": None}
        call_command("flush", verbosity=0, interactive=False)
    return snapshots


@pytest.fixture
def demo(live_server, demo_snapshots):
    """The demo projects (`load_demo --without-finished`); its users are demo/demo (owner) and
    annot/annot (annotator)."""
    demo_snapshots["open"].restore()


@pytest.fixture
def full_demo(live_server, demo_snapshots):
    """The whole demo (`load_demo`): the finished campaigns, judged by simulated annotators, and the
    metric runs (BLEU, chrF, BERTScore) too, computed once per session: the first test to ask runs
    `load_demo` over the open demo (it is idempotent: it adds the rest) and keeps a snapshot."""
    if demo_snapshots["full"] is None:
        demo_snapshots["open"].restore()
        call_command("load_demo", verbosity=0, stdout=open(os.devnull, "w"))
        demo_snapshots["full"] = Snapshot()
    else:
        demo_snapshots["full"].restore()


def browser_wait_until(page, predicate, timeout: float, what: str):
    """`wait_until` for a test that drives a browser: between polls Playwright's event loop
    keeps running (a plain `time.sleep` would hold every request of the page at the
    context's route handler, which runs in this thread, so the page could not save anything)."""
    return wait_until(predicate, timeout, what, pause=lambda seconds: page.wait_for_timeout(seconds * 1000))


def log_in(page, username: str, password: str) -> None:
    """Log in as `username` and land where the login form sends a user. On the live server, with a
    session made the way the form would make it (tests/browser/login.py), without driving the form;
    on any other server (test_production's), through the form."""
    if isinstance(page, Loaded) and page._state.live_server_url:
        return session_log_in(page, page._state.live_server_url, username, password)
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
