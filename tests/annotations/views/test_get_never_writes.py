"""GETs never write: every page and API read leaves every table as it was.

The annotator's campaign page (`annotate-campaign`) is a landing page on GET;
its Start / Continue button POSTs, and only that hands out a unit (an
assignment, the annotator's enrolment and, at the end, the last completion
code). The unit page (`annotate-unit`) only shows the pending unit. A join
link's page (`join`) writes nothing either: its Start button POSTs.
"""

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.export import ExportOptions
from annotations.export.jobs import export_job_create
from annotations.models import Item, Output
from annotations.models.quality import CompletionCode
from annotations.quality.services import quality_settings_update
from annotations.services.campaigns import campaign_create

pytestmark = pytest.mark.django_db

# Sessions are the login's state, not data (a page may pop a flash message from it).
NOT_DATA = {"django_session"}
WRITES = ("INSERT", "UPDATE", "DELETE")


def _row_counts() -> dict[str, int]:
    """Every data table's row count, in one statement (one round trip, not one per table: the check runs
    twice for each of some 170 reads)."""
    tables = sorted(m._meta.db_table for m in apps.get_models() if m._meta.db_table not in NOT_DATA and m._meta.managed)
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"(SELECT count(*) FROM {quote(t)})" for t in tables))
        return dict(zip(tables, cursor.fetchone()))


def _writes(queries) -> list[str]:
    found = []
    for query in queries:
        sql = query["sql"].lstrip().upper()
        if sql.startswith(WRITES) or " FOR UPDATE" in sql:
            if not any(f'"{table.upper()}"' in sql for table in NOT_DATA):
                found.append(query["sql"][:200])
    return found


@pytest.fixture
def world(researcher, annotator, dataset):
    campaign = campaign_create(
        dataset=dataset,
        name="Rate me",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        units_per_batch=4,
    )
    quality_settings_update(campaign=campaign, completion_codes=True)
    api = APIClient()
    api.force_login(annotator)
    # Every unit (5 outputs), without the last `next-assignment` call that would find nothing left:
    # the last, partial batch has no code yet, which a read must not issue.
    for _ in range(Output.objects.filter(item__dataset=dataset).count()):
        got = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
        assert got.status_code == 201, got.content
        payload = got.json()
        sent = api.post(
            f"/api/assignments/{payload['id']}/submit/",
            {
                "judgements": [{"criterion": "fluency", "output": payload["item"]["outputs"][0]["id"], "score": 4}],
                "shown_order": payload["shown_order"],
            },
            format="json",
        )
        assert sent.status_code == 201, sent.content
    assert CompletionCode.objects.count() == 1
    job = export_job_create(user=researcher, campaign=campaign, options=ExportOptions())
    return campaign, job, api


def _page_urls(campaign, job) -> list[str]:
    project, dataset = campaign.dataset.project, campaign.dataset
    item = Item.objects.filter(dataset=dataset).first()
    pk = campaign.pk
    names = [
        "campaign-detail",
        "campaign-progress",
        "campaign-figures-status",
        "campaign-judgements",
        "campaign-quality",
        "campaign-completion-codes-csv",
        "campaign-export",
        "annotate-completion-code",
        "analysis-dashboard",
        "analysis-scatter",
        "analysis-rankings",
        "analysis-meta",
        "analysis-disagreement",
        "analysis-errors",
        "analysis-facts",
        "annotate-campaign",
        "annotate-unit",
    ]
    urls = [reverse(name, args=[pk]) for name in names]
    urls += [
        reverse("analysis-dashboard", args=[pk]) + "?format=csv",
        reverse("analysis-rankings", args=[pk]) + "?format=csv",
    ]
    urls += [
        reverse("project-list"),
        reverse("project-detail", args=[project.pk]),
        reverse("project-members", args=[project.pk]),
        reverse("campaign-new", args=[project.pk]),
        reverse("dataset-detail", args=[dataset.pk]),
        reverse("dataset-upload"),
        reverse("item-detail", args=[item.pk]),
        reverse("annotate-home"),
        reverse("export-job-detail", args=[job.pk]),
        reverse("export-job-download", args=[job.pk]),
    ]
    return urls


