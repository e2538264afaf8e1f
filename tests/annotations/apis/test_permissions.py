"""The permission matrix: every endpoint x every kind of caller -> exact status.

Callers: anonymous; an annotator, a researcher and an owner of project
"mine"; a researcher of project "other" (the outsider). Objects of a project
the caller is not a member of answer 404, like ids that do not exist.
"""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.annotations.apis.conftest import ROLES
from tests.annotations.factories import UserFactory

#               anonymous annotator researcher owner outsider
READ_MEMBER = (401, 200, 200, 200, 404)
LIST = (401, 200, 200, 200, 200)
# Annotators are confined to their units: staff objects and lists answer them 404.
STAFF_READ = (401, 404, 200, 200, 404)
STAFF_LIST = (401, 404, 200, 200, 200)
STAFF_WRITE = (401, 404, 201, 201, 404)


def _judgement_bodies(w, role):
    m = w.mine
    # outputs[0], outputs[1]: item 0 of "mine", systems 0 and 1.
    if role == "annotator":  # annotators name outputs by the handles their assignment showed
        return _as_handles(w, _judgement_bodies(w, "staff"))
    return {
        "ratings": {"campaign": m.campaign.pk, "output": m.outputs[1].pk, "criterion": "fluency", "score": 3},
        "pairwise": {
            "campaign": m.pairwise.pk,
            "output_a": m.outputs[1].pk,
            "output_b": m.outputs[0].pk,
            "criterion": "overall",
            "winner": "a",
        },
        "bestworst": {
            "campaign": m.bestworst.pk,
            "outputs": [m.outputs[0].pk, m.outputs[1].pk],
            "best": m.outputs[0].pk,
            "worst": m.outputs[1].pk,
            "criterion": "overall",
        },
    }


def _as_handles(w, bodies):
    from annotations.models import Assignment
    from annotations.services.handles import output_handle

    converted = {}
    for kind, body in bodies.items():
        assignment = Assignment.objects.get(campaign_id=body["campaign"], annotator__user=w.users["annotator"])
        h = lambda i: output_handle(assignment.pk, i)  # noqa: E731
        converted[kind] = {
            k: (
                [h(i) for i in v]
                if k == "outputs"
                else h(v)
                if k in ("output", "output_a", "output_b", "best", "worst")
                else v
            )
            for k, v in body.items()
        }
    return converted


