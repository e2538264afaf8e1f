"""An MQM campaign whose dataset has an `llm-judge` run (issue 38 item 2): the meta-evaluation page
keeps its metric table and says why the judge cannot be alt-tested against MQM scores; `correlate
--method alt-test` answers with that reason, not a traceback. A spans-mode judge (its score is minus
its weighted errors, MQM's own units) is compared as is."""

import pytest
from django.urls import reverse

from annotations.models import Campaign, Dataset, Membership
from tests.annotations.analysis.judge_runs import judge_run, outputs_by_key
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.protocols.test_mqm import _dataset, fails, generate, run

pytestmark = pytest.mark.django_db


@pytest.fixture
def mqm_world(tmp_path):
    texts, tsv = generate(seed=22)
    _dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    (tmp_path / "r.tsv").write_text(tsv, encoding="utf-8")
    run("import_judgements", str(tmp_path / "r.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    dataset = Dataset.objects.get(name="wmt")
    outputs = outputs_by_key(dataset)
    bleu = score_dataset("wmt", "bleu")
    score = judge_run(dataset, {o.pk: float(10 * k % 100) for k, o in enumerate(outputs.values())})
    return {"campaign": Campaign.objects.get(name="mqm"), "bleu": bleu, "score": score, "outputs": outputs}


def test_meta_evaluation_page_of_an_mqm_campaign_with_a_score_mode_judge(mqm_world, client):
    campaign = mqm_world["campaign"]
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    page = client.get(reverse("analysis-meta", args=[campaign.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    # The metric table is still there, BLEU's row included, and the judge's row says why no alt-test.
    assert 'data-metric="bleu"' in html and 'id="judge-probes"' in html
    assert "has no fixed scale" in html and "spans-mode judge" in html


def test_correlate_alt_test_says_why_on_an_mqm_criterion(mqm_world):
    message = fails(
        "correlate",
        "--campaign",
        "mqm",
        "--metric",
        f"#{mqm_world['score'].pk}",
        "--criterion",
        "mqm",
        "--method",
        "alt-test",
    )
    assert "criterion 'mqm' has no fixed scale" in message and "Traceback" not in message


def test_a_spans_mode_judge_is_alt_tested_on_mqm_scores(mqm_world):
    outputs = mqm_world["outputs"]
    spans = judge_run(
        mqm_world["campaign"].dataset,
        {o.pk: -float(k % 4) for k, o in enumerate(outputs.values())},
        options={"mode": "spans"},
    )
    result = run(
        "correlate",
        "--campaign",
        "mqm",
        "--metric",
        f"#{spans.pk}",
        "--criterion",
        "mqm",
        "--method",
        "alt-test",
        "--min-instances",
        "5",
    )
    assert result["run"] == spans.pk and result["judge_scale"] is None
    assert set(result["annotators"]) == {"r1", "r2", "r3"}