def _api_urls(campaign, job) -> list[str]:
    project, dataset = campaign.dataset.project, campaign.dataset
    item = Item.objects.filter(dataset=dataset).first()
    pk = campaign.pk
    return [
        "/api/projects/",
        f"/api/projects/{project.pk}/",
        f"/api/projects/{project.pk}/members/",
        "/api/datasets/",
        f"/api/datasets/{dataset.pk}/",
        f"/api/items/?dataset={dataset.pk}",
        f"/api/items/{item.pk}/",
        f"/api/outputs/?item={item.pk}",
        "/api/campaigns/",
        f"/api/campaigns/{pk}/",
        f"/api/assignments/?campaign={pk}",
        f"/api/judgements/ratings/?campaign={pk}",
        f"/api/judgements/pairwise/?campaign={pk}",
        f"/api/judgements/bestworst/?campaign={pk}",
        f"/api/judgements/spans/?campaign={pk}",
        f"/api/campaigns/{pk}/quality/",
        f"/api/campaigns/{pk}/quality/settings/",
        f"/api/campaigns/{pk}/quality/gold/",
        f"/api/campaigns/{pk}/quality/codes/",
        f"/api/campaigns/{pk}/completion-code/",
        f"/api/campaigns/{pk}/agreement/?bootstrap=0",
        f"/api/campaigns/{pk}/rankings/",
        f"/api/exports/{job.pk}/",
        f"/api/datasets/{dataset.pk}/metric-runs/",
    ]


def _check_reads(client, urls: list[str]) -> None:
    for url in urls:
        before = _row_counts()
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code < 500, (url, response.status_code)
        assert _writes(queries.captured_queries) == [], url
        assert _row_counts() == before, url


@pytest.mark.parametrize("who", ["researcher", "annotator", "owner"])
def test_pages_and_api_reads_write_nothing(client, world, who, request):
    campaign, job, _ = world
    user = request.getfixturevalue(who)
    client.force_login(user)
    _check_reads(client, _page_urls(campaign, job) + _api_urls(campaign, job))


def test_the_last_code_is_issued_by_the_write_that_finds_nothing_left(world):
    campaign, _, api = world
    url = f"/api/campaigns/{campaign.pk}/completion-code/"
    full_batch = api.get(url).json()
    assert full_batch["batch"] == 1 and CompletionCode.objects.count() == 1
    assert api.post(f"/api/campaigns/{campaign.pk}/next-assignment/").status_code == 204
    last = api.get(url).json()
    assert last["batch"] == 2 and last["code"] != full_batch["code"]
    assert CompletionCode.objects.count() == 2


def test_the_landing_and_unit_pages_hand_out_nothing_on_get(client, world, dataset):
    """The campaign's landing page and the unit page, with a unit pending and without."""
    from annotations.models import Annotator, Assignment
    from annotations.services.campaigns import campaign_create
    from annotations.studies.services import join_link_create

    campaign = campaign_create(
        dataset=dataset,
        name="Fresh",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        units_per_batch=4,
    )
    link = join_link_create(campaign=campaign, completion_url="https://example.org/done?cc={code}")
    from tests.annotations.factories import MembershipFactory, UserFactory

    fresh = MembershipFactory(project=dataset.project, user=UserFactory(username="fresh"), role="annotator").user
    client.force_login(fresh)
    urls = [reverse("annotate-campaign", args=[campaign.pk]), reverse("annotate-unit", args=[campaign.pk])]
    _check_reads(client, urls)
    assert not Assignment.objects.filter(campaign=campaign).exists()
    client.post(urls[0])
    assert Assignment.objects.filter(campaign=campaign, status="pending").count() == 1
    _check_reads(client, urls)
    client.logout()
    n_annotators = Annotator.objects.count()
    _check_reads(
        client,
        [reverse("join", args=[link.token]) + "?PROLIFIC_PID=5f0c1e2d3b4a596877665544&STUDY_ID=s1&SESSION_ID=x1"],
    )
    assert Annotator.objects.count() == n_annotators