# (name, method, url(world, role), body(world, role) or None, expected statuses per ROLES)
CASES = [
    ("projects-list", "get", lambda w, r: "/api/projects/", None, STAFF_LIST),
    # Project creation: staff users and users who already own a project (WORKBENCH_PROJECT_CREATORS).
    (
        "projects-create",
        "post",
        lambda w, r: "/api/projects/",
        lambda w, r: {"name": f"new-{r}"},
        (401, 403, 403, 201, 403),
    ),
    ("project-detail", "get", lambda w, r: f"/api/projects/{w.mine.project.pk}/", None, STAFF_READ),
    (
        "members-list",
        "get",
        lambda w, r: f"/api/projects/{w.mine.project.pk}/members/",
        None,
        (401, 404, 403, 200, 404),
    ),
    (
        "members-add",
        "post",
        lambda w, r: f"/api/projects/{w.mine.project.pk}/members/",
        lambda w, r: {"username": UserFactory(username=f"newcomer-{r}").username, "role": "annotator"},
        (401, 404, 403, 201, 404),
    ),
    ("datasets-list", "get", lambda w, r: "/api/datasets/", None, STAFF_LIST),
    (
        "datasets-import",
        "post",
        lambda w, r: "/api/datasets/",
        lambda w, r: {
            "project": w.mine.project.pk,
            "name": f"upload-{r}",
            "file": SimpleUploadedFile("d.jsonl", b'{"item": "u1", "outputs": {"s": "t"}}'),
        },
        STAFF_WRITE,
    ),
    ("dataset-detail", "get", lambda w, r: f"/api/datasets/{w.mine.dataset.pk}/", None, STAFF_READ),
    ("items-list", "get", lambda w, r: "/api/items/", None, STAFF_LIST),
    ("item-detail", "get", lambda w, r: f"/api/items/{w.mine.items[0].pk}/", None, STAFF_READ),
    ("outputs-list", "get", lambda w, r: "/api/outputs/", None, STAFF_LIST),
    ("campaigns-list", "get", lambda w, r: "/api/campaigns/", None, LIST),
    ("campaign-detail", "get", lambda w, r: f"/api/campaigns/{w.mine.campaign.pk}/", None, READ_MEMBER),
    (
        "campaigns-create",
        "post",
        lambda w, r: "/api/campaigns/",
        lambda w, r: {
            "dataset": w.mine.dataset.pk,
            "name": f"c-{r}",
            "protocol": "likert",
            "criteria": ["fluency"],
            "scale_min": 1,
            "scale_max": 5,
        },
        STAFF_WRITE,
    ),
    # The annotator already has a pending assignment there (200); the others get a new one.
    (
        "next-assignment",
        "post",
        lambda w, r: f"/api/campaigns/{w.mine.campaign.pk}/next-assignment/",
        None,
        (401, 200, 201, 201, 404),
    ),
    ("assignments-list", "get", lambda w, r: "/api/assignments/", None, LIST),
    ("ratings-list", "get", lambda w, r: "/api/judgements/ratings/", None, STAFF_LIST),
    ("pairwise-list", "get", lambda w, r: "/api/judgements/pairwise/", None, STAFF_LIST),
    ("bestworst-list", "get", lambda w, r: "/api/judgements/bestworst/", None, STAFF_LIST),
    # Only the annotator holds an assignment for item 0; staff without one may not judge it.
    *[
        (
            f"{kind}-create",
            "post",
            lambda w, r, kind=kind: f"/api/judgements/{kind}/",
            lambda w, r, kind=kind: _judgement_bodies(w, r)[kind],
            (401, 201, 403, 403, 404),
        )
        for kind in ("ratings", "pairwise", "bestworst")
    ],
]


@pytest.mark.parametrize("role_index,role", list(enumerate(ROLES)))
@pytest.mark.parametrize("name,method,url,body,expected", CASES, ids=[c[0] for c in CASES])
def test_permission_matrix(world, name, method, url, body, expected, role_index, role):
    client = world.client(role)
    kwargs = {"format": "json"}
    if body is not None:
        kwargs["data"] = body(world, role)
        if any(isinstance(v, SimpleUploadedFile) for v in kwargs["data"].values()):
            kwargs["format"] = "multipart"
    response = getattr(client, method)(url(world, role), **kwargs)
    assert response.status_code == expected[role_index], response.content[:500]
    if response.status_code == 401:
        assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("role", ["outsider", "annotator", "owner"])
def test_unknown_ids_and_other_projects_ids_answer_alike(world, role):
    """A missing id and an id of a project one is not in are indistinguishable."""
    client = world.client(role)
    other = world.other
    for url in ("/api/projects/{}/", "/api/datasets/{}/", "/api/items/{}/", "/api/campaigns/{}/"):
        missing = client.get(url.format(10**9))
        foreign_obj = {
            "/api/projects/{}/": other.project,
            "/api/datasets/{}/": other.dataset,
            "/api/items/{}/": other.items[0],
            "/api/campaigns/{}/": other.campaign,
        }[url]
        if role == "outsider":
            continue  # the outsider is a member of "other"
        foreign = client.get(url.format(foreign_obj.pk))
        assert missing.status_code == foreign.status_code == 404
        assert missing.json() == foreign.json()


def test_superuser_is_owner_everywhere(world):
    admin = UserFactory(username="root", is_superuser=True, is_staff=True)
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(admin)
    assert client.get(f"/api/projects/{world.other.project.pk}/members/").status_code == 200
    ids = {p["id"] for p in client.get("/api/projects/").json()["results"]}
    assert ids == {world.mine.project.pk, world.other.project.pk}
