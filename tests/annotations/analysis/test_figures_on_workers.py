"""Figures on workers (issue 45): above WORKBENCH_FIGURES_INLINE_MAX judgements, the analysis,
quality and meta-evaluation pages read no judgement row (the figure is a worker's); they show the
last figure with its age while a new one is computed, and a waiting page before the first."""

import re

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotations.analysis.figure_jobs import figure_compute
from annotations.models import Campaign, Membership, RatingJudgement
from annotations.models.figures import FigureSnapshot
from annotations.selectors import figures_cache
from annotations.services import figures as figure_services
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import _likert, dataset  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.waiting import wait_until

# The pages whose figures a worker computes, with the figure each waits for first.
PAGES = ["analysis-dashboard", "analysis-meta", "campaign-quality"]
JUDGEMENT_TABLE = RatingJudgement._meta.db_table


def _judgement_reads(queries, width: int = 300) -> list[str]:
    """Statements that read judgement rows: anything on the judgement table but the figures' state
    probe (`MAX(updated_at)`) and the bounded size check (`LIMIT`)."""
    found = []
    for q in queries:
        sql = q["sql"]
        if f'"{JUDGEMENT_TABLE}"' not in sql:
            continue
        if 'MAX("' in sql.upper() and "UPDATED_AT" in sql.upper() or " LIMIT " in sql:
            continue
        found.append(sql[:width])
    return found


@pytest.fixture
def likert(dataset, tmp_path):  # noqa: F811
    from django.core.cache import cache

    cache.clear()
    _likert(tmp_path)  # 12 items x 4 systems x 3 annotators: 144 judgements
    score_dataset("toy", "bleu")
    score_dataset("toy", "wer")
    return Campaign.objects.get(name="likert")


