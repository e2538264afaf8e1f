"""spBLEU from the dataset page's run form (issue 43): `tokenize=flores200` with `spm=` naming a
SentencePiece model inside the data directories; a worker scores it as sacrebleu's own flores200
tokenizer does on the same model file; without `spm` the form shows why it is refused."""

import pytest
from sacrebleu.metrics import BLEU

from annotations.models import Membership, Output
from metrics.models import MetricRun, RunStatus
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.browser.conftest import log_in
from tests.metrics.conftest import build_dataset
from tests.metrics.test_spbleu import sacrebleu_models, spm_bytes, spm_file  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_spbleu_run_from_the_form(page, live_server, spm_file, sacrebleu_models, start_celery_worker):  # noqa: F811
    lab = build_dataset(name="spbleu-browser", items=5, systems=2)
    MembershipFactory(project=lab.project, user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER)
    start_celery_worker(WORKBENCH_DATA_DIRS=str(spm_file.parent))
    page.set_default_timeout(60_000)
    log_in(page, "rita", "pw-123456")
    page.goto(f"/datasets/{lab.pk}/")
    panel = page.locator("#metric-runs")
    panel.get_by_label("Metric").select_option("bleu")
    panel.get_by_label("tokenize").fill("flores200")
    panel.get_by_role("button", name="Start run").click()
    page.locator("#metric-run-error").filter(has_text="needs spm=PATH").wait_for()
    assert not MetricRun.objects.exists()

    panel.get_by_label("spm").fill(spm_file.name)  # relative: looked up in the data directories
    panel.get_by_role("button", name="Start run").click()
    panel.locator('tr[data-run-id][data-status="done"]').wait_for(timeout=120_000)
    run = MetricRun.objects.get()
    assert run.status == RunStatus.DONE and run.options["spm"] == spm_file.name
    outputs = list(Output.objects.filter(item__dataset=lab).select_related("item").order_by("item__position", "pk"))
    want = BLEU(tokenize="flores200").corpus_score(
        [o.text for o in outputs], [[o.item.references.get().text for o in outputs]]
    )
    row = panel.locator(f'tr[data-run-id="{run.pk}"]')
    assert row.locator('[data-field="score"]').inner_text() == f"{want.score:.4f}"
    assert "tok:flores200" in run.signature and "spm:sha256:" in run.signature
