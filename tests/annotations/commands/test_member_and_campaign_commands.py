"""`add_member` and the new `create_campaign` options."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotations.models import Campaign, Membership
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    OutputFactory,
    ProjectFactory,
    SystemFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _run(*args) -> dict:
    out = io.StringIO()
    call_command(*args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_add_member_creates_accounts_and_gives_roles():
    project = ProjectFactory(name="p")
    UserFactory(username="existing")
    summary = _run("add_member", "--project", "p", "--role", "researcher", "--create", "existing", "fresh")
    assert summary == {"project": "p", "members": 2, "created": 1}
    fresh = get_user_model().objects.get(username="fresh")
    assert not fresh.has_usable_password()
    assert dict(Membership.objects.filter(project=project).values_list("user__username", "role")) == {
        "existing": "researcher",
        "fresh": "researcher",
    }


def test_add_member_refuses_unknown_accounts_without_create_and_changes_nothing():
    ProjectFactory(name="p")
    err = io.StringIO()
    with pytest.raises(CommandError, match="no member was added"):
        call_command("add_member", "--project", "p", "--role", "owner", "ghost", stderr=err)
    assert "ghost: no such account" in err.getvalue()
    with pytest.raises(CommandError, match="no project"):
        call_command("add_member", "--project", "nope", "--role", "owner", "x", stderr=io.StringIO())
    assert not Membership.objects.exists()


def test_add_member_keeps_one_owner():
    project = ProjectFactory(name="p")
    call_command("add_member", "--project", "p", "--role", "owner", "--create", "boss", stdout=io.StringIO())
    with pytest.raises(CommandError, match="at least one owner"):
        call_command("add_member", "--project", "p", "--role", "annotator", "boss", stdout=io.StringIO())
    assert Membership.objects.get(project=project).role == "owner"


def test_create_campaign_esa_with_systems():
    dataset = DatasetFactory(name="d")
    for name in ("a", "b", "c"):
        system = SystemFactory(dataset=dataset, name=name)
        OutputFactory(item=ItemFactory(dataset=dataset), system=system)
    summary = _run(
        "create_campaign",
        "--dataset",
        "d",
        "--name",
        "e",
        "--protocol",
        "esa",
        "--criteria",
        "quality",
        "--systems",
        "a,c",
        "--redundancy",
        "3",
        "--severities",
        "minor,major,critical",
    )
    assert summary["scale"] == [0.0, 100.0] and summary["systems"] == ["a", "c"] and summary["units"] == 2
    campaign = Campaign.objects.get(name="e")
    assert campaign.options["severities"] == ["minor", "major", "critical"] and campaign.redundancy == 3
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command(
            "create_campaign",
            "--dataset",
            "d",
            "--name",
            "x",
            "--protocol",
            "esa",
            "--criteria",
            "q",
            "--systems",
            "zzz",
            stderr=err,
        )
    assert "--systems" in err.getvalue()
