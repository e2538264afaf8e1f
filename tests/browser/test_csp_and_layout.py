"""Every page works under the production Content-Security-Policy, and the
dataset pages fit a 390 px phone without scrolling sideways or breaking words.

The CSP test crawls the site as an owner (every same-origin link from the
project list, so pages added later are covered too) plus the pages no link
reaches, and fails on any violation the browser reports.
"""

from urllib.parse import urljoin, urlparse

import pytest

from annotations.models import Dataset, ImportJob
from tests.annotations.factories import ItemFactory, OutputFactory, SystemFactory, UserFactory
from tests.browser.conftest import log_in
from tests.workbench.test_deploy import CSP, parse_csp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LISTEN = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " in " + location.pathname);
});
"""
# The documentation site (/docs/, every page's Help link) is visited apart below: its 40-odd pages
# would take the crawl's budget.
SKIP = ("/accounts/logout/", "/admin/logout/", "/static/", "/media/", "/docs/")
MAX_PAGES = 60


@pytest.fixture
def demo(full_demo):
    """The whole demo, finished campaigns and metric runs included (so the crawl meets analysis
    pages with figures), with an import running and one failed; the demo owner."""
    demo = UserFactory._meta.model.objects.get(username="demo")
    project = Dataset.objects.get(name="demo-news-de-en").project
    ImportJob.objects.create(
        user=demo,
        project=project,
        dataset_name="big",
        filename="big.jsonl",
        size=3 * 2**20,
        status="running",
        phase="reading",
        progress=0.4,
    )
    ImportJob.objects.create(
        user=demo,
        project=project,
        dataset_name="bad",
        filename="bad.jsonl",
        size=3 * 2**20,
        status="failed",
        phase="done",
        progress=1,
        errors=["line 3: invalid JSON: <b>x</b>"],
    )
    return demo


def violations(page) -> list[str]:
    return page.evaluate("window.__csp || []")


def test_no_page_violates_the_content_security_policy(page, live_server, demo):
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.add_init_script(LISTEN)
    found: list[str] = []

    def visit(path: str):
        response = page.goto(path)
        assert response.status < 500, (path, response.status)
        # The policy is really in force on this page (no violations without one would prove nothing).
        assert parse_csp(response.headers.get("content-security-policy", "")) == parse_csp(CSP), path
        found.extend(violations(page))

    # Anonymous pages first.
    for path in ("/accounts/login/", "/admin/login/", "/api/docs/", "/api/redoc/"):
        visit(path)
    log_in(page, "demo", "demo")
    queue, seen = ["/"], set()
    while queue and len(seen) < MAX_PAGES:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        visit(path)
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))"):
            url = urlparse(urljoin(live_server.url + path, href))
            if url.netloc == urlparse(live_server.url).netloc and not url.path.startswith(SKIP):
                target = url.path + (f"?{url.query}" if url.query else "")
                if target not in seen:
                    queue.append(target)
    for path in (
        "/datasets/upload/",
        f"/imports/{ImportJob.objects.get(dataset_name='big').pk}/",
        f"/imports/{ImportJob.objects.get(dataset_name='bad').pk}/",
        "/api/docs/",
        "/api/redoc/",
        "/no-such-page/",
        "/docs/",
        "/docs/tutorials/first-study/",
        "/docs/reference/commands/correlate/",
    ):
        visit(path)
    # The crawl reached the pages of every kind.
    kinds = {p.split("/")[1] for p in seen}
    assert {"", "projects", "datasets", "items"} <= kinds, seen
    assert not found, found
    assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console


def test_api_docs_render_under_the_policy(page, live_server, demo):
    page.add_init_script(LISTEN)
    page.goto("/api/docs/")
    page.locator(".opblock").first.wait_for()  # Swagger UI built the operations from the schema
    assert page.locator(".opblock").count() >= 10
    page.goto("/api/redoc/")
    page.get_by_text("NLG evaluation workbench API").first.wait_for()
    page.locator("img[alt='redocly logo']").wait_for(state="attached")
    assert page.locator("img[alt='redocly logo']").get_attribute("src").startswith("/static/")
    assert violations(page) == []


WORD_BROKEN = """(selector) => {
  const broken = [];
  for (const cell of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\\S+/g; let m;
      while ((m = re.exec(node.data))) {
        if (m[0].length > 25) continue;  // only an over-long token may break
        const range = document.createRange();
        range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""


def test_dataset_pages_fit_a_phone(new_page, demo, screenshot_dir):
    dataset = Dataset.objects.get(name="demo-news-de-en")
    item = ItemFactory(
        dataset=dataset,
        external_id="x-" + "long" * 20,
        position=99,
        source="https://example.org/" + "a" * 200 + " Donaudampfschifffahrtsgesellschaft",
    )
    OutputFactory(item=item, system=SystemFactory(dataset=dataset, name="s" * 60), text="w" * 300)
    page = new_page(viewport={"width": 390, "height": 844})
    page.add_init_script(LISTEN)
    log_in(page, "demo", "demo")
    for path in (
        f"/datasets/{dataset.pk}/",
        f"/datasets/{dataset.pk}/?q=Hamburg",
        f"/projects/{dataset.project.pk}/",
        "/datasets/upload/",
        f"/imports/{ImportJob.objects.get(dataset_name='bad').pk}/",
        f"/datasets/{Dataset.objects.get(name='demo-restaurants-d2t').pk}/",
    ):
        page.goto(path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (path, width)
        if path.startswith("/datasets/") and "upload" not in path:
            assert page.evaluate(WORD_BROKEN, ".items-table td") == [], path
    page.goto(f"/datasets/{dataset.pk}/")
    page.screenshot(path=screenshot_dir / "dataset-390.png", full_page=True)
    assert violations(page) == []


def test_the_import_job_page_follows_the_job(page, live_server, demo):
    job = ImportJob.objects.get(dataset_name="big")
    page.add_init_script(LISTEN)
    log_in(page, "demo", "demo")
    page.goto(f"/imports/{job.pk}/")
    page.get_by_text("Reading and checking the file").wait_for()
    dataset = Dataset.objects.get(name="demo-news-de-en")
    ImportJob.objects.filter(pk=job.pk).update(
        status="succeeded",
        phase="done",
        progress=1,
        dataset=dataset,
        result={"items": 10, "outputs": 30, "unchanged": False},
    )
    page.get_by_text("10 items, 30 outputs.").wait_for(timeout=10_000)  # polled, no reload
    page.get_by_role("link", name="Open the dataset").click()
    page.wait_for_url(f"**/datasets/{dataset.pk}/")
    bad = ImportJob.objects.get(dataset_name="bad")
    page.goto(f"/imports/{bad.pk}/")
    assert page.locator(".error-list li").inner_text() == "line 3: invalid JSON: <b>x</b>"  # shown as text
    assert violations(page) == []
