"""Analysis pages and API: permissions, contents, CSV, cache."""

import csv
import io

import pytest
from django.core.cache import cache
from django.urls import reverse

from annotations.models import Campaign, Membership
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import SYSTEMS, _likert, toy_dataset
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.module_rows import kept_for_module, kept_rows

pytestmark = pytest.mark.django_db

PAGES = [
    "analysis-dashboard",
    "analysis-scatter",
    "analysis-rankings",
    "analysis-meta",
    "analysis-disagreement",
    "analysis-errors",
    "analysis-facts",
]


@pytest.fixture(scope="module")
def _likert_rows(django_db_setup, django_db_blocker, tmp_path_factory):
    """The toy dataset, its Likert campaign with judgements and three done metric runs, built once for the
    module (tests/module_rows.py): an import, a judgement import and three runs per test cost more than
    the pages they serve."""
    with kept_for_module(django_db_blocker):
        folder = tmp_path_factory.mktemp("likert")
        toy_dataset(folder)
        _likert(folder)
        score_dataset("toy", "bleu")
        score_dataset("toy", "wer")
        score_dataset("toy", "minwed", metric="wer", threshold="0.2")
        yield Campaign.objects.get(name="likert")


@pytest.fixture
def likert(request, db, _likert_rows):
    cache.clear()  # the figures' cache lives outside the database: each test starts from none
    return kept_rows(request, _likert_rows)


def _client(client, campaign, role):
    user = UserFactory()
    if role:
        MembershipFactory(project=campaign.dataset.project, user=user, role=role)
    client.force_login(user)
    return client


@pytest.mark.parametrize("name", PAGES)
def test_permissions(client, likert, name):
    url = reverse(name, args=[likert.pk])
    assert _client(client, likert, None).get(url).status_code == 404
    assert _client(client, likert, Membership.Role.ANNOTATOR).get(url).status_code == 404  # confined to units
    response = _client(client, likert, Membership.Role.RESEARCHER).get(url)
    assert response.status_code == 200
    assert response["Content-Security-Policy"]
    csv_response = client.get(url, {"format": "csv"})
    assert csv_response.status_code == 200 or name == "analysis-facts"


def test_api_permissions_and_contract(client, likert):
    url = f"/api/campaigns/{likert.pk}/agreement/"
    assert _client(client, likert, None).get(url).status_code == 404
    assert _client(client, likert, Membership.Role.ANNOTATOR).get(url).status_code == 404  # confined to units
    c = _client(client, likert, Membership.Role.RESEARCHER)
    body = c.get(url, {"bootstrap": 10}).json()
    assert set(body["criteria"]["adequacy"]) >= {
        "krippendorff_alpha",
        "fleiss_kappa",
        "percent_agreement",
        "n_units",
        "n_annotators",
        "ci95",
    }
    corr = c.get(f"/api/campaigns/{likert.pk}/correlation/", {"metric": "bleu", "criterion": "adequacy"}).json()
    assert corr["n"] == 48 and "pearson" in corr and len(corr["ci95"]) == 2
    bad = c.get(f"/api/campaigns/{likert.pk}/correlation/", {"metric": "nope", "criterion": "adequacy"})
    assert bad.status_code == 400
    ranks = c.get(f"/api/campaigns/{likert.pk}/rankings/").json()
    assert [r["system"] for r in ranks["criteria"]["adequacy"]] == SYSTEMS


def test_scatter_points_and_csv(client, likert):
    c = _client(client, likert, Membership.Role.RESEARCHER)
    response = c.get(reverse("analysis-scatter", args=[likert.pk]), {"system": ["s1", "s2"]})
    data = response.context["data"]
    assert len(data["points"]) == 24 and {p["system"] for p in data["points"]} == {"s1", "s2"}
    assert all(p["url"].startswith("/items/") for p in data["points"])
    assert b'id="scatter-data"' in response.content and b"<script>" not in response.content
    rows = list(
        csv.reader(
            io.StringIO(c.get(reverse("analysis-scatter", args=[likert.pk]), {"format": "csv"}).content.decode())
        )
    )
    assert len(rows) == 1 + 48


