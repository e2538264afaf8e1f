"""`load_demo`: the demo project of `make run`, through the real importer, idempotent."""

import io
import json

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from annotations.demo import demo_datasets
from annotations.demo.simulated import NOTICE, SIMULATED
from annotations.models import Assignment, Campaign, Dataset, Item, Membership, Output, Project, Reference, System, Unit

pytestmark = pytest.mark.django_db


def _load(*args) -> str:
    out = io.StringIO()
    call_command("load_demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture(scope="module")
def first_load(django_db_setup, django_db_blocker) -> dict:
    """The JSON summary of a first `load_demo` into an empty database, run once for the module's tests
    (it simulates annotators and runs BLEU, chrF and BERTScore on every dataset), inside a transaction
    rolled back after the module's last test, so nothing of it outlives the module. Each test's own
    writes are rolled back to a savepoint as usual, so every test starts from the freshly loaded demo."""
    from django.db import transaction

    with django_db_blocker.unblock():
        loaded = transaction.atomic()
        loaded.__enter__()
        try:
            yield json.loads(_load("--json"))
        finally:
            transaction.set_rollback(True)
            loaded.__exit__(None, None, None)


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


def test_load_demo_creates_users_project_datasets_and_campaigns(first_load):
    assert "Demo ready" in _load()  # what the command prints (here over the loaded demo: nothing to add)
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

    likert = Campaign.objects.exclude(name__endswith=SIMULATED).get(
        dataset__name="demo-restaurants-d2t", protocol="likert"
    )
    assert likert.criteria == ["fluency", "adequacy"]
    assert (likert.scale_min, likert.scale_max) == (1, 5)
    # A campaign of every protocol open for annot, and a finished one of every protocol.
    protocols = ["bws", "cesa", "esa", "likert", "mqm", "pairwise", "rankme"]
    open_campaigns = Campaign.objects.exclude(name__endswith=SIMULATED)
    assert sorted(open_campaigns.values_list("protocol", flat=True)) == protocols
    assert sorted(Campaign.objects.filter(name__endswith=SIMULATED).values_list("protocol", flat=True)) == protocols
    from annotations.services.assignments import assignment_next
    from annotations.services.projects import annotator_get_or_create

    annot = annotator_get_or_create(
        project=project, name="annot", user=Membership.objects.get(user__username="annot").user
    )
    for campaign in open_campaigns:
        assignment, created = assignment_next(campaign=campaign, annotator=annot)
        assert assignment is not None and created, campaign.name


def test_finished_campaigns_are_complete_labelled_and_analysable(client, first_load):
    """The first visit shows figures: every unit of the simulated campaigns judged k times by
    annotators named as simulated, done metric runs, and agreement on the dashboard."""
    summary = first_load
    finished = Campaign.objects.filter(name__endswith=SIMULATED)
    assert finished.count() == Campaign.objects.exclude(name__endswith=SIMULATED).count()
    for campaign in finished:
        assert campaign.instructions.startswith(NOTICE), campaign.name
        assert campaign.stopped_at is not None and "simulated annotators" in campaign.stop_reason
        units = Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR)
        done = Assignment.objects.filter(campaign=campaign, status=Assignment.Status.DONE)
        assert units.exists() and done.count() == units.count() * campaign.redundancy, campaign.name
        names = set(done.values_list("annotator__name", flat=True))
        assert names and all(n.startswith("simulated-") for n in names), names
        report = io.StringIO()
        call_command("agreement", "--campaign", campaign.name, "--json", stdout=report)
        for criterion, figures in json.loads(report.getvalue())["criteria"].items():
            assert figures["n_units"] > 0 and figures["headline"]["value"] is not None, (campaign.name, criterion)
    runs = {(r["dataset"], r["metric"]) for r in summary["runs"] if r["status"] == "done"}
    assert runs == {(d.name, m) for d in demo_datasets() for m in ("bleu", "chrf", "bertscore")}
    # Annotators are not offered the finished copies (stopped: nothing to hand out).
    assert client.login(username="annot", password="annot")
    home = client.get("/annotate/").content.decode()
    assert "Demo restaurants: RankME" in home and SIMULATED not in home
    client.logout()
    # The researcher's first visit: the dashboard names the campaign as simulated.
    assert client.login(username="demo", password="demo")
    likert = finished.get(protocol="likert")
    page = client.get(f"/campaigns/{likert.pk}/analysis/")
    assert page.status_code == 200 and b"simulated annotators" in page.content


def test_load_demo_twice_changes_nothing(first_load):
    before = _counts()
    summary = json.loads(_load("--json"))
    assert _counts() == before
    assert {d["state"] for d in summary["datasets"]} == {"unchanged"}
    assert {c["state"] for c in summary["campaigns"]} == {"exists"}
