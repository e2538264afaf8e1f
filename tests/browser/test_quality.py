"""Quality control in Debian's Chromium: a loud tutorial unit answered wrongly shows its
explanation and does not advance; a completion code appears at the end of a batch; the
researchers' quality page shows the figures."""

import pytest

from annotations.models import Assignment, Membership, Output
from annotations.models.quality import CompletionCode, ControlJudgement, GoldUnit
from annotations.quality.services import gold_unit_create, quality_settings_update
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.browser.conftest import log_in, next_screen, open_unit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EXPLANATION = "The output invents an opening time that is not in the input: adequacy is 2 at most."


@pytest.fixture
def campaign(live_server):
    dataset = DatasetFactory(name="quality-browser")
    systems = [SystemFactory(dataset=dataset, name=f"sys-{i}") for i in range(2)]
    for i in range(4):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"q-{i}")
        for j, system in enumerate(systems):
            OutputFactory(item=item, system=system, text=f"Restaurant {i} by system {j} is open until {i + 1} am.")
    for name, role in (("ann", Membership.Role.ANNOTATOR), ("res", Membership.Role.RESEARCHER)):
        MembershipFactory(project=dataset.project, user=UserFactory(username=name), role=role)
    campaign = campaign_create(
        dataset=dataset,
        name="Quality browser",
        protocol="likert",
        criteria=["fluency", "adequacy"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        seed=3,
        units_per_batch=3,
    )
    quality_settings_update(campaign=campaign, completion_codes=True)
    output = Output.objects.filter(item__dataset=dataset).order_by("id").first()
    gold_unit_create(
        campaign=campaign,
        item=output.item,
        outputs=[output],
        expected={"adequacy": {"min": 1, "max": 2}},
        mode=GoldUnit.Mode.LOUD,
        explanation=EXPLANATION,
    )
    return campaign


def _answer(page, fluency: str, adequacy: str, *, advances: bool = True) -> None:
    page.locator(
        "body[data-unit-ready='1']"
    ).wait_for()  # a selector: polling a JS string needs eval, which the CSP forbids
    rows = page.locator("[data-row]")
    rows.nth(0).locator(".scale-point", has_text=fluency).click()
    rows.nth(1).locator(".scale-point", has_text=adequacy).click()
    if advances:
        with next_screen(page):
            page.get_by_role("button", name="Submit").click()
    else:
        page.get_by_role("button", name="Submit").click()


def test_tutorial_explains_and_holds_then_batch_ends_with_a_code(page, campaign, screenshot_dir):
    log_in(page, "ann", "pw-123456")
    open_unit(page, campaign.pk)
    url = page.url
    _answer(page, "5", "5", advances=False)  # wrong: the tutorial expects adequacy 1-2
    errors = page.locator("#unit-errors")
    errors.wait_for(state="visible")
    assert EXPLANATION in errors.text_content()
    assert "adequacy: the score is outside the expected range (1 to 2)" in errors.text_content()
    page.screenshot(path=str(screenshot_dir / "tutorial-explanation.png"), full_page=True)
    # It does not advance: same page, same unit still pending, the wrong try kept (and not counted).
    # (The explanation is shown once the page has the server's answer: no navigation can follow it.)
    assert page.url == url
    tutorial = Assignment.objects.get(campaign=campaign, status="pending")
    assert tutorial.unit.kind == "gold"
    assert set(ControlJudgement.objects.filter(kind="gold").values_list("criterion", "passed", "attempt")) == {
        ("adequacy", False, 1),
        ("fluency", True, 1),
    }

    _answer(page, "5", "1")  # right: on to the next unit
    tutorial.refresh_from_db()
    assert tutorial.status == "done"
    assert EXPLANATION not in page.content()

    _answer(page, "4", "4")
    _answer(page, "3", "4")  # the third unit ends the batch of 3
    code_box = page.locator("#completion-code-value")
    code_box.wait_for()
    issued = CompletionCode.objects.get(campaign=campaign, batch=0)
    assert code_box.text_content().strip() == issued.code
    page.screenshot(path=str(screenshot_dir / "completion-code.png"), full_page=True)
    page.get_by_role("link", name="Continue with the next batch").click()
    page.locator("#start").click()  # the landing page: Continue POSTs, which hands out the next unit
    page.locator(
        "body[data-unit-ready='1']"
    ).wait_for()  # a selector: polling a JS string needs eval, which the CSP forbids


def test_quality_page_for_researchers(page, campaign, screenshot_dir):
    log_in(page, "res", "pw-123456")
    page.goto(f"/campaigns/{campaign.pk}/quality/")
    assert page.get_by_role("heading", name="Annotator quality").is_visible()
    assert page.locator("#settings").is_visible()
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    log_in(page, "ann", "pw-123456")
    response = page.goto(f"/campaigns/{campaign.pk}/quality/")
    assert response.status == 404  # annotators are confined to their units
