"""An MQM campaign rated by one rater per output (as WMT's TED files are), on the analysis pages
(issue 38 item 4): the Error severity page names the campaign's protocol (MQM, not "ESA") and says
why there is no span agreement; the dashboard says why its agreement figure is empty; the MQM
errors page is in the analysis navigation."""

import pytest
from django.urls import reverse

from annotations.models import Campaign, Membership
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.protocols.test_mqm import _dataset, generate, run

pytestmark = pytest.mark.django_db


def test_one_rater_per_output_mqm_campaign_on_the_analysis_pages(tmp_path, client):
    texts, tsv = generate(seed=22, raters=("r1",))
    _dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    (tmp_path / "r.tsv").write_text(tsv, encoding="utf-8")
    run("import_judgements", str(tmp_path / "r.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    score_dataset("wmt", "minwed", metric="wer")
    campaign = Campaign.objects.get(name="mqm")
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)

    errors = client.get(reverse("analysis-errors", args=[campaign.pk])).content.decode()
    assert "campaigns: mqm (MQM error annotation)" in errors and "ESA:" not in errors
    assert "every output was judged by one annotator, and span agreement needs two on the same output" in errors

    dashboard = client.get(reverse("analysis-dashboard", args=[campaign.pk])).content.decode()
    assert "no unit was judged by two or more annotators (one rater per output)" in dashboard
    assert reverse("analysis-mqm-errors", args=[campaign.pk]) in dashboard
