"""The analysis, quality and meta-evaluation APIs of a large campaign (issue 45): above
WORKBENCH_FIGURES_INLINE_MAX judgements no request reads the campaign's judgements (counted in
rows and statements, not in time); the answer is the worker's figure with its status and age, 202
before the first one."""

from contextlib import contextmanager

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotations.analysis.figure_jobs import figure_compute
from annotations.models import Campaign, Membership, RatingJudgement
from annotations.services import figures as figure_services
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_figures_on_workers import _judgement_reads
from tests.annotations.analysis.test_protocols import _likert, dataset  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory

N_JUDGEMENTS = 144  # _likert: 12 items x 4 systems x 3 annotators
# Every figure endpoint a researcher's script calls, with a query each.
APIS = [
    ("api-campaign-agreement", {"bootstrap": 10}),
    ("api-campaign-correlation", {"metric": "bleu", "criterion": "adequacy", "bootstrap": 10}),
    ("api-campaign-correlation", {"metric": "bleu", "criterion": "adequacy", "method": "kendall", "level": "system"}),
    ("api-campaign-rankings", {"criterion": "adequacy", "resamples": 20}),
    ("api-campaign-quality", {}),
]


@pytest.fixture
def likert(dataset, tmp_path):  # noqa: F811
    cache.clear()
    _likert(tmp_path)
    score_dataset("toy", "bleu")
    return Campaign.objects.get(name="likert")


@pytest.fixture
def api(likert):
    user = UserFactory()
    MembershipFactory(project=likert.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def sent(monkeypatch):
    """The tasks the APIs send, kept here instead of the broker."""
    tasks = []
    monkeypatch.setattr(figure_services.celery_app, "send_task", lambda name, args, **kw: tasks.append((name, args)))
    return tasks


@contextmanager
def rows_read():
    """Counts the rows every statement of the block returned (`counted["rows"]`), and keeps the statements."""
    counted = {"rows": 0}

    def count(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        rowcount = context["cursor"].rowcount
        if sql.lstrip().upper().startswith("SELECT") and rowcount and rowcount > 0:
            counted["rows"] += rowcount
        return result

    with CaptureQueriesContext(connection) as queries, connection.execute_wrapper(count):
        yield counted
    counted["statements"] = queries.captured_queries


def _work(sent):
    """What a worker does with the tasks sent so far."""
    for _, args in list(sent):
        figure_compute(campaign_id=args[0], name=args[1], params=args[2])
    sent.clear()


@pytest.mark.django_db
def test_no_api_computes_a_whole_campaign_figure_above_the_threshold(api, likert, sent):
    """On the code before this change every one of these requests read the campaign's 144 judgements
    (and answered 200 at once)."""
    # What the APIs answer computing inline (a small campaign for the default threshold).
    inline = {}
    for name, query in APIS:
        response = api.get(reverse(name, args=[likert.pk]), query)
        assert response.status_code == 200, response.content
        inline[(name, str(query))] = response.json()
        assert "figure" not in inline[(name, str(query))]
    assert not sent
    cache.clear()  # a first request, as at scale: nothing in Django's cache either

    with override_settings(WORKBENCH_FIGURES_INLINE_MAX=100):
        for name, query in APIS:
            url = reverse(name, args=[likert.pk])
            with rows_read() as first:
                response = api.get(url, query)
            assert _judgement_reads(first["statements"]) == [], name
            assert first["rows"] < N_JUDGEMENTS / 2, (name, first["rows"])
            assert response.status_code == 202, (name, response.content)
            assert response.json()["figure"]["status"] == "queued"
            assert response["Retry-After"]
            assert [task for task, _ in sent] == [figure_services.FIGURES_TASK]
            # Asked again before a worker took it: nothing more is sent.
            assert api.get(url, query).status_code == 202 and len(sent) == 1

            for _ in range(3):  # the quality report has two figures: the second is asked for once the first is known
                _work(sent)
                with rows_read() as then:
                    response = api.get(url, query)
                if response.status_code != 202:
                    break
                assert _judgement_reads(then["statements"]) == [], name
            assert response.status_code == 200, (name, response.content)
            assert _judgement_reads(then["statements"]) == [], name
            assert then["rows"] < N_JUDGEMENTS / 2, (name, then["rows"])
            body = response.json()
            figure = body.pop("figure")
            assert figure["status"] == "ready" and response["X-Figure-Status"] == "ready"
            assert figure["age_seconds"] >= 0 and figure["computed_at"]
            # The worker's figure is the one the request computes for a small campaign.
            assert body == inline[(name, str(query))], name
            assert not sent


@pytest.mark.django_db
@override_settings(WORKBENCH_FIGURES_INLINE_MAX=100)
def test_a_changed_campaign_answers_its_last_figure_with_age_and_status(api, likert, sent):
    url = reverse("api-campaign-agreement", args=[likert.pk])
    query = {"bootstrap": 0}
    assert api.get(url, query).status_code == 202
    _work(sent)
    before = api.get(url, query).json()
    assert before["figure"]["status"] == "ready"

    judgement = RatingJudgement.objects.filter(campaign=likert).order_by("pk").first()
    RatingJudgement.objects.filter(pk=judgement.pk).update(
        score=1 if judgement.score != 1 else 2, updated_at=timezone.now()
    )
    response = api.get(url, query)
    assert response.status_code == 200
    stale = response.json()
    assert stale["figure"]["status"] == "queued" and response["Retry-After"]
    assert stale["figure"]["computed_at"] == before["figure"]["computed_at"]
    assert stale["criteria"] == before["criteria"]  # the last figure, not a recomputation
    assert len(sent) == 1, "one computation asked for"
    assert api.get(url, query).status_code == 200 and len(sent) == 1  # debounced

    figure_services.figure_state_running(campaign_id=likert.pk, name="api-agreement")
    assert api.get(url, query).json()["figure"]["status"] == "computing"
    figure_services.figure_state_idle(campaign_id=likert.pk)
    _work(sent)
    after = api.get(url, query).json()
    assert after["figure"]["status"] == "ready"
    assert after["figure"]["computed_at"] > before["figure"]["computed_at"]


@pytest.mark.django_db
@override_settings(WORKBENCH_FIGURES_INLINE_MAX=100)
def test_bad_queries_are_refused_before_any_figure_is_asked_for(api, likert, sent):
    response = api.get(reverse("api-campaign-rankings", args=[likert.pk]), {"criterion": "nope"})
    assert response.status_code == 400 and "criterion" in response.json()
    response = api.get(reverse("api-campaign-correlation", args=[likert.pk]), {"metric": "bleu"})
    assert response.status_code == 400
    assert not sent


@pytest.mark.django_db
def test_the_schema_documents_the_202_and_the_figure_status():
    schema = APIClient().get("/api/schema/", {"format": "json"}).json()
    for path in ("agreement", "correlation", "rankings", "mqm-errors", "quality"):
        responses = schema["paths"][f"/api/campaigns/{{id}}/{path}/"]["get"]["responses"]
        assert "202" in responses, path
    status = schema["components"]["schemas"]["FigureStatus"]["properties"]["status"]
    ref = status.get("$ref") or status["allOf"][0]["$ref"]
    enum = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["enum"]
    assert set(enum) == {"ready", "computing", "queued"}
