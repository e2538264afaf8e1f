"""An automated accessibility audit with axe-core (the npm package, fetched by `make axe`
into var/axe-core/, never from a CDN) on the pages an annotator uses: the login page, the
annotator's home, and a unit of each of the five protocols, at desktop and phone widths.
No violation of impact "serious" or "critical" may remain."""
import re

import pytest

from tests.browser.axe_core import SCRIPT, VERSION
from tests.browser.conftest import log_in
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
        pytest.fail(f"axe-core {VERSION} is missing at {SCRIPT}: run `make axe` (`make test` does it first)",
                    pytrace=False)
    return SCRIPT


@pytest.fixture
def audited_page(new_page, axe_script):
    """`open(width)`: a page whose audits run axe-core. The page's Content-Security-Policy
    allows only the site's own script files, so the injected engine needs `bypass_csp`."""

    def open_page(width: int):
        return new_page(viewport={"width": width, "height": 900}, bypass_csp=True)

    return open_page


def violations(page, axe_script) -> list[dict]:
    """axe.run() on the page as it is now: the serious and critical violations."""
    page.add_script_tag(path=str(axe_script))
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")
    return [v for v in found if v["impact"] in BLOCKING]


def report(where: str, found: list[dict]) -> str:
    lines = [f"{where}: {len(found)} serious/critical accessibility violation(s) (axe-core {VERSION})"]
    for v in found:
        lines.append(f"- {v['id']} ({v['impact']}): {v['help']}  {v['helpUrl']}")
        for node in v["nodes"][:8]:
            lines.append(f"    {' '.join(map(str, node['target']))}: {node['failureSummary'].splitlines()[-1].strip()}")
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
@pytest.mark.parametrize("protocol", ["likert", "rankme", "pairwise", "bws", "esa"])
def test_a_unit_of_each_protocol(audited_page, axe_script, world, protocol, width):  # noqa: F811
    page = audited_page(width)
    log_in(page, "ann", "pw-123456")
    page.goto(f"/annotate/campaigns/{world[protocol].pk}/")
    if not page.locator("#unit-form").count():
        # A landing page before the unit: audited as it is, then left by its Start/Continue button.
        assert_accessible(page, axe_script, f"{protocol} campaign page at {width} px")
        page.get_by_role("button", name=START).first.click()
    page.locator("body[data-unit-ready='1']").wait_for()
    assert_accessible(page, axe_script, f"{protocol} unit at {width} px")
