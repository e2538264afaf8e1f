"""A metric that needs references, a source or data is refused when the run is requested, naming
the first item that lacks them (issue 38, item 9: BLEU used to start and fail on the worker with
"segment 0 has no reference")."""

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotations.models import Reference
from metrics.models import MetricRun, RunStatus
from metrics.services import RunInputError, run_create, run_execute_sync
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.metrics.conftest import build_dataset


@pytest.fixture
def dataset(db):
    dataset = build_dataset(name="no-refs", items=4, systems=2)
    Reference.objects.filter(item__external_id__in=["i2", "i3"]).delete()
    return dataset


def test_reference_metrics_are_refused_naming_the_item(dataset):
    for metric in ("bleu", "chrf", "ter", "wer"):
        with pytest.raises(
            RunInputError,
            match=rf"^{metric} needs references for every output, but item 'i2' "
            r"has none \(and 1 other item\(s\)\)",
        ):
            run_create(dataset=dataset, metric=metric)
    user = MembershipFactory(project=dataset.project, user=UserFactory(username="refs-owner"), role="owner").user
    api = APIClient()
    api.force_authenticate(user)
    resp = api.post(f"/api/datasets/{dataset.pk}/metric-runs/", {"metric": "bleu"}, format="json")
    assert resp.status_code == 400 and "item 'i2' has none" in resp.json()["detail"]
    with pytest.raises(CommandError, match="item 'i2' has none"):
        call_command("run_metric", dataset="no-refs", metric="bleu", sync=True, no_progress=True)
    assert not MetricRun.objects.exists()


def test_source_and_data_metrics_too_and_reference_free_ones_start(dataset):
    Reference.objects.filter(item__dataset=dataset).delete()
    dataset.items.filter(external_id="i1").update(source="")
    with pytest.raises(RunInputError, match="^nli needs data triples for every output, but item 'i0'"):
        run_create(dataset=dataset, metric="nli")
    dataset.items.update(data=[["Blue Spice", "eatType", "pub"]])
    with pytest.raises(RunInputError, match="^sari needs references"):
        run_create(dataset=dataset, metric="sari")
    with pytest.raises(RunInputError, match="^yisi2 needs a source text for every output, but item 'i1' has none;"):
        run_create(dataset=dataset, metric="yisi2")
    # Reference-free metrics start and score.
    run = run_execute_sync(run=run_create(dataset=dataset, metric="distinct-n", sync=True)[0])
    assert run.status == RunStatus.DONE, run.error