def test_meta_table_highlights_best_per_column(client, likert):
    c = _client(client, likert, Membership.Role.RESEARCHER)
    data = c.get(reverse("analysis-meta", args=[likert.pk])).context["data"]
    assert len(data["rows"]) == 3  # bleu, wer, minwed
    assert [(col["method"], col["level"]) for col in data["columns"]] == [
        ("pearson", "segment"),
        ("spearman", "segment"),
        ("kendall", "segment"),
        ("acc23", "segment"),
        ("pdp", "segment"),
        ("pearson", "system"),
        ("spa", "system"),
    ]
    spa = [r["cells"][6] for r in data["rows"]]
    assert all(cell["cluster"] >= 1 for cell in spa)  # each metric's significance cluster
    for k in range(len(data["columns"])):
        values = [r["cells"][k]["value"] for r in data["rows"] if r["cells"][k]["value"] is not None]
        best = [r["cells"][k]["value"] for r in data["rows"] if r["cells"][k]["best"]]
        assert best == [max(values)]


def test_disagreement_pseudonymises_annotators(client, likert):
    c = _client(client, likert, Membership.Role.RESEARCHER)
    response = c.get(reverse("analysis-disagreement", args=[likert.pk]), {"sort": "metric"})
    assert response.context["data"]["sort"] == "metric"
    body = response.content.decode()
    assert "ann1" not in body and "A1:" in body
    items = response.context["data"]["items"]
    assert items and len(items[0]["outputs"]) == 4 and len(items[0]["outputs"][0]["scores"]) == 3


def test_error_severity_page(client, likert):
    c = _client(client, likert, Membership.Role.RESEARCHER)
    response = c.get(reverse("analysis-errors", args=[likert.pk]))
    data = response.context["data"]
    assert data["metric"] == "minwed" and data["total"] == 48
    with_errors = [r for r in data["rows"] if r["E"]]
    assert with_errors and any(t["error"] for t in with_errors[0]["tokens"]) or with_errors[0]["missing"]


def test_campaign_page_links_the_dashboard(client, likert):
    c = _client(client, likert, Membership.Role.RESEARCHER)
    body = c.get(reverse("campaign-detail", args=[likert.pk])).content.decode()
    assert reverse("analysis-dashboard", args=[likert.pk]) in body


def test_dashboard_is_cached_until_a_judgement_changes(client, likert, django_assert_max_num_queries):
    c = _client(client, likert, Membership.Role.RESEARCHER)
    url = reverse("analysis-dashboard", args=[likert.pk])
    first = c.get(url).context["agreement"]
    from annotations.models import RatingJudgement

    j = RatingJudgement.objects.filter(campaign=likert).first()
    j.score = 5 if j.score != 5 else 1
    j.save()
    second = c.get(url).context["agreement"]
    assert first[0]["krippendorff_alpha"] != second[0]["krippendorff_alpha"]


def test_nli_facts_page(client, likert):
    """An NLI run's stored extra (the format of metrics.scorers.nli) shown per output."""
    from django.utils import timezone

    from annotations.models import Output
    from metrics.models import MetricRun, OutputScore, RunStatus

    run = MetricRun.objects.create(
        dataset=likert.dataset,
        metric="nli",
        signature="nli|test",
        status=RunStatus.DONE,
        finished_at=timezone.now(),
        higher_is_better=True,
    )
    outputs = list(Output.objects.filter(item__dataset=likert.dataset).order_by("id"))
    for k, o in enumerate(outputs):
        omitted = k % 2 == 0
        OutputScore.objects.create(
            run=run,
            output=o,
            score=0.0 if omitted else 1.0,
            extra={
                "label": "omission" if omitted else "OK",
                "rough": "not OK" if omitted else "OK",
                "confidence": 0.4,
                "facts": [
                    {
                        "triple": ["X", "food", "Thai"],
                        "fact": "The food of X is Thai.",
                        "entailed": not omitted,
                        "probs": {"contradiction": 0.1, "neutral": 0.5, "entailment": 0.4 if omitted else 0.9},
                    }
                ],
                "omitted": ["The food of X is Thai."] if omitted else [],
                "hallucination_check": {"entailed": True, "probs": {"entailment": 0.8}},
            },
        )
    c = _client(client, likert, Membership.Role.RESEARCHER)
    response = c.get(reverse("analysis-facts", args=[likert.pk]), {"problems": "1"})
    data = response.context["data"]
    assert data["labels"] == {"omission": 24, "OK": 24} and data["total"] == 24
    assert all(r["label"] == "omission" for r in data["rows"])
    assert b"The food of X is Thai." in response.content
    rows = list(
        csv.reader(io.StringIO(c.get(reverse("analysis-facts", args=[likert.pk]), {"format": "csv"}).content.decode()))
    )
    assert len(rows) == 1 + 48


