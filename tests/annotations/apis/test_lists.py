"""List endpoints return exactly the rows the caller may see: nothing from
other projects, and for annotators nothing of other annotators (and no staff
list at all: they reach their units through the unit API only)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotations.models import Assignment, Output
from tests.annotations.factories import AnnotatorFactory


def _ids(client, url):
    response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert body["count"] == len(body["results"])  # all on one page here
    return {row["id"] for row in body["results"]}


def _expected(world, role, what):
    data = world.other if role == "outsider" else world.mine
    if what == "projects":
        return {data.project.pk}
    if what == "datasets":
        return {data.dataset.pk}
    if what == "items":
        return {i.pk for i in data.items}
    if what == "outputs":
        return set(Output.objects.filter(item__dataset=data.dataset).values_list("pk", flat=True))
    if what == "campaigns":
        return {data.campaign.pk, data.pairwise.pk, data.bestworst.pk}
    staff = role in ("researcher", "owner", "outsider")
    own = {"annotator__user": world.users[role]} if not staff else {}
    if what == "assignments":
        qs = Assignment.objects.filter(campaign__dataset=data.dataset, **own)
        return set(qs.values_list("pk", flat=True))
    if what == "ratings":
        return {r.pk for r in data.ratings if staff or r.annotator.user == world.users[role]}
    raise AssertionError(what)


LISTS = {
    "projects": "/api/projects/",
    "datasets": "/api/datasets/",
    "items": "/api/items/",
    "outputs": "/api/outputs/",
    "campaigns": "/api/campaigns/",
    "assignments": "/api/assignments/",
    "ratings": "/api/judgements/ratings/",
}


STAFF_LISTS = ("projects", "datasets", "items", "outputs", "ratings")


@pytest.mark.parametrize("role", ["annotator", "researcher", "owner", "outsider"])
@pytest.mark.parametrize("what", list(LISTS))
def test_lists_show_exactly_what_the_role_may_see(world, role, what):
    if role == "annotator" and what in STAFF_LISTS:
        assert world.client(role).get(LISTS[what]).status_code == 404
        return
    expected = _expected(world, role, what)
    assert expected  # the fixture has rows of every kind on both sides
    assert _ids(world.client(role), LISTS[what]) == expected


def test_annotator_sees_only_own_assignments_and_no_one_elses_name(world):
    client = world.client("annotator")
    # Judgement lists name real output and item ids: not for annotators.
    assert client.get(f"/api/judgements/ratings/?campaign={world.mine.campaign.pk}").status_code == 404
    assignments = client.get("/api/assignments/").json()["results"]
    assert {a["annotator_name"] for a in assignments} == {"annotator"}


@pytest.mark.parametrize(
    "url",
    [
        "/api/datasets/?project={other.project.pk}",
        "/api/items/?dataset={other.dataset.pk}",
        "/api/items/?system={other.systems[0].pk}",
        "/api/outputs/?item={other.items[0].pk}",
        "/api/campaigns/?dataset={other.dataset.pk}",
        "/api/assignments/?campaign={other.campaign.pk}",
        "/api/judgements/ratings/?campaign={other.campaign.pk}",
    ],
)
def test_filtering_on_ids_of_other_projects_returns_nothing(world, url):
    response = world.client("owner").get(url.format(other=world.other))
    assert response.status_code == 200
    assert response.json()["count"] == 0


def test_the_assignment_list_counts_no_further_than_its_cap(world, monkeypatch):
    """A campaign's million assignments were counted in full on every page (3.8-5.9 s at 1M in
    bench_pages): the list is counted up to LIST_COUNT_CAP, like the other lists that can hold millions."""
    from annotations import pagination

    expected = _expected(world, "researcher", "assignments")
    assert len(expected) > 2
    monkeypatch.setattr(pagination, "LIST_COUNT_CAP", 2)
    body = world.client("researcher").get("/api/assignments/").json()
    assert body["count"] == 2 and body["count_capped"] is True


def test_the_assignment_list_needs_no_distinct_and_repeats_no_assignment(world):
    """Researcher and annotator at once: both of the list's conditions (staff of the project, own
    annotator) hold for the same assignment, which still comes once. The list asked PostgreSQL for
    DISTINCT rows, which sorted a campaign's million wide rows for every page (2.9-3.6 s at 1M,
    bench_pages): its conditions follow to-one relations only, so it needs none."""
    researcher = world.users["researcher"]
    annotator = AnnotatorFactory(project=world.mine.project, name="researcher", user=researcher)
    Assignment.objects.create(
        campaign=world.mine.campaign, annotator=annotator, item=world.mine.items[0], active_since=timezone.now()
    )
    expected = _expected(world, "researcher", "assignments")
    with CaptureQueriesContext(connection) as queries:
        ids = [row["id"] for row in world.client("researcher").get("/api/assignments/").json()["results"]]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))
    listing = [q["sql"] for q in queries.captured_queries if 'FROM "annotations_assignment"' in q["sql"]]
    assert listing and not any("DISTINCT" in sql.split(" FROM ")[0] for sql in listing)
