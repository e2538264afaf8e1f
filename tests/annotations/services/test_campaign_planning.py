"""Campaign planning bounded (issue 24, finding 4): a pairwise campaign over one item with 400
systems planned 79,800 units in a web thread (20 s); 2,000 systems grew past 2 GB. Now the size
is counted first (one grouped query), capped, and big plans go to a worker with progress."""

import random

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client

from annotations import protocols
from annotations.models import Campaign, Dataset, Item, Membership, Output, System, Unit
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.units import PlanningInProgress, campaign_units_count, campaign_units_plan_worker
from tests.annotations.factories import AnnotatorFactory, MembershipFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def dataset_with(systems: int, items: int = 1, name: str = "plan-ds") -> Dataset:
    dataset = Dataset.objects.create(project=ProjectFactory(), name=name)
    syss = System.objects.bulk_create([System(dataset=dataset, name=f"s{k}") for k in range(systems)])
    its = Item.objects.bulk_create(
        [Item(dataset=dataset, external_id=f"i{i}", position=i, source="x") for i in range(items)]
    )
    Output.objects.bulk_create([Output(item=it, system=s, text="y") for it in its for s in syss])
    return dataset


@pytest.mark.parametrize(
    "protocol,extra",
    [
        ("likert", {}),
        ("esa", {}),
        ("rankme", {"tuple_size": 3}),
        ("rankme", {"tuple_size": 5}),
        ("bws", {"tuple_size": 4}),
        ("bws", {"tuple_size": 3}),
        ("pairwise", {}),
        ("pairwise", {"pair_rounds": 2}),
        ("pairwise", {"pair_rounds": 50}),
    ],
)
def test_the_count_is_what_planning_makes(protocol, extra):
    """units_of_item against plan_item itself, for every size from 0 to 30 outputs."""
    campaign = Campaign(protocol=protocol, options={k: v for k, v in extra.items() if v is not None}, seed=1)
    proto = protocols.get(protocol)
    for n in range(31):
        outputs = [(k, k) for k in range(n)]
        made = list(proto.plan_item(campaign, 0, outputs, random.Random(1)))
        assert proto.units_of_item(campaign, n) == len(made), (protocol, extra, n)


def test_a_campaign_over_the_cap_is_refused_with_its_size(settings):
    settings.WORKBENCH_CAMPAIGN_MAX_UNITS = 10_000
    settings.WORKBENCH_CAMPAIGN_MAX_SYSTEMS = 5_000  # the units cap under test, not the systems cap
    dataset = dataset_with(systems=400)
    with pytest.raises(ValidationError) as info:
        campaign_create(dataset=dataset, name="too big", protocol="pairwise", criteria=["overall"])
    assert "79,800 units; at most 10,000" in " ".join(info.value.messages)
    assert not Campaign.objects.filter(name="too big").exists() and not Unit.objects.exists()
    # 2,000 systems: refused at once, from the count (no pair is made).
    big = dataset_with(systems=2000, name="plan-2000")
    with pytest.raises(ValidationError, match="1,999,000 units"):
        campaign_create(dataset=big, name="huge", protocol="pairwise", criteria=["overall"])
    # Balanced rounds fit.
    campaign = campaign_create(dataset=dataset, name="rounds", protocol="pairwise", criteria=["overall"], pair_rounds=3)
    assert campaign.n_units == Unit.objects.filter(campaign=campaign).count() == 600


def test_a_big_campaign_is_planned_by_a_worker_and_shows_progress(
    settings, django_capture_on_commit_callbacks, monkeypatch
):
    settings.WORKBENCH_CAMPAIGN_PLAN_ASYNC_UNITS = 1000
    dataset = dataset_with(systems=100)  # 4,950 pairs
    sent = []
    from annotations import tasks
    from workbench.celery import app as celery_app

    monkeypatch.setattr(celery_app, "send_task", lambda name, args: sent.append((name, args)))
    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_create(dataset=dataset, name="async", protocol="pairwise", criteria=["overall"])
    # The name the service sends is the one the worker runs.
    assert sent == [(tasks.campaign_plan_task.name, [campaign.pk])]
    assert campaign.planned_at is None and campaign.plan_status == "queued" and campaign.plan_total == 4950
    assert not Unit.objects.filter(campaign=campaign).exists()

    owner = MembershipFactory(project=dataset.project, role=Membership.Role.OWNER).user
    client = Client()
    client.force_login(owner)
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "Planning the units" in page and 'http-equiv="refresh"' in page and "0 of 4950" in page
    annotator = AnnotatorFactory(project=dataset.project)
    with pytest.raises(PlanningInProgress, match="being planned"):
        assignment_next(campaign=campaign, annotator=annotator)

    assert campaign_units_plan_worker(campaign_id=campaign.pk) == 4950  # what the worker runs
    assert campaign_units_plan_worker(campaign_id=campaign.pk) == 0  # a duplicate delivery: nothing
    campaign.refresh_from_db()
    assert campaign.planned_at is not None and campaign.n_units == 4950 and campaign.plan_status == ""
    assert Unit.objects.filter(campaign=campaign).count() == 4950
    assert "Planning the units" not in client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert assignment_next(campaign=campaign, annotator=annotator) is not None


def test_broker_down_fails_the_planning_with_a_message(settings, django_capture_on_commit_callbacks, monkeypatch):
    settings.WORKBENCH_CAMPAIGN_PLAN_ASYNC_UNITS = 10
    dataset = dataset_with(systems=20)
    from workbench.celery import app as celery_app

    def down(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to redis")

    monkeypatch.setattr(celery_app, "send_task", down)
    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_create(dataset=dataset, name="nobroker", protocol="pairwise", criteria=["overall"])
    campaign.refresh_from_db()
    assert campaign.plan_status == "failed" and "task queue is unreachable" in campaign.plan_error
    call_command("plan_campaign", "nobroker")
    campaign.refresh_from_db()
    assert campaign.n_units == 190 and campaign.planned_at is not None


def test_the_command_plans_in_process_with_a_progress_line(capsys, settings):
    settings.WORKBENCH_CAMPAIGN_MAX_SYSTEMS = 500  # a campaign big enough to plan in batches
    dataset_with(systems=210)  # 21,945 pairs: three batches
    call_command("create_campaign", dataset="plan-ds", name="cli-big", protocol="pairwise", criteria="overall")
    err = capsys.readouterr().err
    assert "planning units [" in err and "21,945 / 21,945" in err
    assert Campaign.objects.get(name="cli-big").n_units == 21945
    assert campaign_units_count(campaign=Campaign.objects.get(name="cli-big")) == 21945