def test_error_severity_overlap_with_esa_spans(client, likert, tmp_path):
    """Human ESA spans on the same outputs are shown and their character F1 with the minED error words measured."""
    import json as _json

    from annotations.models import Output
    from metrics.models import OutputScore
    from tests.annotations.analysis.test_protocols import run
    from tests.annotations.test_real_data import write_jsonl

    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "esa-toy",
        "--protocol",
        "esa",
        "--criteria",
        "quality",
        "--severities",
        "minor,major",
    )
    score = (
        OutputScore.objects.filter(run__metric="minwed", extra__E__gt=0)
        .select_related("output__item", "output__system")
        .first()
    )
    output = score.output
    words = output.text.split()
    first_error = next(e for e in score.extra["errors"] if e["hyp"] is not None)
    start = sum(len(w) + 1 for w in words[: first_error["position"]])
    end = start + len(words[first_error["position"]])
    write_jsonl(
        tmp_path / "esa.jsonl",
        [
            {
                "item": output.item.external_id,
                "system": output.system.name,
                "annotator": "h1",
                "criterion": "quality",
                "score": 50,
                "spans": [{"start": start, "end": end, "severity": "major"}],
            }
        ],
    )
    run("import_judgements", str(tmp_path / "esa.jsonl"), "--campaign", "esa-toy")
    c = _client(client, likert, Membership.Role.RESEARCHER)
    data = c.get(reverse("analysis-errors", args=[likert.pk]), {"limit": 48}).context["data"]
    row = next(r for r in data["rows"] if r["output"] == output.pk)
    metric_chars = sum(len(t["text"]) for t in row["tokens"] if t["error"])
    # The human marked exactly one of the metric's error words: F1 = 2 * |word| / (|metric chars| + |word|).
    assert row["overlap"] == pytest.approx(2 * (end - start) / (metric_chars + (end - start)))
    assert any(s["severity"] == "major" for s in row["human"][0]["segments"])
    assert _json.dumps(row)  # serialisable for the template / CSV
    assert Output.objects.filter(pk=output.pk).exists()


def test_item_detail_leaves_out_excluded_annotators(client, likert):
    """The disagreement page's item detail reads through the one reader: an annotator excluded by
    quality control is not shown under "included annotators", and is shown under "all"."""
    from annotations.models import Annotator
    from annotations.quality.services.decisions import annotator_decide

    researcher = UserFactory()
    MembershipFactory(project=likert.dataset.project, user=researcher, role=Membership.Role.RESEARCHER)
    annotator_decide(
        campaign=likert,
        annotator=Annotator.objects.get(name="ann2"),
        included=False,
        reason="failed the controls",
        user=researcher,
    )
    cache.clear()
    client.force_login(researcher)

    def shown(annotators):
        data = client.get(reverse("analysis-disagreement", args=[likert.pk]), {"annotators": annotators}).context[
            "data"
        ]
        return {len(o["judgements"]) for item in data["items"] for o in item["outputs"]}

    assert shown("included") == {2}  # ann1 and ann3: each output was rated by all three
    assert shown("all") == {3}
