"""An owner creates a project, pastes three usernames, hands one login link to a person whose
browser has never seen the workbench: it lands on the annotator's home, logged in, once."""

import pytest

from annotations.models import LoginLink, Membership
from tests.annotations.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner(live_server):
    """An owner of a project: allowed to create projects (WORKBENCH_PROJECT_CREATORS=owners)."""
    MembershipFactory(
        project=ProjectFactory(name="Pilot"), user=UserFactory(username="olivia"), role=Membership.Role.OWNER
    )
    return "olivia"


def _paste(page, names: str) -> None:
    page.get_by_label("Usernames").fill(names)
    page.get_by_role("button", name="Add annotators").click()
    page.get_by_role("heading", name="Login links").wait_for()


def test_owner_creates_a_project_and_hands_out_login_links(new_page, owner, screenshot_dir):
    page = new_page(permissions=["clipboard-read", "clipboard-write"])
    log_in(page, owner, "pw-123456")

    # An empty name is refused with a clear message; a good one lands on the new project.
    page.get_by_label("Project name").fill("   ")
    page.get_by_role("button", name="Create project").click()
    page.get_by_text("A project needs a name.").wait_for()
    page.get_by_label("Project name").fill("RankME study")
    page.screenshot(path=screenshot_dir / "project-new.png", full_page=True)
    page.get_by_role("button", name="Create project").click()
    page.get_by_role("heading", name="RankME study").wait_for()

    page.get_by_role("link", name="Members").click()
    _paste(page, "ann1\nann2, ann3")
    links = page.locator("input.login-link")
    assert links.count() == 3
    assert [links.nth(i).get_attribute("data-username") for i in range(3)] == ["ann1", "ann2", "ann3"]
    page.screenshot(path=screenshot_dir / "members-login-links.png", full_page=True)

    # "Copy" puts ann2's link on the clipboard.
    page.get_by_role("button", name="Copy the link for ann2").click()
    page.get_by_role("button", name="Copy the link for ann2").filter(has_text="Copied").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == links.nth(1).input_value() and "/login/" in copied

    # A browser with no cookies opens it: one click, and ann2 is on the annotator's home.
    fresh = new_page()
    fresh.goto(copied)
    fresh.screenshot(path=screenshot_dir / "login-link.png", full_page=True)
    fresh.get_by_role("button", name="Log in as ann2").click()
    fresh.wait_for_url("**/annotate/")
    fresh.screenshot(path=screenshot_dir / "login-link-landed.png", full_page=True)
    assert fresh.locator(".account-name").inner_text() == "ann2"
    assert fresh.get_by_role("link", name="Set a password").is_visible()
    assert LoginLink.objects.filter(user__username="ann2", used_at__isnull=False).count() == 1

    # A second use fails, with a page that says why.
    again = new_page()
    again.goto(copied)
    again.get_by_role("heading", name="Link used or expired").wait_for()
    assert "already used or has expired" in again.get_by_role("alert").inner_text()
    again.get_by_role("button", name="Log in as ann2").wait_for(state="detached")
    again.screenshot(path=screenshot_dir / "login-link-used.png", full_page=True)


def test_members_page_on_a_phone(new_page, owner, screenshot_dir):
    page = new_page(viewport={"width": 390, "height": 844})
    log_in(page, owner, "pw-123456")
    page.screenshot(path=screenshot_dir / "project-new-390.png", full_page=True)
    page.get_by_role("link", name="Pilot").click()
    page.get_by_role("link", name="Members").click()
    page.get_by_label("Usernames").fill("bad name\nok")
    page.get_by_role("button", name="Add annotators").click()
    page.get_by_text("line 1: bad name:").wait_for()
    page.screenshot(path=screenshot_dir / "members-bulk-errors-390.png", full_page=True)
    _paste(page, "phone1\nphone2")
    page.screenshot(path=screenshot_dir / "members-login-links-390.png", full_page=True)
    # Nothing sticks out sideways at 390 px.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    field = page.locator("input.login-link").first.bounding_box()
    assert field["x"] >= 0 and field["x"] + field["width"] <= 390
    # The person opens their link on a phone too.
    phone = new_page(viewport={"width": 390, "height": 844})
    phone.goto(page.locator("input.login-link").first.input_value())
    phone.screenshot(path=screenshot_dir / "login-link-390.png", full_page=True)
    phone.get_by_role("button", name="Log in as phone1").click()
    phone.wait_for_url("**/annotate/")
    phone.screenshot(path=screenshot_dir / "login-link-landed-390.png", full_page=True)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
