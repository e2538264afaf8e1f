"""An automated accessibility audit with axe-core (the npm package, fetched by `make axe`
into var/axe-core/, never from a CDN) on the pages an annotator uses: the login page, the
annotator's home, a unit of each protocol (fresh, and half answered with its
errors shown), the pages between and after the units, and the owner's pages of a campaign,
at desktop and phone widths. No violation of impact "serious" or "critical" may remain; a
last test shows that the audit does catch one."""

import re

import pytest

from tests.browser.axe_core import SCRIPT, VERSION
from tests.browser.conftest import log_in, next_screen
from tests.browser.test_annotate import world  # noqa: F401  (the five campaigns, one annotator "ann")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 390)
BLOCKING = ("serious", "critical")
# A landing page before the unit, if the campaign has one, is left through one of these buttons.
START = re.compile(r"^\s*(Start|Continue|Resume)\b", re.I)


@pytest.fixture(scope="session")
def axe_script():
    if not SCRIPT.is_file():
        # Not a skip: an audit that silently does not run would read as a pass.
        pytest.fail(
            f"axe-core {VERSION} is missing at {SCRIPT}: run `make axe` (`make test` does it first)", pytrace=False
        )
    return SCRIPT


@pytest.fixture
def audited_page(new_page, axe_script):
    """`open(width)`: a page whose audits run axe-core. The page's Content-Security-Policy
    allows only the site's own script files, so the injected engine needs `bypass_csp`."""

    def open_page(width: int):
        return new_page(viewport={"width": width, "height": 900}, bypass_csp=True)

    return open_page


def onward(page):
    """The way from a page between units (a landing page, a finished batch) to the next unit."""
    return page.get_by_role("button", name=START).or_(page.get_by_role("link", name=START))


def violations(page, axe_script) -> list[dict]:
    """axe.run() on the page as it is now: the serious and critical violations."""
    # Injected once per document: a page drawn again in place (errors shown, the next unit) still has
    # the engine, and parsing its half megabyte again would only cost Chromium time.
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(axe_script))
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")
    return [v for v in found if v["impact"] in BLOCKING]


def report(where: str, found: list[dict]) -> str:
    lines = [f"{where}: {len(found)} serious/critical accessibility violation(s) (axe-core {VERSION})"]
    for v in found:
        lines.append(f"- {v['id']} ({v['impact']}): {v['help']}  {v['helpUrl']}")
        for node in v["nodes"][:8]:
            # failureSummary: "Fix any of the following:" and the ways out, the first of them kept.
            why = (node["failureSummary"].splitlines()[1:] or [""])[0].strip()
            lines.append(f"    {' '.join(map(str, node['target']))}: {why}")
        if len(v["nodes"]) > 8:
            lines.append(f"    ... and {len(v['nodes']) - 8} more")
    return "\n".join(lines)


def assert_accessible(page, axe_script, where: str) -> None:
    found = violations(page, axe_script)
    assert not found, report(where, found)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_login_page(audited_page, axe_script, live_server, width):
    page = audited_page(width)
    page.goto("/accounts/login/")
    assert_accessible(page, axe_script, f"login page at {width} px")
    # With an error shown (a wrong password) too.
    page.get_by_label("Username").fill("nobody")
    page.get_by_label("Password").fill("wrong-password")
    page.get_by_role("button", name="Log in").click()
    page.locator(".alert-error").wait_for()
    assert_accessible(page, axe_script, f"login page with an error at {width} px")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_annotators_home(audited_page, axe_script, world, width):  # noqa: F811
    page = audited_page(width)
    log_in(page, "ann", "pw-123456")
    page.goto("/annotate/")
    page.get_by_role("heading", name="Annotate").wait_for()
    assert_accessible(page, axe_script, f"annotator home at {width} px")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("protocol", ["likert", "rankme", "pairwise", "bws", "esa", "cesa", "mqm"])
def test_a_unit_of_each_protocol(audited_page, axe_script, world, protocol, width):  # noqa: F811
    page = audited_page(width)
    log_in(page, "ann", "pw-123456")
    page.goto(f"/annotate/campaigns/{world[protocol].pk}/")
    if not page.locator("#unit-form").count():
        # A landing page before the unit: audited as it is, then left by its Start/Continue button.
        assert_accessible(page, axe_script, f"{protocol} campaign page at {width} px")
        onward(page).first.click()
    page.locator("body[data-unit-ready='1']").wait_for()
    assert_accessible(page, axe_script, f"{protocol} unit at {width} px")
    # Half answered and submitted: the errors (and for ESA the marked spans with their severity
    # menus) are on the page.
    HALF_ANSWER[protocol](page)
    page.get_by_role("button", name="Submit").click()
    page.locator("#unit-errors").wait_for(state="visible")
    assert_accessible(page, axe_script, f"{protocol} unit with errors shown at {width} px")


