"""The meta-evaluation page shows an LLM judge's bias probes and its alt-test, the same figures
`correlate --json` and `correlate --method alt-test` print (one reader, one statistic)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotations.models import Campaign, Membership
from tests.annotations.analysis.test_judges import ITEMS, probe_world  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import assert_accessible, axe_script  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _json(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_meta_page_shows_judge_probes(new_page, probe_world, screenshot_dir, axe_script):  # noqa: F811
    page = new_page(bypass_csp=True)  # the injected axe-core engine needs it
    campaign = Campaign.objects.get(name="probe")
    MembershipFactory(
        project=campaign.dataset.project, user=UserFactory(username="res"), role=Membership.Role.RESEARCHER
    )
    runs = probe_world["runs"]
    page.set_default_timeout(60_000)
    log_in(page, "res", "pw-123456")
    page.goto(f"/campaigns/{campaign.pk}/analysis/meta/")
    section = page.locator("#judge-probes")
    section.wait_for()
    assert page.locator("#meta-table tbody tr").count() == 3  # the judges are rows of the table too
    score = page.locator(f".judge-run[data-run='{runs['score'].pk}']")
    pairwise = page.locator(f".judge-run[data-run='{runs['pairwise'].pk}']")

    probes = _json("correlate", "--campaign", "probe", "--metric", f"#{runs['score'].pk}", "--criterion", "quality")[
        "probes"
    ]
    warning = score.locator(".probe-self [role=note]")
    assert warning.count() == 1 and "system s2 names the judge's model (org/Tiny-Judge-7B)" in warning.inner_text()
    assert f"{probes['seeds']['pearson']:.3f}" in score.locator(".probe-seeds").inner_text()
    assert score.locator(".length-judge").inner_text() == f"{probes['length']['judge']['pearson']:.3f}"
    assert score.locator(".length-humans").inner_text() == f"{probes['length']['humans']['pearson']:.3f}"
    assert "not measured" in score.locator(".probe-position").inner_text()

    position = _json(
        "correlate", "--campaign", "probe", "--metric", f"#{runs['pairwise'].pk}", "--criterion", "quality"
    )["probes"]["position"]
    assert position["pairs"] == ITEMS  # one pair per item (s1, s2), counted once
    assert (
        f"{position['flipped']} of {ITEMS} pairs flip ({position['flip_rate']:.3f})"
        in pairwise.locator(".probe-position").inner_text()
    )

    alt = _json(
        "correlate",
        "--campaign",
        "probe",
        "--metric",
        f"#{runs['score'].pk}",
        "--criterion",
        "quality",
        "--method",
        "alt-test",
    )
    assert alt["annotators_tested"] == 3
    assert score.locator(".alt-winning").inner_text() == f"{alt['winning_rate']:.2f}"
    assert score.locator(".alt-verdict").inner_text().startswith("passed" if alt["passed"] else "failed")

    # Another epsilon: the page's figure follows the command's.
    page.select_option("select[name=epsilon]", "0.3")
    page.click("#analysis-filters button[type=submit]")
    page.wait_for_url("**epsilon=0.3**")
    alt3 = _json(
        "correlate",
        "--campaign",
        "probe",
        "--metric",
        f"#{runs['score'].pk}",
        "--criterion",
        "quality",
        "--method",
        "alt-test",
        "--epsilon",
        "0.3",
    )
    assert (
        page.locator(f".judge-run[data-run='{runs['score'].pk}'] .alt-winning").inner_text()
        == f"{alt3['winning_rate']:.2f}"
    )

    page.screenshot(path=str(screenshot_dir / "analysis-judges-1280.png"), full_page=True)
    assert_accessible(page, axe_script, "meta-evaluation page with judge probes")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    page.locator("#judge-probes").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / "analysis-judges-390.png"), full_page=False)
