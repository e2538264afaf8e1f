"""Judgements uploaded in the browser and through the API (issue 38 item 3), with the atomic
`line N: reason` report of `import_judgements`; `--skip-invalid` imports the rest and writes the
refused lines to a report; `import_dataset --format mqm-tsv` builds the dataset a WMT TSV rates."""

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Campaign, Item, Membership, Output, SpanJudgement
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.protocols.test_mqm import HEADER, fails, run

pytestmark = pytest.mark.django_db

# A WMT-style MQM TSV: two systems, two segments, one rater's error marked also in the source.
ROWS = [
    HEADER,
    "sysA\tdoc1\t1\t1\tr1\tThe <v>cat</v> sat.\tDie Katze <v>saß</v>.\tAccuracy/Mistranslation\tMajor",
    "sysA\tdoc1\t1\t1\tr2\tThe cat sat.\tDie Katze saß.\tNo-error\tNo-error",
    "sysB\tdoc1\t1\t1\tr1\tThe cat sat.\t<v>Der Kater</v> saß.\tTerminology/Inconsistent use of terminology\tMinor",
    "sysA\tdoc1\t2\t2\tr1\tIt rained.\tEs regnete.\tSource error/-\tMinor",
    "sysB\tdoc1\t2\t2\tr1\tIt rained.\tEs <v>regnete.\tFluency/Display\tMajor",  # <v> without </v>
    "sysB\tdoc1\t2\t2\tr1\tIt rained.\tEs regnete<v>.</v>\tFluency/Punctuation\tMinor",
]


@pytest.fixture
def mqm(tmp_path):
    tsv = tmp_path / "wmt.tsv"
    tsv.write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    made = run("import_dataset", str(tsv), "--dataset", "wmt", "--project", "mt", "--format", "mqm-tsv")
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    return {"tsv": tsv, "made": made, "campaign": Campaign.objects.get(name="mqm")}


def test_import_dataset_mqm_tsv_builds_items_systems_and_unmarked_outputs(mqm):
    assert mqm["made"]["items"] == 2 and mqm["made"]["outputs"] == 4
    item = Item.objects.get(external_id="1")
    assert item.source == "The cat sat." and item.meta == {"doc": "doc1", "doc_id": "1"}
    texts = {(o.item.external_id, o.system.name): o.text for o in Output.objects.select_related("item", "system")}
    assert texts == {
        ("1", "sysA"): "Die Katze saß.",
        ("1", "sysB"): "Der Kater saß.",
        ("2", "sysA"): "Es regnete.",
        ("2", "sysB"): "Es regnete.",
    }


def test_import_dataset_mqm_tsv_refuses_disagreeing_rows(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text(
        "\n".join([HEADER, ROWS[1], ROWS[2].replace("Die Katze saß.", "Die Katze sass.")]) + "\n", encoding="utf-8"
    )
    message = fails("import_dataset", str(bad), "--dataset", "x", "--format", "mqm-tsv")
    assert "line 3: the target (without its <v> marks) differs from line 2's for system 'sysA'" in message


def test_skip_invalid_imports_the_rest_and_reports_the_refused_lines(mqm, tmp_path):
    tsv = mqm["tsv"]
    message = fails("import_judgements", str(tsv), "--campaign", "mqm", "--format", "mqm-tsv")
    assert "line 6: the target must mark one error span" in message and "nothing was imported" in message
    assert not SpanJudgement.objects.exists()
    out, err = StringIO(), StringIO()
    call_command(
        "import_judgements",
        str(tsv),
        "--campaign",
        "mqm",
        "--format",
        "mqm-tsv",
        "--skip-invalid",
        "--json",
        stdout=out,
        stderr=err,
    )
    summary = json.loads(out.getvalue())
    report = tsv.parent / "wmt.tsv.refused.txt"
    # Line 7 is valid but belongs to the judgement of line 6 (rater r1, sysB, seg 2): left out with it.
    assert report.read_text(encoding="utf-8").splitlines() == [
        "line 6: the target must mark one error span, as <v>...</v>",
        "line 7: left out with line 6, refused: the rows of rater 'r1', system 'sysB', seg_id '2' are one judgement",
    ]
    assert summary["skipped_lines"] == 2 and summary["report"] == str(report) and summary["judgements"] == 4
    assert "2 line(s) refused and left out" in err.getvalue()
    spans = {
        (j.annotator.name, j.output.system.name, j.output.item.external_id): j.score
        for j in SpanJudgement.objects.select_related("annotator", "output__system", "output__item")
    }
    # score_mqm.py's weights: Major 5, Minor 1; "Source error/-" weighs as Minor.
    assert spans == {
        ("r1", "sysA", "1"): -5.0,
        ("r2", "sysA", "1"): 0.0,
        ("r1", "sysB", "1"): -1.0,
        ("r1", "sysA", "2"): -1.0,
    }
    assert "--report goes with --skip-invalid" in fails(
        "import_judgements", str(tsv), "--campaign", "mqm", "--format", "mqm-tsv", "--report", str(tmp_path / "r.txt")
    )


def _researcher(campaign):
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    return user


def test_upload_through_the_api_is_atomic_with_line_reports(mqm):
    campaign = mqm["campaign"]
    api = APIClient()
    api.force_authenticate(_researcher(campaign))
    url = reverse("api-campaign-judgements-import", args=[campaign.pk])
    raw = mqm["tsv"].read_bytes()
    bad = api.post(url, {"file": SimpleUploadedFile("wmt.tsv", raw), "format": "mqm-tsv"}, format="multipart")
    assert bad.status_code == 400 and bad.json()["errors"] == [
        "line 6: the target must mark one error span, as <v>...</v>"
    ]
    assert not SpanJudgement.objects.exists()
    good = b"\n".join(line for k, line in enumerate(raw.splitlines()) if k != 5) + b"\n"
    ok = api.post(url, {"file": SimpleUploadedFile("wmt.tsv", good), "format": "mqm-tsv"}, format="multipart")
    assert ok.status_code == 201 and ok.json()["created"] == 5 and SpanJudgement.objects.count() == 5
    # Annotators of the project and strangers reach nothing.
    annotator = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=annotator, role=Membership.Role.ANNOTATOR)
    api.force_authenticate(annotator)
    assert (
        api.post(
            url, {"file": SimpleUploadedFile("wmt.tsv", good), "format": "mqm-tsv"}, format="multipart"
        ).status_code
        == 404
    )
    api.force_authenticate(UserFactory())
    assert api.post(url, {"file": SimpleUploadedFile("wmt.tsv", good)}, format="multipart").status_code == 404


