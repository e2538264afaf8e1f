"""The dashboard shows ESA's span agreement (issue 38: it was in the API only)."""

import io
import json

import pytest
from django.core.management import call_command

from annotations.models import Campaign, Membership
from tests.annotations.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_dashboard_shows_span_agreement_as_the_api(tmp_path, client):
    quiet = io.StringIO()
    items = [
        {"item": "i1", "source": "s", "outputs": {"A": "0123456789"}},
        {"item": "i2", "source": "s", "outputs": {"A": "abcdefghij"}},
    ]
    call_command("import_dataset", _write(tmp_path / "d.jsonl", items), "--dataset", "spans", stdout=quiet)
    call_command(
        "create_campaign",
        "--dataset",
        "spans",
        "--name",
        "esa-spans",
        "--protocol",
        "esa",
        "--criteria",
        "quality",
        "--redundancy",
        "2",
        stdout=quiet,
    )
    # i1: characters 0-3 against 2-5 (2 shared of 4 + 4); i2: the same 3 characters by both.
    judgements = [
        {
            "item": "i1",
            "system": "A",
            "annotator": "w1",
            "criterion": "quality",
            "score": 60,
            "spans": [{"start": 0, "end": 4, "severity": "minor"}],
        },
        {
            "item": "i1",
            "system": "A",
            "annotator": "w2",
            "criterion": "quality",
            "score": 70,
            "spans": [{"start": 2, "end": 6, "severity": "minor"}],
        },
        {
            "item": "i2",
            "system": "A",
            "annotator": "w1",
            "criterion": "quality",
            "score": 50,
            "spans": [{"start": 5, "end": 8, "severity": "major"}],
        },
        {
            "item": "i2",
            "system": "A",
            "annotator": "w2",
            "criterion": "quality",
            "score": 40,
            "spans": [{"start": 5, "end": 8, "severity": "major"}],
        },
    ]
    call_command("import_judgements", _write(tmp_path / "j.jsonl", judgements), "--campaign", "esa-spans", stdout=quiet)
    campaign = Campaign.objects.get(name="esa-spans")
    client.force_login(MembershipFactory(project=campaign.project, role=Membership.Role.RESEARCHER).user)
    api = client.get(f"/api/campaigns/{campaign.pk}/agreement/").json()
    spans = api["criteria"]["quality"]["spans"]
    # By hand: micro F1 = 2 * (2 + 3) / ((4 + 4) + (3 + 3)) = 10 / 14; mean over the two outputs' pairs.
    assert spans["micro_f1"] == pytest.approx(10 / 14) and spans["outputs"] == 2
    page = client.get(f"/campaigns/{campaign.pk}/analysis/").content.decode()
    table = page.split('id="span-agreement"')[1].split("</table>")[0]
    assert f'data-field="micro-f1">{10 / 14:.3f}<' in table
    assert f'data-field="mean-f1">{spans["mean_f1"]:.3f}<' in table
