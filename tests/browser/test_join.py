"""A crowd study in Debian's Chromium, the Prolific way: a study link with PROLIFIC_PID,
STUDY_ID and SESSION_ID → Start (a POST) → a batch done with the keyboard only →
back on the completion URL with the pass code; a careless participant (failing the
gold control) gets the fail code; the same PID in a new browser resumes its unit; a
revoked link answers 404; the export names participants by pseudonyms unless asked
for the real ids. Screenshots of the join flow at 1280 and 390 px."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.models import Assignment, Membership
from annotations.models.quality import CompletionCode, GoldUnit
from annotations.models.studies import JoinParticipant
from annotations.quality import codes
from annotations.quality.services import gold_unit_create, quality_settings_update
from annotations.quality.services.decisions import _code_key
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
from tests.browser.conftest import log_in, next_screen

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CAREFUL, CARELESS, RETURNING = "60a1b2c3d4e5f60718293a4b", "60a1b2c3d4e5f60718293a4c", "60a1b2c3d4e5f60718293a4d"
STUDY = "65f0e1d2c3b4a59687786950"


@pytest.fixture
def study(live_server):
    dataset = DatasetFactory(name="crowd-data")
    systems = [SystemFactory(dataset=dataset, name=f"SECRETSYS-{i}") for i in range(2)]
    for i in range(4):
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
        redundancy=3,
        seed=11,
        units_per_batch=3,
        instructions="Rate how **fluent** each output is (1 = not at all, 5 = perfectly).",
    )
    # One silent gold unit per batch that expects a high score; passing every control is required.
    # Its item is added after the campaign is planned, so no regular unit shows it: a gold unit goes
    # only to a participant who has seen nothing of its item (issue 46), whatever order the walk takes.
    gold_item = ItemFactory(dataset=dataset, position=4, external_id="c-gold", source="Input sentence 4.")
    output = OutputFactory(item=gold_item, system=systems[0], text="Output 4 of system 0: the museum opens at 13.")
    gold_unit_create(
        campaign=campaign,
        item=output.item,
        outputs=[output],
        expected={"fluency": {"min": 4, "max": 5}},
        mode=GoldUnit.Mode.SILENT,
    )
    quality_settings_update(campaign=campaign, rules={"min_controls_passed": 1.0, "max_p": None})
    link = join_link_create(campaign=campaign, completion_url=f"{live_server.url}/prolific-complete/?cc={{code}}")
    return {"campaign": campaign, "link": link, "url": live_server.url}


def _join_path(link, pid: str, session: str) -> str:
    return f"/join/{link.token}/?PROLIFIC_PID={pid}&STUDY_ID={STUDY}&SESSION_ID={session}"


def _unit_ready(page):
    page.locator(
        "body[data-unit-ready='1']"
    ).wait_for()  # a selector: polling a JS string needs eval, which the CSP forbids


def _batch_with_the_keyboard(page, score: str, units: int = 3) -> None:
    """Start with Enter (the button has the focus), then each unit: the score's key, Enter."""
    with next_screen(page):
        page.keyboard.press("Enter")
    for n in range(units):
        _unit_ready(page)
        page.keyboard.press(score)
        with next_screen(page):
            page.keyboard.press("Enter")


def _code_of(pid: str) -> CompletionCode:
    participant = JoinParticipant.objects.get(platform_id=pid)
    return CompletionCode.objects.get(annotator=participant.annotator, batch=0)


def test_prolific_path_pass_and_fail_codes(new_page, study, screenshot_dir):
    link, campaign = study["link"], study["campaign"]
    page = new_page()
    response = page.goto(_join_path(link, CAREFUL, "s-careful"))
    assert response.status == 200
    assert page.get_by_role("heading", name="Crowd study").is_visible()
    assert page.evaluate("document.activeElement.id") == "start"
    page.screenshot(path=str(screenshot_dir / "join-landing-1280.png"), full_page=True)
    _batch_with_the_keyboard(page, "5")
    page.wait_for_url("**/prolific-complete/**")
    careful = _code_of(CAREFUL)
    assert careful.passed
    assert page.url == f"{study['url']}/prolific-complete/?cc={careful.code}"
    assert (
        codes.code_verdict(
            key=_code_key(), code=careful.code, campaign=campaign.pk, annotator=careful.annotator_id, batch=0
        )
        == codes.PASS
    )
    # Every unit of the batch, the gold control included, came from this participant's session.
    done = Assignment.objects.filter(annotator=careful.annotator, status="done")
    assert done.count() == 3 and {a.unit.kind for a in done} == {"regular", "gold"}

    careless = new_page(viewport={"width": 390, "height": 844})
    careless.goto(_join_path(link, CARELESS, "s-careless"))
    careless.screenshot(path=str(screenshot_dir / "join-landing-390.png"), full_page=True)
    assert careless.evaluate("document.documentElement.scrollWidth") <= 390
    _batch_with_the_keyboard(careless, "1")
    careless.wait_for_url("**/prolific-complete/**")
    failed = _code_of(CARELESS)
    assert not failed.passed and failed.code != careful.code
    assert careless.url == f"{study['url']}/prolific-complete/?cc={failed.code}"
    assert (
        codes.code_verdict(
            key=_code_key(), code=failed.code, campaign=campaign.pk, annotator=failed.annotator_id, batch=0
        )
        == codes.FAIL
    )