@pytest.mark.parametrize("protocol", ["likert", "rankme", "pairwise", "bws", "esa", "cesa", "mqm"])
def test_a_unit_drawn_in_place_of_the_one_sent(audited_page, axe_script, world, protocol):  # noqa: F811
    """The second unit is drawn by the page's script (no new document): audited like the first."""
    from tests.browser.test_unit_drawn import _answer

    page = audited_page(390)
    log_in(page, "ann", "pw-123456")
    page.goto(f"/annotate/campaigns/{world[protocol].pk}/")
    onward(page).first.click()
    page.locator("body[data-unit-ready='1']").wait_for()
    _answer(page, protocol, page.locator(".output-card[data-output]").count())
    with next_screen(page):
        page.keyboard.press("Enter")
    assert page.locator("#unit-form").count()
    assert_accessible(page, axe_script, f"{protocol} unit drawn in place at 390 px")


def _esa_half(page):
    page.locator("#esa-text").focus()
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("2")  # a major error on the first word
    page.keyboard.press("m")  # a missing-content marker; the score slider untouched


def _cesa_half(page):
    page.locator("[data-esa-text]").first.focus()
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("2")  # a major error in output 1
    page.keyboard.press("ArrowDown")  # output 2 (outlined as the current one)
    page.keyboard.press("m")
    page.keyboard.press("1")  # a minor missing-content marker; every score slider untouched
    page.keyboard.press("m")  # and the question open again


def _mqm_half(page):
    page.locator("#esa-text").focus()
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("a")  # Accuracy
    page.keyboard.press("3")  # Mistranslation
    page.keyboard.press("3")  # major: an error with its category and severity menus in the list
    page.keyboard.press("m")
    page.keyboard.press("f")  # missing content, Fluency: the subcategory question left open


HALF_ANSWER = {
    "likert": lambda page: page.keyboard.press("3"),  # fluency only; the adequacy slider untouched
    "rankme": lambda page: page.locator("input[type=number]").first.fill("50"),  # one output of three
    "pairwise": lambda page: page.keyboard.press("b"),  # the first criterion only
    "bws": lambda page: page.keyboard.press("1"),  # best only
    "esa": _esa_half,
    "cesa": _cesa_half,
    "mqm": _mqm_half,
}


@pytest.mark.parametrize("width", WIDTHS)
def test_the_pages_after_the_last_unit(audited_page, axe_script, world, width):  # noqa: F811
    """Every unit of a campaign done with the keyboard: the pages between and after them too."""
    page = audited_page(width)
    log_in(page, "ann", "pw-123456")
    page.goto(f"/annotate/campaigns/{world['bws'].pk}/")
    for _ in range(20):
        if page.locator("#unit-form").count():
            page.locator("body[data-unit-ready='1']").wait_for()
            page.keyboard.press("1")
            page.keyboard.press("3")
            with next_screen(page):
                page.keyboard.press("Enter")
            continue
        title = page.locator("h1").first.inner_text()
        assert_accessible(page, axe_script, f"page {title!r} at {width} px")
        if not onward(page).count():
            break
        onward(page).first.click()
    assert page.get_by_role("heading", name=re.compile("Nothing left")).count(), page.locator("h1").first.inner_text()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_researchers_pages(audited_page, axe_script, demo, width):
    """The owner's pages of the demo's first campaign, its project, dataset and an item (the
    annotator's pages above are the requirement; these keep the fixes made for them)."""
    from annotations.models import Campaign

    campaign = Campaign.objects.select_related("dataset__project").order_by("pk").first()
    item = campaign.dataset.items.order_by("position").first()
    page = audited_page(width)
    log_in(page, "demo", "demo")
    for url in [
        "/",
        f"/projects/{campaign.dataset.project.pk}/",
        f"/datasets/{campaign.dataset.pk}/",
        f"/items/{item.pk}/",
        f"/campaigns/{campaign.pk}/",
        f"/campaigns/{campaign.pk}/judgements/",
        f"/campaigns/{campaign.pk}/quality/",
        f"/campaigns/{campaign.pk}/analysis/",
        f"/campaigns/{campaign.pk}/analysis/meta/",
    ]:
        page.goto(url)
        page.wait_for_load_state("networkidle")  # the pages' scripts have drawn their charts and tables
        assert_accessible(page, axe_script, f"{url} at {width} px")


def test_the_audit_reports_a_violation_it_is_shown(audited_page, axe_script, live_server):
    """The audit is not blind: a password field stripped of its label is caught, and the
    message names the rule, its impact, its help and the failing element."""
    page = audited_page(1280)
    page.goto("/accounts/login/")
    page.evaluate("""() => {
        const input = document.querySelector("input[name=password]");
        input.closest("label").replaceWith(input);
    }""")
    found = violations(page, axe_script)
    assert [(v["id"], v["impact"]) for v in found] == [("label", "critical")]
    message = report("login page", found)
    assert "label (critical): Form elements must have labels" in message
    assert 'input[type="password"]: ' in message
