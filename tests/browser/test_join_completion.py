"""A crowd participant always gets back to the platform with their code (issue 38 item 1), also
when the batch ends through a form POST whose redirect chain would leave the site, which CSP
`form-action 'self'` blocks:

(a) a returning participant: a batch done, the join link opened again with the same PROLIFIC_PID,
    Continue pressed (a POST);
(b) the campaign stopped by its researcher mid-batch: the participant's next submit is stored, and
    the page's follow-up POST finds nothing left.

The platform is a stub completion server on another origin (a tiny http.server thread on
localhost), which records the completion URLs the browser opened. At 1280 and 390 px."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from annotations.allocation.services import campaign_stop
from annotations.models import Assignment, Membership
from annotations.models.quality import CompletionCode
from annotations.models.studies import JoinParticipant
from annotations.services.campaigns import campaign_create
from annotations.studies.services import join_link_create
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.browser.conftest import browser_wait_until, next_screen

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 390)
STUDY = "65f0e1d2c3b4a59687786951"


@pytest.fixture
def platform():
    """The crowd platform's completion endpoint: records each path asked for, answers a small page."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            seen.append(self.path)
            body = b"<!doctype html><title>Completed</title><h1>Study completed</h1>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("localhost", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"url": f"http://localhost:{server.server_address[1]}", "seen": seen}
    server.shutdown()
    server.server_close()


@pytest.fixture
def study(live_server, platform):
    dataset = DatasetFactory(name="crowd-data")
    systems = [SystemFactory(dataset=dataset, name=f"SECRETSYS-{i}") for i in range(2)]
    for i in range(8):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"c-{i}", source=f"Input sentence {i}.")
        for j, system in enumerate(systems):
            OutputFactory(item=item, system=system, text=f"Output {i} of system {j}: the museum opens at {9 + i}.")
    MembershipFactory(project=dataset.project, user=UserFactory(username="res"), role=Membership.Role.RESEARCHER)
    campaign = campaign_create(
        dataset=dataset,
        name="Crowd study",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        seed=11,
        units_per_batch=2,
        instructions="Rate how fluent each output is.",
    )
    link = join_link_create(campaign=campaign, completion_url=f"{platform['url']}/complete?cc={{code}}")
    return {"campaign": campaign, "link": link}


def _join_path(link, pid: str, session: str) -> str:
    return f"/join/{link.token}/?PROLIFIC_PID={pid}&STUDY_ID={STUDY}&SESSION_ID={session}"


def _answer_unit(page, score: str = "4") -> None:
    page.locator("body[data-unit-ready='1']").wait_for()
    page.keyboard.press(score)
    with next_screen(page, timeout=60_000):
        page.keyboard.press("Enter")


def _on_platform(page, platform, code_value: str | None) -> None:
    """The browser landed on the platform's completion URL, with the code."""
    expected = f"/complete?cc={code_value or ''}"
    page.wait_for_url(f"{platform['url']}/complete**", timeout=30_000)
    assert page.url == f"{platform['url']}{expected}"
    browser_wait_until(page, lambda: expected in platform["seen"], 10, "the platform asked for the completion URL")
    assert page.get_by_role("heading", name="Study completed").is_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_returning_participant_reaches_the_completion_url(new_page, study, platform, width):
    link = study["link"]
    pid = f"60a1b2c3d4e5f60718293{width:03d}"[:24]
    page = new_page(viewport={"width": width, "height": 844}, allow=(platform["url"],))
    page.goto(_join_path(link, pid, "s-1"))
    with next_screen(page, timeout=60_000):
        page.keyboard.press("Enter")  # Start has the focus
    _answer_unit(page)
    _answer_unit(page)
    participant = JoinParticipant.objects.get(platform_id=pid)
    code = CompletionCode.objects.get(annotator=participant.annotator, batch=0)
    _on_platform(page, platform, code.code)  # the first visit's end: worked before too

    # The same participant opens the study link again and presses Continue: a form POST that ends
    # on the completion URL of the batch they finished.
    again = new_page(viewport={"width": width, "height": 844}, allow=(platform["url"],))
    again.goto(_join_path(link, pid, "s-2"))
    again.get_by_role("button", name="Continue").wait_for()
    assert again.evaluate("document.documentElement.scrollWidth") <= width
    platform["seen"].clear()
    again.get_by_role("button", name="Continue").press("Enter")
    _on_platform(again, platform, code.code)
    assert JoinParticipant.objects.filter(platform_id=pid).count() == 1


@pytest.mark.parametrize("width", WIDTHS)
def test_campaign_stopped_mid_batch_sends_the_participant_to_the_platform(new_page, study, platform, width):
    link, campaign = study["link"], study["campaign"]
    pid = f"70a1b2c3d4e5f60718293{width:03d}"[:24]
    page = new_page(viewport={"width": width, "height": 844}, allow=(platform["url"],))
    page.goto(_join_path(link, pid, "s-1"))
    with next_screen(page, timeout=60_000):
        page.keyboard.press("Enter")
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    # The researcher stops the campaign while the participant is on their first unit of two.
    campaign_stop(campaign=campaign, reason="enough data")
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{platform['url']}/complete**", timeout=30_000)  # the code is issued by then
    participant = JoinParticipant.objects.get(platform_id=pid)
    code = CompletionCode.objects.filter(annotator=participant.annotator).first()
    _on_platform(page, platform, code.code if code else None)
    assert Assignment.objects.filter(annotator=participant.annotator, status="done").count() == 1
