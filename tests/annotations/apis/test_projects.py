from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations.models import Membership, Project
from tests.annotations.factories import UserFactory


def test_creator_becomes_owner(world):
    response = world.client("owner").post("/api/projects/", {"name": "  fresh  "}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "fresh" and body["role"] == "owner"
    project = Project.objects.get(pk=body["id"])
    assert list(project.memberships.values_list("user__username", "role")) == [("owner", "owner")]


def test_only_staff_and_owners_create_projects(world, settings):
    annotator = world.client("annotator")
    response = annotator.post("/api/projects/", {"name": "mine-too"}, format="json")
    assert response.status_code == 403
    assert not Project.objects.filter(name="mine-too").exists()
    world.users["annotator"].is_staff = True
    world.users["annotator"].save()
    assert annotator.post("/api/projects/", {"name": "mine-too"}, format="json").status_code == 201
    settings.WORKBENCH_PROJECT_CREATORS = "staff"
    assert world.client("owner").post("/api/projects/", {"name": "third"}, format="json").status_code == 403
    settings.WORKBENCH_PROJECT_CREATORS = "anyone"
    assert world.client("researcher").post("/api/projects/", {"name": "fourth"}, format="json").status_code == 201


def test_creating_a_project_with_a_taken_name_grants_nothing(world):
    """Otherwise anyone could make themselves owner of someone else's project."""
    world.users["outsider"].is_staff = True
    world.users["outsider"].save()
    response = world.client("outsider").post("/api/projects/", {"name": "mine"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()
    assert not Membership.objects.filter(project=world.mine.project, user=world.users["outsider"]).exists()


def test_owner_adds_member_and_changes_role(world):
    client = world.client("owner")
    url = f"/api/projects/{world.mine.project.pk}/members/"
    UserFactory(username="newbie")
    added = client.post(url, {"username": "newbie", "role": "annotator"}, format="json")
    assert added.status_code == 201 and added.json()["role"] == "annotator"
    changed = client.post(url, {"username": "newbie", "role": "researcher"}, format="json")
    assert changed.status_code == 200 and changed.json()["role"] == "researcher"
    members = {m["username"]: m["role"] for m in client.get(url).json()["results"]}
    assert members == {
        "owner": "owner",
        "researcher": "researcher",
        "annotator": "annotator",
        "annotator2": "annotator",
        "newbie": "researcher",
    }


def test_member_add_rejects_unknown_user_and_role(world):
    client = world.client("owner")
    url = f"/api/projects/{world.mine.project.pk}/members/"
    assert client.post(url, {"username": "nobody", "role": "annotator"}, format="json").status_code == 400
    assert client.post(url, {"username": "annotator", "role": "boss"}, format="json").status_code == 400


def test_last_owner_cannot_step_down(world):
    client = world.client("owner")
    url = f"/api/projects/{world.mine.project.pk}/members/"
    response = client.post(url, {"username": "owner", "role": "researcher"}, format="json")
    assert response.status_code == 400
    assert Membership.objects.get(project=world.mine.project, user=world.users["owner"]).role == "owner"
    # With a second owner, stepping down is fine.
    assert client.post(url, {"username": "researcher", "role": "owner"}, format="json").status_code == 200
    assert client.post(url, {"username": "owner", "role": "researcher"}, format="json").status_code == 200


def test_token_authentication(world):
    anonymous = APIClient()
    response = anonymous.post("/api/auth/token/", {"username": "researcher", "password": "pw-123456"}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    assert token == Token.objects.get(user=world.users["researcher"]).key

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    projects = client.get("/api/projects/")
    assert projects.status_code == 200
    assert [p["name"] for p in projects.json()["results"]] == ["mine"]

    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert wrong.get("/api/projects/").status_code == 401
    assert (
        anonymous.post("/api/auth/token/", {"username": "researcher", "password": "wrong"}, format="json").status_code
        == 400
    )


def test_session_authentication_works_and_enforces_csrf(world):
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username="owner", password="pw-123456")
    assert client.get("/api/projects/").status_code == 200
    # A session-authenticated write without the CSRF token is refused.
    assert client.post("/api/projects/", {"name": "csrf"}, format="json").status_code == 403
    assert not Project.objects.filter(name="csrf").exists()