def test_same_pid_resumes_revoked_link_404_and_export(new_page, study, screenshot_dir, tmp_path):
    link, campaign = study["link"], study["campaign"]
    first = new_page(viewport={"width": 390, "height": 844})
    first.goto(_join_path(link, RETURNING, "s-1"))
    # Starting creates the participant and hands out the first unit: on a busy machine that can take
    # longer than Playwright's default wait.
    with next_screen(first, timeout=60_000):
        first.keyboard.press("Enter")
    _unit_ready(first)
    first.screenshot(path=str(screenshot_dir / "join-unit-390.png"), full_page=True)
    assert first.evaluate("document.documentElement.scrollWidth") <= 390
    assert "SECRETSYS" not in first.content()
    participant = JoinParticipant.objects.get(platform_id=RETURNING)
    pending = Assignment.objects.get(annotator=participant.annotator, status="pending")
    # The session reaches nothing else.
    assert first.goto("/").status == 404
    assert first.goto(f"/api/campaigns/{campaign.pk}/").status == 404

    again = new_page()  # another browser: no cookie, no local storage
    again.goto(_join_path(link, RETURNING, "s-2"))
    assert again.get_by_role("button", name="Continue").is_visible()
    again.screenshot(path=str(screenshot_dir / "join-continue-1280.png"), full_page=True)
    with next_screen(again, timeout=60_000):
        again.keyboard.press("Enter")
    _unit_ready(again)
    config = json.loads(again.locator("#unit-config").text_content())
    assert config["assignment"] == pending.pk
    assert JoinParticipant.objects.filter(platform_id=RETURNING).count() == 1
    again.keyboard.press("4")
    with next_screen(again, timeout=60_000):
        again.keyboard.press("Enter")
    _unit_ready(again)
    pending.refresh_from_db()
    assert pending.status == "done"

    # The researcher revokes the link on the campaign page; it answers 404 from then on.
    researcher = new_page()
    log_in(researcher, "res", "pw-123456")
    researcher.goto(f"/campaigns/{campaign.pk}/#study-links")
    section = researcher.locator("#study-links")
    assert section.locator(f"input[value$='/join/{link.token}/']").count() == 1
    section.screenshot(path=str(screenshot_dir / "join-study-links-1280.png"))
    researcher.get_by_role("button", name="Revoke").click()
    researcher.locator("#study-links .badge", has_text="revoked").wait_for()
    assert again.goto(_join_path(link, RETURNING, "s-3")).status == 404
    assert again.goto(f"/annotate/campaigns/{campaign.pk}/unit/").status == 404

    # Export: pseudonyms by default, no platform id anywhere; the PIDs only with --real-annotator-ids.
    plain, real = tmp_path / "plain", tmp_path / "real"
    call_command("export_dataset", "--campaign", "Crowd study", "--out", str(plain), verbosity=0)
    call_command("export_dataset", "--campaign", "Crowd study", "--out", str(real), "--real-annotator-ids", verbosity=0)
    everything = "".join(p.read_text() for p in Path(plain).rglob("*") if p.is_file())
    assert RETURNING not in everything and STUDY not in everything and participant.annotator.name not in everything
    rows = [json.loads(line) for line in (plain / "judgements.jsonl").read_text().splitlines()]
    assert rows and all(row["annotator"].startswith("annotator-") for row in rows)
    real_rows = [json.loads(line) for line in (real / "judgements.jsonl").read_text().splitlines()]
    assert RETURNING in {row["annotator"] for row in real_rows}


def test_missing_id_and_full_study_pages(new_page, study, screenshot_dir):
    link = study["link"]
    for width in (1280, 390):
        page = new_page(viewport={"width": width, "height": 844})
        page.goto(f"/join/{link.token}/")
        page.get_by_label("Your participant id").fill("volunteer-12")
        page.screenshot(path=str(screenshot_dir / f"join-ask-id-{width}.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("button", name="Start").click()
    _unit_ready(page)
    assert JoinParticipant.objects.get(platform_id="volunteer-12").platform == "generic"
