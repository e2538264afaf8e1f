"""Judgement imports: ESA spans, and imported annotators apart from accounts (issue 6, item 4)."""

import io
import json

import pytest

from annotations.models import Annotator, Assignment, ErrorSpan, Membership, RatingJudgement, SpanJudgement
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.imports import ImportFailed, judgements_import
from annotations.services.projects import annotator_get_or_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _jsonl(*rows) -> io.BytesIO:
    return io.BytesIO("\n".join(json.dumps(r) for r in rows).encode())


@pytest.fixture
def dataset():
    dataset = DatasetFactory()
    system = SystemFactory(dataset=dataset, name="sysA")
    item = ItemFactory(dataset=dataset, external_id="e1")
    OutputFactory(item=item, system=system, text="The cat sat on teh mat.")
    return dataset


def test_esa_judgements_import_with_spans_and_reimport_is_a_no_op(dataset):
    campaign_create(
        dataset=dataset, name="esa", protocol="esa", criteria=["quality"], severities=["minor", "major", "critical"]
    )
    rows = [
        {
            "item": "e1",
            "system": "sysA",
            "annotator": "w1",
            "criterion": "quality",
            "score": 72,
            "spans": [{"start": 15, "end": 18, "severity": "minor"}, {"missing": True, "severity": "major"}],
        },
        {"item": "e1", "system": "sysA", "annotator": "w2", "criterion": "quality", "score": 90},
    ]
    result = judgements_import(stream=_jsonl(*rows), campaign_name="esa")
    assert result.created == 2
    judged = SpanJudgement.objects.get(annotator__name="w1")
    assert (judged.score, judged.origin, judged.status) == (72, "import", "complete")
    assert sorted(judged.spans.values_list("start", "end", "severity", "missing"), key=str) == sorted(
        [(15, 18, "minor", False), (None, None, "major", True)], key=str
    )
    assert judgements_import(stream=_jsonl(*rows), campaign_name="esa").unchanged
    assert ErrorSpan.objects.count() == 2


@pytest.mark.parametrize(
    "span,message",
    [
        ({"start": 15, "end": 99, "severity": "minor"}, "output's length"),
        ({"start": 3, "end": 3, "severity": "minor"}, "start < end"),
        ({"start": 0, "end": 3, "severity": "critical"}, "severity must be one of minor, major"),
        ({"missing": True, "start": 2, "severity": "minor"}, "no start or end"),
    ],
)
def test_bad_spans_are_line_errors(dataset, span, message):
    campaign_create(dataset=dataset, name="esa", protocol="esa", criteria=["quality"])
    row = {"item": "e1", "system": "sysA", "annotator": "w1", "criterion": "quality", "score": 50, "spans": [span]}
    with pytest.raises(ImportFailed) as failed:
        judgements_import(stream=_jsonl(row), campaign_name="esa")
    assert str(failed.value.errors[0]).startswith("line 1:") and message in str(failed.value.errors[0])
    assert not SpanJudgement.objects.exists()


def test_an_imported_worker_with_an_accounts_name_is_not_that_account(dataset):
    """The bug of issue 6 item 4: importing "annotator": "annA" attached the rows to the
    real user annA, who then listed judgements they never made and was stuck forever."""
    campaign = campaign_create(
        dataset=dataset, name="lik", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5, redundancy=2
    )
    user = UserFactory(username="annA")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    account = annotator_get_or_create(project=dataset.project, name="annA", user=user)
    assignment, _ = assignment_next(campaign=campaign, annotator=account)
    row = {"item": "e1", "system": "sysA", "annotator": "annA", "criterion": "fluency", "score": 2}
    judgements_import(stream=_jsonl(row), campaign_name="lik")
    imported = Annotator.objects.get(project=dataset.project, name="annA", namespace="import")
    assert imported != account and imported.user is None
    assert not RatingJudgement.objects.filter(annotator=account).exists()
    # The account's assignment can be completed.
    output = dataset.items.get().outputs.get()
    unit_submit(
        annotator=account,
        assignment_id=assignment.pk,
        judgements=[{"criterion": "fluency", "output": output.pk, "score": 5}],
    )
    assert Assignment.objects.get(pk=assignment.pk).status == "done"


def test_an_explicit_mapping_attaches_imported_rows_to_an_account(dataset):
    campaign_create(dataset=dataset, name="lik", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5)
    user = UserFactory(username="annB")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    row = {"item": "e1", "system": "sysA", "annotator": "worker-17", "criterion": "fluency", "score": 4}
    with pytest.raises(ImportFailed, match="no member"):
        judgements_import(stream=_jsonl(row), campaign_name="lik", annotator_map={"worker-17": "nobody"})
    judgements_import(stream=_jsonl(row), campaign_name="lik", annotator_map={"worker-17": "annB"})
    judged = RatingJudgement.objects.get()
    assert judged.annotator.user == user and judged.annotator.namespace == "account"
