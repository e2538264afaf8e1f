"""Filters of a large campaign's figures from precomputed pieces (issue 45): a filter by systems of
the MQM error breakdown is a selection from the figure over all systems, and a figure computed for one
criterion is computed for every criterion in the same task, so neither filter change waits for a
worker. Both equal what the request computes for a small campaign."""

import numpy as np
import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.analysis.figure_jobs import figure_compute
from annotations.models import Campaign, Membership, RatingJudgement, SpanJudgement
from annotations.services import figures as figure_services
from tests.annotations.analysis.test_protocols import SYSTEMS, dataset  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.protocols import test_mqm
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _clean_cache():
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def sent(monkeypatch):
    tasks = []
    monkeypatch.setattr(figure_services.celery_app, "send_task", lambda name, args, **kw: tasks.append((name, args)))
    return tasks


def _api(campaign) -> APIClient:
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client = APIClient()
    client.force_authenticate(user)
    return client


def _work(sent):
    while sent:
        _, args = sent.pop(0)
        figure_compute(campaign_id=args[0], name=args[1], params=args[2])


def _reads(queries, model) -> list[str]:
    """Statements reading the judgement table beyond the state probe and the bounded size check."""
    table = f'"{model._meta.db_table}"'
    return [
        q["sql"][:200]
        for q in queries.captured_queries
        if table in q["sql"] and not ("MAX(" in q["sql"].upper() or " LIMIT " in q["sql"])
    ]


def test_a_subset_of_systems_is_selected_from_the_breakdown_over_all(tmp_path, sent):
    texts, tsv = test_mqm.generate(seed=22)
    test_mqm._dataset(tmp_path, texts)
    test_mqm.run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    (tmp_path / "r.tsv").write_text(tsv, encoding="utf-8")
    test_mqm.run("import_judgements", str(tmp_path / "r.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    campaign = Campaign.objects.get(name="mqm")
    api = _api(campaign)
    url = reverse("api-campaign-mqm-errors", args=[campaign.pk])
    subsets = ["sysA", "sysA,sysC", "sysB,sysC", "sysC"]
    inline = {s: api.get(url, {"systems": s}).json() for s in subsets}  # a small campaign: in the request
    assert not sent and all("figure" not in v for v in inline.values())
    assert [row["system"] for row in inline["sysA,sysC"]["systems"]] != []

    n = SpanJudgement.objects.filter(campaign=campaign).count()
    with override_settings(WORKBENCH_FIGURES_INLINE_MAX=n // 2):
        # The first subset asks a worker for the breakdown over all systems, nothing else.
        assert api.get(url, {"systems": subsets[0]}).status_code == 202
        assert [(name, args[1], args[2]["systems"]) for name, args in sent] == [
            (figure_services.FIGURES_TASK, "api-mqm-errors", None)
        ]
        _work(sent)
        for subset in subsets:
            with CaptureQueriesContext(connection) as queries:
                response = api.get(url, {"systems": subset})
            assert response.status_code == 200, response.content
            body = response.json()
            assert body.pop("figure")["status"] == "ready"
            assert body == inline[subset], subset
            assert _reads(queries, SpanJudgement) == []
        assert not sent, "no filter change made a computation"


def test_another_criterion_was_computed_with_the_first(dataset, tmp_path, sent):  # noqa: F811
    test_mqm.run(
        "create_campaign", "--dataset", "toy", "--name", "two", "--protocol", "likert", "--criteria",
        "adequacy,fluency", "--scale", "1-5",
    )  # fmt: skip
    rng = np.random.default_rng(3)
    rows = [
        {"item": f"i{i}", "system": s, "annotator": a, "criterion": c, "score": int(rng.integers(1, 6))}
        for i in range(12)
        for s in SYSTEMS
        for a in ("ann1", "ann2", "ann3")
        for c in ("adequacy", "fluency")
    ]
    test_mqm.run("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", rows)), "--campaign", "two")
    campaign = Campaign.objects.get(name="two")
    api = _api(campaign)
    url = reverse("api-campaign-agreement", args=[campaign.pk])
    queries = {c: {"criterion": c, "bootstrap": 10} for c in ("adequacy", "fluency")}
    inline = {c: api.get(url, q).json() for c, q in queries.items()}
    assert not sent

    with override_settings(WORKBENCH_FIGURES_INLINE_MAX=100):
        assert api.get(url, queries["adequacy"]).status_code == 202
        assert len(sent) == 1
        _work(sent)
        for c, q in queries.items():
            with CaptureQueriesContext(connection) as captured:
                response = api.get(url, q)
            assert response.status_code == 200
            body = response.json()
            assert body.pop("figure")["status"] == "ready"
            assert body == inline[c], c
            assert _reads(captured, RatingJudgement) == []
        assert not sent, "switching criterion read a stored figure"
