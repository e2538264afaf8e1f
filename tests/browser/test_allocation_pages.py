"""The researcher's campaign page under adaptive allocation: units by judgements done, the decided
system pairs, the stop form; readable and accessible at 390 and 1280 px (screenshots kept)."""

import json
import random

import pytest
from django.core.management import call_command

from annotations.allocation.services import allocation_check
from annotations.models import Campaign, Membership, Project, Unit
from tests.annotations.factories import UserFactory
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import assert_accessible, audited_page, axe_script  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MEANS = {"alpha-sys": 80, "beta-sys": 30, "gamma-sys": 55, "delta-sys": 54}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def campaign(tmp_path):
    rng = random.Random(3)
    items = [{"item": f"i{n}", "source": f"src {n}", "outputs": {s: f"{s[0]} {n}" for s in MEANS}} for n in range(30)]
    judgements = [
        {
            "item": f"i{n}",
            "system": s,
            "annotator": "w1",
            "criterion": "quality",
            "score": max(0, min(100, round(m + rng.gauss(0, 10)))),
        }
        for n in range(30)
        for s, m in MEANS.items()
    ]
    quiet = open("/dev/null", "w")
    call_command(
        "import_dataset", _write(tmp_path / "d.jsonl", items), "--dataset", "toy", "--project", "Lab", stdout=quiet
    )
    call_command(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "adaptive-study",
        "--protocol",
        "likert",
        "--criteria",
        "quality",
        "--scale",
        "0-100",
        "--redundancy",
        "3",
        "--allocation",
        "adaptive",
        "--adaptive-min-per-system",
        "5",
        stdout=quiet,
    )
    call_command(
        "import_judgements", _write(tmp_path / "j.jsonl", judgements), "--campaign", "adaptive-study", stdout=quiet
    )
    campaign = Campaign.objects.get(name="adaptive-study")
    units = list(Unit.objects.filter(campaign=campaign).order_by("position").values_list("pk", flat=True))
    for pk, done in zip(units, [3] * 12 + [2] * 5 + [1] * 20):
        Unit.objects.filter(pk=pk).update(n_taken=done, n_done=done)
    allocation_check(campaign_id=campaign.pk)
    Membership.objects.create(
        project=Project.objects.get(name="Lab"), user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER
    )
    return campaign


@pytest.mark.parametrize("width", (1280, 390))
def test_the_campaign_page_shows_overlap_and_decided_pairs(
    audited_page,
    axe_script,
    campaign,  # noqa: F811
    screenshot_dir,
    width,
):
    page = audited_page(width)
    log_in(page, "rita", "pw-123456")
    page.goto(f"/campaigns/{campaign.pk}/")
    histogram = page.locator("#judgement-histogram tbody tr")
    assert histogram.count() == 4
    assert [histogram.nth(i).locator("td").nth(1).inner_text() for i in range(4)] == ["83", "20", "5", "12"]
    assert "Agreement available from 12 units" in page.locator("#overlap").inner_text()
    pairs = page.locator("#pair-table").inner_text()
    assert "alpha-sys – beta-sys" in pairs and "decided" in pairs
    assert page.get_by_label("Reason (goes into the dataset card)").is_visible()
    # Nothing wider than the screen.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=screenshot_dir / f"campaign-adaptive-{width}.png", full_page=True)
    assert_accessible(page, axe_script, f"adaptive campaign page at {width} px")
    page.get_by_label("Reason (goes into the dataset card)").fill("pilot is enough")
    page.get_by_role("button", name="Stop the campaign").click()
    page.wait_for_url(f"**/campaigns/{campaign.pk}/")
    assert "pilot is enough" in page.locator("#stopped-banner").inner_text()
    assert_accessible(page, axe_script, f"stopped campaign page at {width} px")
