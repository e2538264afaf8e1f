"""The age banner and progress indicator of figures computed on workers (issue 45), in Chromium at
390 px: a campaign above WORKBENCH_FIGURES_INLINE_MAX shows a waiting page before its first figure,
then the figure; after a change, the last figure with its age and the worker's progress, and the new
figure once the worker has stored it. The "worker" is this test, running the tasks the pages send;
every step waits on what the page shows, never on the clock."""

import pytest
from django.test import override_settings
from django.utils import timezone

from annotations.analysis.figure_jobs import figure_compute
from annotations.models import Campaign, Membership, RatingJudgement
from annotations.services import figures as figure_services
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import _likert, dataset  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.browser.conftest import browser_wait_until, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BANNER = "[data-figures-status]"
STATE = "[data-figures-state]"


@pytest.fixture
def likert(live_server, dataset, tmp_path):  # noqa: F811
    from django.core.cache import cache

    cache.clear()
    _likert(tmp_path)  # 144 judgements
    score_dataset("toy", "bleu")
    campaign = Campaign.objects.get(name="likert")
    MembershipFactory(
        project=campaign.dataset.project, user=UserFactory(username="res"), role=Membership.Role.RESEARCHER
    )
    return campaign


@pytest.fixture
def sent(monkeypatch):
    """The tasks the live server's pages send, kept here for the test to run as the worker."""
    tasks = []
    monkeypatch.setattr(figure_services.celery_app, "send_task", lambda name, args, **kw: tasks.append((name, args)))
    return tasks


def _work(sent) -> int:
    done = 0
    while sent:
        _, args = sent.pop(0)
        done += figure_compute(campaign_id=args[0], name=args[1], params=args[2])
    return done


def _fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth") <= 390


@override_settings(WORKBENCH_FIGURES_INLINE_MAX=100)
def test_a_stale_figure_shows_its_age_and_progress_then_updates_at_390px(new_page, likert, sent):
    page = new_page(viewport={"width": 390, "height": 844})
    page.set_default_timeout(60_000)  # a loaded 2-core machine
    log_in(page, "res", "pw-123456")
    url = f"/campaigns/{likert.pk}/analysis/"

    # No figure yet: the waiting page, with its progress indicator, asked a worker for the figures.
    response = page.goto(url)
    assert response.status == 202
    banner = page.locator(BANNER)
    assert banner.is_visible() and "being computed on a worker" in banner.inner_text()
    assert page.locator("[data-figures-progress]").is_visible()
    assert _fits(page)
    browser_wait_until(page, lambda: bool(sent), 30, "the page to ask a worker for its figures")

    # The worker stores the figures: the page notices on its own and shows them, without the banner.
    for _ in range(5):  # a figure may need another once it is known: the page asks, the worker computes
        browser_wait_until(
            page, lambda: sent or page.locator("#agreement-table").count(), 60, "a figure asked for, or the page"
        )
        if not sent:
            break
        _work(sent)
    page.wait_for_selector("#agreement-table")
    assert page.locator(BANNER).count() == 0
    before = page.locator("#agreement-table").inner_text()

    # A judgement changes: the page opens at once with the last figure, its age, "updating" and the state.
    judgement = RatingJudgement.objects.filter(campaign=likert).order_by("pk").first()
    RatingJudgement.objects.filter(pk=judgement.pk).update(
        score=1 if judgement.score != 1 else 5, updated_at=timezone.now()
    )
    response = page.goto(url)
    assert response.status == 200
    banner = page.locator(BANNER)
    assert banner.is_visible()
    text = banner.inner_text()
    assert "computed" in text and "ago" in text and "updating" in text
    assert page.locator(f"{BANNER} time[datetime]").count() == 1
    assert page.locator("#agreement-table").inner_text() == before  # the old figure, shown at once
    assert _fits(page)
    browser_wait_until(page, lambda: page.locator(STATE).inner_text() == "queued", 30, "the state to say queued")
    browser_wait_until(page, lambda: bool(sent), 30, "the page to ask for a new figure")

    # The worker starts: the indicator says so (the page polls the status).
    figure_services.figure_state_running(campaign_id=likert.pk, name="agreement")
    browser_wait_until(
        page, lambda: page.locator(STATE).inner_text().startswith("computing"), 30, "the state to say computing"
    )
    assert page.locator("[data-figures-progress]").is_visible()

    # It finishes: the page reloads itself with the new figure, and the banner is gone.
    _work(sent)
    figure_services.figure_state_idle(campaign_id=likert.pk)
    browser_wait_until(page, lambda: page.locator(BANNER).count() == 0, 60, "the page to show the new figure")
    page.wait_for_selector("#agreement-table")
    assert _fits(page)
