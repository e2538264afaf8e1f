"""Snapshots of figures (issue 45) read through `figures_cache.cached` inside a page: current, old
(answered with its age, a new one asked for), missing (FigurePending), failed (raises as in the
request); outside a page nothing changes."""

import pytest
from django.core.cache import cache
from django.test import override_settings

from annotations.selectors import figures_cache
from annotations.selectors.figures_cache import FigureFailed, FigurePending
from annotations.services import figures as figure_services
from annotations.services.figures import figure_snapshot_store
from tests.annotations.factories import CampaignFactory
from workbench.celery import app as celery_app

pytestmark = pytest.mark.django_db


@override_settings(WORKBENCH_FIGURES_INLINE_MAX=-1)  # every campaign is "large"
def test_snapshots_current_old_missing_and_failed():
    campaign = CampaignFactory()
    asked = []
    names = {"meta", "judges"}
    with figures_cache.from_workers(names=names, refresh=lambda **kw: asked.append(kw["name"])) as page:
        with pytest.raises(FigurePending):
            figures_cache.cached(campaign, "meta", {"a": 1}, lambda: 1 / 0)
        assert asked == ["meta"] and page.pending[0]["name"] == "meta"
        figure_snapshot_store(campaign_id=campaign.pk, name="meta", params={"a": 1}, stamp="old", value={"v": 1})
        assert figures_cache.cached(campaign, "meta", {"a": 1}, lambda: 1 / 0) == {"v": 1}
        assert page.stale and page.oldest() is not None and asked == ["meta", "meta"]
        current = figures_cache.stamp(campaign)
        figure_snapshot_store(campaign_id=campaign.pk, name="meta", params={"a": 1}, stamp=current, value={"v": 2})
        assert figures_cache.cached(campaign, "meta", {"a": 1}, lambda: 1 / 0) == {"v": 2}
        assert len(asked) == 2
        failed = FigureFailed(ValueError("no done run"))
        figure_snapshot_store(campaign_id=campaign.pk, name="judges", params={}, stamp=current, value=failed)
        with pytest.raises(ValueError, match="no done run"):
            figures_cache.cached(campaign, "judges", {}, lambda: 1 / 0)
        # A figure no worker computes is computed in the request.
        assert figures_cache.cached(campaign, "other", {}, lambda: 3) == 3
    # Outside a page (commands, exports, APIs): computed as before.
    assert figures_cache.cached(campaign, "meta", {"a": 2}, lambda: 4) == 4


@override_settings(WORKBENCH_FIGURES_DEBOUNCE_S=5)
def test_submits_refresh_only_campaigns_whose_figures_a_page_asked_for(monkeypatch):
    """A submit sends no refresh for a campaign no page reads (a web worker serving annotators then never
    loads Celery: tests/workbench/test_worker_modules.py), and one per debounce once a page asked."""
    sent = []
    monkeypatch.setattr(celery_app, "send_task", lambda name, args, **kw: sent.append((name, args)))
    read, unread = CampaignFactory(), CampaignFactory()
    cache.clear()
    figure_services.figure_refresh_request(campaign=read, name="meta", params={}, stamp="s")
    sent.clear()
    for _ in range(3):
        figure_services.figures_changed(campaign_id=unread.pk)
        figure_services.figures_changed(campaign_id=read.pk)
    assert sent == [(figure_services.REFRESH_TASK, [read.pk])]
