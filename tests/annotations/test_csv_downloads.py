"""Every CSV the workbench writes neutralises spreadsheet formulas in every cell, headers included.

A campaign whose system names, criterion and annotator names start with each
character a spreadsheet runs as a formula (=, +, -, @, tab, CR) is downloaded
from every CSV surface; no cell of any of them may start a formula, except
numbers (a negative score stays a number), and each hostile name is there,
neutralised (a leading apostrophe, OWASP's advice).
"""

import csv
import io

import pytest
from django.urls import reverse

from annotations.export import ExportOptions, export_dataset
from annotations.models import Annotator, Campaign, Membership, RatingJudgement, System
from annotations.quality.services.decisions import completion_code_issue
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import _likert, dataset  # noqa: F401  (fixture)
from tests.annotations.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
SYSTEMS = {"s1": "=1+1", "s2": "+cmd|' /C calc'!A0", "s3": "-2+3", "s4": "@SUM(A1:A9)"}
ANNOTATORS = {"ann1": "\tann1", "ann2": "\rann2", "ann3": "=ann3"}
CRITERION = "=adequacy"


@pytest.fixture
def hostile(dataset, tmp_path):  # noqa: F811
    from django.core.cache import cache

    cache.clear()
    _likert(tmp_path)
    score_dataset("toy", "bleu")
    score_dataset("toy", "minwed", metric="wer", threshold="0.2")
    campaign = Campaign.objects.get(name="likert")
    for old, new in SYSTEMS.items():
        System.objects.filter(dataset=campaign.dataset, name=old).update(name=new)
    for old, new in ANNOTATORS.items():
        Annotator.objects.filter(name=old).update(name=new)
    RatingJudgement.objects.filter(campaign=campaign).update(criterion=CRITERION)
    campaign.criteria = [CRITERION]
    campaign.criteria_config = [{**c, "name": CRITERION} for c in campaign.criteria_config] or []
    campaign.save()
    for annotator in Annotator.objects.all():
        completion_code_issue(campaign=campaign, annotator=annotator, batch=0)
    return campaign


def _cells(text: str) -> list[str]:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows, "an empty CSV proves nothing"
    cells = [cell for row in rows for cell in row]
    for cell in cells:
        if cell.startswith(FORMULA_STARTS):
            float(cell)  # only a number may start with - or +
    return cells


def _header(text: str) -> list[str]:
    return next(csv.reader(io.StringIO(text)))


@pytest.fixture
def researcher_client(client, hostile):
    user = UserFactory()
    MembershipFactory(project=hostile.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    return client


def _download(client, name: str, campaign, **params) -> str:
    response = client.get(reverse(name, args=[campaign.pk]), {"format": "csv", **params})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), name
    assert response["Content-Disposition"].startswith("attachment")
    return response.content.decode()


def test_analysis_downloads_neutralise_names_and_headers(researcher_client, hostile):
    client, campaign = researcher_client, hostile
    dashboard = _cells(_download(client, "analysis-dashboard", campaign))
    assert "'" + CRITERION in dashboard
    scatter = _download(client, "analysis-scatter", campaign)
    assert "'" + CRITERION in _header(scatter)  # a header cell named after the criterion
    assert {"'" + name for name in SYSTEMS.values()} <= set(_cells(scatter))
    rankings = _cells(_download(client, "analysis-rankings", campaign))
    assert {"'" + name for name in SYSTEMS.values()} <= set(rankings)
    meta = _download(client, "analysis-meta", campaign)
    assert any(cell.startswith("'" + CRITERION + ":") for cell in _header(meta))
    _cells(meta)
    _cells(_download(client, "analysis-disagreement", campaign))
    errors = _cells(_download(client, "analysis-errors", campaign))
    assert {"'" + name for name in SYSTEMS.values()} & set(errors)


def test_completion_codes_download_neutralises_annotator_names(researcher_client, hostile):
    response = researcher_client.get(reverse("campaign-completion-codes-csv", args=[hostile.pk]))
    assert response.status_code == 200
    cells = _cells(response.content.decode())
    assert {"'" + name for name in ANNOTATORS.values()} <= set(cells)


def test_exported_csv_tables_neutralise_every_cell(hostile, tmp_path):
    export_dataset(campaign=hostile, out=tmp_path / "out", options=ExportOptions(fmt="csv", real_annotator_ids=True))
    tables = {}
    for path in (tmp_path / "out").glob("*.csv"):
        with path.open(encoding="utf-8", newline="") as handle:  # a CR in a cell stays a CR
            tables[path.name] = handle.read()
    assert {"judgements.csv", "outputs.csv"} <= set(tables)
    every = set()
    for text in tables.values():
        every |= set(_cells(text))
    assert {"'" + name for name in SYSTEMS.values()} <= every
    assert {"'" + name for name in ANNOTATORS.values()} <= every
    assert "'" + CRITERION in every


def test_csv_header_cells_are_neutralised_too(tmp_path):
    from annotations.export.csvsafe import csv_response
    from annotations.export.tables import CsvTable

    response = csv_response('a "quoted"\nname', ["=cmd", "@x", "ok"], [["+1", -3, "\rz"]])
    assert _header(response.content.decode()) == ["'=cmd", "'@x", "ok"]
    assert list(csv.reader(io.StringIO(response.content.decode())))[1] == ["'+1", "-3", "'\rz"]
    assert "\n" not in response["Content-Disposition"]
    table = CsvTable(tmp_path / "t.csv")
    table.write({"=criterion": "-x", "n": -2})
    table.close()
    assert list(csv.reader(io.StringIO((tmp_path / "t.csv").read_text()))) == [["'=criterion", "n"], ["'-x", "-2"]]