def test_upload_in_the_browser_lists_every_problem_escaped(mqm, client):
    campaign = mqm["campaign"]
    client.force_login(_researcher(campaign))
    url = reverse("campaign-judgements-import", args=[campaign.pk])
    assert url in client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    page = client.post(url, {"file": SimpleUploadedFile("wmt.tsv", mqm["tsv"].read_bytes()), "format": "mqm-tsv"})
    html = page.content.decode()
    # A 400 as the dataset upload page answers (the refused import once answered 200).
    assert page.status_code == 400 and "Nothing was imported: 1 problem" in html
    assert "line 6: the target must mark one error span, as &lt;v&gt;...&lt;/v&gt;" in html
    assert not SpanJudgement.objects.exists()
    empty = client.post(url, {"file": SimpleUploadedFile("wmt.tsv", b""), "format": "mqm-tsv"})
    assert empty.status_code == 400 and "The submitted file is empty." in empty.content.decode()
    good = b"\n".join(line for k, line in enumerate(mqm["tsv"].read_bytes().splitlines()) if k != 5) + b"\n"
    done = client.post(url, {"file": SimpleUploadedFile("wmt.tsv", good), "format": "mqm-tsv"})
    assert done.status_code == 302 and done["Location"] == reverse("campaign-detail", args=[campaign.pk])
    assert SpanJudgement.objects.count() == 5


def test_skip_invalid_through_the_api_and_the_page_lists_the_refused_lines(mqm, client):
    campaign = mqm["campaign"]
    user = _researcher(campaign)
    api = APIClient()
    api.force_authenticate(user)
    raw = mqm["tsv"].read_bytes()
    body = api.post(
        reverse("api-campaign-judgements-import", args=[campaign.pk]),
        {"file": SimpleUploadedFile("wmt.tsv", raw), "format": "mqm-tsv", "skip_invalid": "true"},
        format="multipart",
    ).json()
    assert body["created"] == 4 and body["skipped_lines"] == 2
    assert body["skipped"][0] == "line 6: the target must mark one error span, as <v>...</v>"
    SpanJudgement.objects.all().delete()
    client.force_login(user)
    page = client.post(
        reverse("campaign-judgements-import", args=[campaign.pk]),
        {"file": SimpleUploadedFile("wmt.tsv", raw), "format": "mqm-tsv", "skip_invalid": "on"},
    )
    html = page.content.decode()
    assert page.status_code == 200 and "Imported 4 new judgements from wmt.tsv" in html
    assert "2 lines refused and left out" in html and "line 7: left out with line 6" in html


def test_the_whole_ted_file_through_the_browser_on_a_worker(shared_data, client, settings):
    """2.3 MB: above the upload threshold (2 MiB by default), so a worker imports it (its function
    called here, as the worker's task does); with "Skip invalid lines" the page lists line 6444,
    the one refused."""
    from annotations.models import ImportJob
    from annotations.services.import_jobs import import_job_run

    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 2 * 1024 * 1024  # the default; the test settings raise it

    tsv = shared_data / "wmt-mqm" / "mqm_ted_ende.tsv"
    if not tsv.is_file():
        pytest.skip(f"{tsv} is absent (see ../shared/data/SOURCES.md)")
    run("import_dataset", str(tsv), "--dataset", "ted", "--project", "wmt", "--format", "mqm-tsv")
    run("create_campaign", "--dataset", "ted", "--name", "ted", "--protocol", "mqm", "--criteria", "mqm")
    campaign = Campaign.objects.get(name="ted")
    client.force_login(_researcher(campaign))
    answer = client.post(
        reverse("campaign-judgements-import", args=[campaign.pk]),
        {"file": SimpleUploadedFile("mqm_ted_ende.tsv", tsv.read_bytes()), "format": "mqm-tsv", "skip_invalid": "on"},
    )
    job = ImportJob.objects.get()
    assert answer.status_code == 302 and answer["Location"] == reverse("import-job-detail", args=[job.pk])
    assert job.kind == "judgements" and job.skip_invalid and job.fmt == "mqm-tsv"
    job = import_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.errors
    page = client.get(answer["Location"]).content.decode()
    assert "7405 judgements (7405 new)" in page
    assert "1 line refused and left out" in page and "line 6444: the target must mark one error span" in page
    assert SpanJudgement.objects.filter(campaign=campaign).count() == 7405
