"""`load_demo`: the demo project of `make run`, through the real importer, idempotent."""
import io
import json

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from annotations.demo import demo_datasets
from annotations.models import Campaign, Dataset, Item, Membership, Output, Project, Reference, System

pytestmark = pytest.mark.django_db


def _load(*args) -> str:
    out = io.StringIO()
    call_command("load_demo", *args, stdout=out)
    return out.getvalue()


def _counts() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (Project, Membership, Dataset, Item, Reference, System, Output, Campaign))


def test_demo_data_covers_four_tasks_with_two_to_four_systems():
    datasets = demo_datasets()
    assert len(datasets) == 4
    assert 30 <= sum(len(d.items) for d in datasets) <= 60
    for demo in datasets:
        systems = {name for item in demo.items for name in item["outputs"]}
        assert 2 <= len(systems) <= 4, demo.name
        ids = [item["item"] for item in demo.items]
        assert len(ids) == len(set(ids)), demo.name
        assert all(item["references"] for item in demo.items), demo.name
    d2t = datasets[0]
    assert all(item["data"] and all(len(t) == 3 for t in item["data"]) for item in d2t.items)
    # Deterministic: the importer sees the same bytes every run.
    assert [d.jsonl() for d in demo_datasets()] == [d.jsonl() for d in datasets]


def test_load_demo_creates_users_project_datasets_and_campaigns():
    output = _load()
    assert "Demo ready" in output
    project = Project.objects.get(name="Demo")
    roles = dict(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert roles == {"demo": "owner", "annot": "annotator"}
    assert authenticate(username="demo", password="demo") is not None
    assert authenticate(username="annot", password="annot") is not None

    for demo in demo_datasets():
        dataset = Dataset.objects.get(name=demo.name)
        assert dataset.project == project
        assert dataset.items.count() == len(demo.items)
        assert Output.objects.filter(item__dataset=dataset).count() == sum(len(i["outputs"]) for i in demo.items)

    likert = Campaign.objects.get(dataset__name="demo-restaurants-d2t", protocol="likert")
    assert likert.criteria == ["fluency", "adequacy"]
    assert (likert.scale_min, likert.scale_max) == (1, 5)
    # A campaign of every protocol, and annot can work on each.
    assert sorted(Campaign.objects.values_list("protocol", flat=True)) == ["bws", "esa", "likert", "mqm",
                                                                           "pairwise", "rankme"]
    from annotations.services.assignments import assignment_next
    from annotations.services.projects import annotator_get_or_create

    annot = annotator_get_or_create(project=project, name="annot",
                                    user=Membership.objects.get(user__username="annot").user)
    for campaign in Campaign.objects.all():
        assignment, created = assignment_next(campaign=campaign, annotator=annot)
        assert assignment is not None and created, campaign.name


def test_load_demo_twice_changes_nothing():
    _load()
    before = _counts()
    summary = json.loads(_load("--json"))
    assert _counts() == before
    assert {d["state"] for d in summary["datasets"]} == {"unchanged"}
    assert {c["state"] for c in summary["campaigns"]} == {"exists"}