@pytest.fixture
def staff(client, likert):
    user = UserFactory()
    MembershipFactory(project=likert.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    return client


@pytest.fixture
def sent(monkeypatch):
    """The tasks the pages send, kept here instead of the broker."""
    tasks = []
    monkeypatch.setattr(figure_services.celery_app, "send_task", lambda name, args, **kw: tasks.append((name, args)))
    return tasks


@pytest.mark.django_db
@override_settings(WORKBENCH_FIGURES_INLINE_MAX=100)
def test_no_page_computes_a_whole_campaign_figure_above_the_threshold(staff, likert, sent):
    """On the code before issue 45 each of these pages read the campaign's 144 judgements."""
    for name in PAGES:
        sent.clear()
        _page_reads_no_judgement(staff, likert, sent, name)


def _page_reads_no_judgement(staff, likert, sent, name):
    url = reverse(name, args=[likert.pk])
    with CaptureQueriesContext(connection) as queries:
        response = staff.get(url)
    assert response.status_code == 202
    assert _judgement_reads(queries.captured_queries) == []
    assert len(queries.captured_queries) < 60
    assert sent and all(task == figure_services.FIGURES_TASK for task, _ in sent)
    page = response.content.decode()
    assert "computed on a worker" in page and "js/figures-status.js" in page
    # Each figure is asked for once per state of the campaign, however often the page is opened.
    n = len(sent)
    staff.get(url)
    assert len(sent) == n

    # What the worker does with those tasks; then the page reads the figures and no judgement row.
    for _, args in list(sent):
        figure_compute(campaign_id=args[0], name=args[1], params=args[2])
    for _ in range(3):  # a figure may ask for another only once the first is known (e.g. the waves)
        with CaptureQueriesContext(connection) as queries:
            response = staff.get(url)
        if response.status_code == 200:
            break
        for _, args in sent[n:]:
            figure_compute(campaign_id=args[0], name=args[1], params=args[2])
        n = len(sent)
    assert response.status_code == 200
    assert _judgement_reads(queries.captured_queries) == []
    assert "updating" not in response.content.decode()


@pytest.mark.django_db
def test_small_campaigns_compute_in_the_request(staff, likert, sent):
    response = staff.get(reverse("analysis-dashboard", args=[likert.pk]))
    assert response.status_code == 200 and not sent
    assert not FigureSnapshot.objects.exists()


@pytest.mark.django_db
@override_settings(WORKBENCH_FIGURES_INLINE_MAX=100)
def test_a_changed_campaign_shows_the_last_figure_with_its_age_and_updates(staff, likert, sent):
    url = reverse("analysis-dashboard", args=[likert.pk])
    assert staff.get(url).status_code == 202
    for _, args in sent:
        figure_compute(campaign_id=args[0], name=args[1], params=args[2])
    before = staff.get(url).content.decode()
    assert "updating" not in before
    # A judgement changes: the page answers at once with the figure it has, says how old it is and polls.
    judgement = RatingJudgement.objects.filter(campaign=likert).order_by("pk").first()
    RatingJudgement.objects.filter(pk=judgement.pk).update(
        score=1 if judgement.score != 1 else 2, updated_at=timezone.now()
    )
    sent.clear()
    response = staff.get(url)
    page = response.content.decode()
    assert response.status_code == 200 and "updating" in page and "computed" in page
    assert sent, "a new figure is asked for"
    status_url = page.split('data-status-url="')[1].split('"')[0].replace("&amp;", "&")
    status = staff.get(status_url).json()
    assert status["ready"] is False and status["total"] >= 1
    for _, args in sent:
        assert figure_compute(campaign_id=args[0], name=args[1], params=args[2])
    assert staff.get(status_url).json()["ready"] is True
    assert "updating" not in staff.get(url).content.decode()
    # Annotators and strangers learn nothing from the status.
    client = staff
    client.force_login(UserFactory())
    assert client.get(status_url).status_code == 404


@pytest.mark.django_db(transaction=True)
@override_settings(WORKBENCH_FIGURES_INLINE_MAX=100)
def test_a_worker_computes_the_figures_the_page_asked_for(staff, likert, celery_worker_process):
    """The real path: the page sends the task by name to the broker, the shared Celery worker computes
    the figure, the status says ready and the page then shows it."""
    url = reverse("analysis-meta", args=[likert.pk])
    response = staff.get(url)
    assert response.status_code == 202
    status_url = response.content.decode().split('data-status-url="')[1].split('"')[0].replace("&amp;", "&")
    wait_until(lambda: staff.get(status_url).json()["ready"], 180, "the worker to compute the meta-evaluation")
    for _ in range(3):  # the meta page's other figures (judges, tasks) come after its table
        response = staff.get(url)
        if response.status_code == 200:
            break
        status_url = response.content.decode().split('data-status-url="')[1].split('"')[0].replace("&amp;", "&")
        wait_until(lambda: staff.get(status_url).json()["ready"], 180, "the worker to compute the rest")
    assert response.status_code == 200
    current = figures_cache.stamp(likert)
    assert FigureSnapshot.objects.filter(campaign=likert, name="meta", stamp=current).exists()


@pytest.mark.django_db
@override_settings(WORKBENCH_FIGURES_INLINE_MAX=100)
def test_the_disagreement_page_reads_only_the_items_it_shows(staff, likert, sent, monkeypatch):
    """The ranking is a worker's figure; the page then reads the judgements of the items it shows in
    one statement naming only them (it computed the ranking over all 144 judgements in the request,
    and read each shown item's judgements and each run's every score once per item)."""
    from annotations.analysis import pages

    monkeypatch.setattr(pages, "DISAGREEMENT_SHOWN", 2)
    url = reverse("analysis-disagreement", args=[likert.pk])
    with CaptureQueriesContext(connection) as queries:
        assert staff.get(url).status_code == 202
    assert _judgement_reads(queries.captured_queries) == []
    for _, args in list(sent):
        figure_compute(campaign_id=args[0], name=args[1], params=args[2])
    with CaptureQueriesContext(connection) as queries:
        response = staff.get(url)
    assert response.status_code == 200
    assert len(response.context["data"]["items"]) == 2
    reads = _judgement_reads(queries.captured_queries, width=100_000)
    assert len(reads) == 1, reads
    named = re.search(r'"item_id" IN \(([^)]*)\)', reads[0])
    assert named and len(named.group(1).split(",")) == 2, reads[0]
    # Each run's scores for the shown items' outputs only: one statement, never a run's every score.
    scores = [q["sql"] for q in queries.captured_queries if '"metrics_outputscore"' in q["sql"]]
    assert len(scores) <= 2 and all('"output_id" IN (' in sql for sql in scores), scores


@pytest.mark.django_db
@override_settings(WORKBENCH_FIGURES_INLINE_MAX=100)
def test_a_page_reads_the_campaigns_state_once_however_many_figures_it_shows(staff, likert, sent):
    """The quality page reads three figures (the annotators' figures twice, through quality control's
    selectors, and the agreement); each read of the campaign's state (`figures_cache.stamp`) is ten
    statements, and it was read for each: 48 statements a view at 1M, 28 now (bench/README.md, issue
    45). Pinned by the statements, not by time: the state probe runs once per request."""
    url = reverse("campaign-quality", args=[likert.pk])
    for _ in range(4):  # the page asks for its next figure once the one before is known
        if staff.get(url).status_code == 200:
            break
        for _, args in sent:
            figure_compute(campaign_id=args[0], name=args[1], params=args[2])
    with CaptureQueriesContext(connection) as queries:
        response = staff.get(url)
    assert response.status_code == 200 and "updating" not in response.content.decode()
    state_probes = [q["sql"] for q in queries.captured_queries if f'MAX("{JUDGEMENT_TABLE}"."updated_at")' in q["sql"]]
    assert len(state_probes) == 1
    # Every annotator's decision form still posts its annotator's id.
    page = response.content.decode()
    for annotator_id in RatingJudgement.objects.filter(campaign=likert).values_list("annotator_id", flat=True):
        assert f'<input type="hidden" name="annotator" value="{annotator_id}">' in page
