"""The Export button: a researcher starts an export, a real Celery worker writes it, the page shows
the progress and then a download link, and the zip holds the folder and its card."""

import json
import zipfile

import pytest
from django.core.management import call_command

from annotations.models import Campaign, Membership, Project
from tests.annotations.factories import UserFactory
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def campaign(tmp_path):
    items = [{"item": f"i{n}", "source": f"src {n}", "outputs": {"A": f"=a {n}", "B": f"b {n}"}} for n in range(5)]
    judgements = [
        {"item": f"i{n}", "system": s, "annotator": w, "criterion": "fluency", "score": (n + k) % 5 + 1}
        for n in range(5)
        for s in "AB"
        for k, w in enumerate(("w1", "w2", "w3"))
    ]
    call_command(
        "import_dataset",
        _write(tmp_path / "d.jsonl", items),
        "--dataset",
        "toy",
        "--project",
        "Lab",
        stdout=open("/dev/null", "w"),
    )
    call_command(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "toy-likert",
        "--protocol",
        "likert",
        "--criteria",
        "fluency",
        "--scale",
        "1-5",
        "--redundancy",
        "3",
        stdout=open("/dev/null", "w"),
    )
    call_command(
        "import_judgements",
        _write(tmp_path / "j.jsonl", judgements),
        "--campaign",
        "toy-likert",
        stdout=open("/dev/null", "w"),
    )
    Membership.objects.create(
        project=Project.objects.get(name="Lab"), user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER
    )
    return Campaign.objects.get(name="toy-likert")


def test_export_button_runs_on_a_worker_and_offers_the_download(
    celery_worker_process, page, campaign, tmp_path, screenshot_dir
):
    log_in(page, "rita", "pw-123456")
    page.goto(f"/campaigns/{campaign.pk}/")
    page.get_by_role("link", name="Export", exact=True).click()
    page.wait_for_url(f"**/campaigns/{campaign.pk}/export/")
    page.get_by_label("Format").select_option("hf")
    page.get_by_label("Complete units only (judged by k annotators)").check()
    page.get_by_label("Licence of the data").fill("cc-by-4.0")
    page.get_by_role("button", name="Start export").click()
    page.wait_for_url("**/exports/*/")
    link = page.get_by_role("link", name="Download the export (zip)")
    link.wait_for(state="visible", timeout=60_000)
    assert page.locator('[data-field="status"]').inner_text() == "Succeeded"
    assert page.locator('[data-field="summary"]').inner_text() == "30 judgements, 10 outputs, 5 items."
    page.screenshot(path=screenshot_dir / "export-done.png", full_page=True)
    with page.expect_download() as info:
        link.click()
    target = tmp_path / "export.zip"
    info.value.save_as(target)
    with zipfile.ZipFile(target) as archive:
        names = sorted(archive.namelist())
        assert names == sorted(
            f"toy-likert/{n}"
            for n in (
                "README.md",
                "campaign.json",
                "croissant.json",
                "dataset.jsonl",
                "heds.json",
                "judgements.jsonl",
                "outputs.jsonl",
            )
        )
        card = archive.read("toy-likert/README.md").decode()
    assert card.startswith("---\nlicense: cc-by-4.0\n")
    assert "complete units only (judged by at least k = 3 annotators) | 30 | 30 |" in card

    # At a phone's width the export form still fits.
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"/campaigns/{campaign.pk}/export/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
