"""Projects and annotator accounts in the browser, without a browser: the "New project" form, bulk
annotators with one-time login links (and their CSV), `/login/<token>/`, and who may do what."""

import csv
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import LoginLink, Membership, Project
from tests.annotations.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_throttles")]
User = get_user_model()
LINK = re.compile(r'class="login-link" value="(http://testserver/login/[A-Za-z0-9_-]+/)"')


def _links(response) -> list[str]:
    return LINK.findall(response.content.decode())


# --- New project -------------------------------------------------------------------------------


def test_an_owner_creates_a_project_and_owns_it(client, owner):
    client.force_login(owner)
    page = client.get("/").content.decode()
    assert "New project" in page
    # The form is in the page, once, not in the window title.
    assert "<title>Projects · NLG Workbench</title>" in page and page.count('id="new-project-heading"') == 1
    response = client.post("/", {"name": "  RankME study ", "description": "three annotators"})
    project = Project.objects.get(name="RankME study")
    assert response.status_code == 302 and response["Location"] == reverse("project-detail", args=[project.pk])
    assert Membership.objects.get(project=project, user=owner).role == "owner"


@pytest.mark.parametrize("name,message", [("", "A project needs a name."), ("Alpha", "already exists")])
def test_new_project_errors_are_clear(client, owner, name, message):
    client.force_login(owner)
    response = client.post("/", {"name": name})
    assert response.status_code == 400 and message in response.content.decode()
    assert Project.objects.count() == 1


def test_annotators_cannot_create_projects_unless_the_setting_says_anyone(client, annotator, settings):
    client.force_login(annotator)
    assert "New project" not in client.get("/").content.decode()
    # An annotator who may not create projects is sent home (the project list is for staff).
    assert client.post("/", {"name": "mine"})["Location"] == reverse("annotate-home")
    assert not Project.objects.filter(name="mine").exists()
    settings.WORKBENCH_PROJECT_CREATORS = "anyone"
    assert "New project" in client.get("/").content.decode()
    assert client.post("/", {"name": "mine"}).status_code == 302
    settings.WORKBENCH_PROJECT_CREATORS = "staff"
    # Now the owner of "mine", they see the project list, but may not create another.
    assert client.post("/", {"name": "mine too"}).status_code == 403
    assert not Project.objects.filter(name="mine too").exists()


# --- Bulk annotators -------------------------------------------------------------------------------


def test_bulk_paste_creates_accounts_and_shows_links_once(client, owner, project):
    client.force_login(owner)
    url = reverse("project-members", args=[project.pk])
    response = client.post(url, {"action": "bulk", "usernames": "ann1\nann2, ann3"})
    assert response.status_code == 200
    links = _links(response)
    assert len(links) == 3
    assert set(
        Membership.objects.filter(project=project, role="annotator").values_list("user__username", flat=True)
    ) == {"ann1", "ann2", "ann3"}
    # Shown only in that answer: the page itself never shows them again.
    assert not _links(client.get(url))
    # The CSV download: the links just shown, with their usernames.
    page = response.content.decode()
    usernames = re.findall(r'name="link_username" value="([^"]+)"', page)
    expires = re.findall(r'name="link_expires" value="([^"]+)"', page)
    download = client.post(
        url, {"action": "csv", "link_username": usernames, "link_url": links, "link_expires": expires}
    )
    assert download["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(download.content.decode())))
    assert rows[0] == ["username", "login_link", "expires_at"]
    assert [(r[0], r[1]) for r in rows[1:]] == list(zip(["ann1", "ann2", "ann3"], links))


def test_bulk_csv_cells_are_neutralised(client, owner, project):
    client.force_login(owner)
    url = reverse("project-members", args=[project.pk])
    download = client.post(
        url, {"action": "csv", "link_username": ["=cmd()"], "link_url": ["x"], "link_expires": ["y"]}
    )
    assert "'=cmd()" in download.content.decode()


def test_bulk_upload_of_a_csv_file(client, owner, project):
    client.force_login(owner)
    upload = SimpleUploadedFile(
        "people.csv", b"username,email\nu1,u1@example.org\nu2,u2@example.org\n", content_type="text/csv"
    )
    response = client.post(reverse("project-members", args=[project.pk]), {"action": "bulk", "file": upload})
    assert response.status_code == 200 and len(_links(response)) == 2
    assert User.objects.filter(username__in=["u1", "u2"]).count() == 2


def test_bad_lines_are_reported_by_number_and_nothing_changes(client, owner, project):
    client.force_login(owner)
    response = client.post(
        reverse("project-members", args=[project.pk]), {"action": "bulk", "usernames": "good\nno spaces\n<b>x</b>"}
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "line 2: no spaces:" in page and "line 3: &lt;b&gt;x&lt;/b&gt;:" in page and "<b>x</b>" not in page
    assert "Nothing was changed." in page
    assert not User.objects.filter(username="good").exists()


def test_existing_members_get_a_new_link_on_request_and_it_supersedes_the_old(client, owner, project):
    client.force_login(owner)
    url = reverse("project-members", args=[project.pk])
    first = _links(client.post(url, {"action": "bulk", "usernames": "ann"}))[0]
    again = client.post(url, {"action": "bulk", "usernames": "ann"})
    assert not _links(again)  # existing: no link unless asked
    member = Membership.objects.get(project=project, user__username="ann")
    second = _links(client.post(url, {"action": "link", "member": member.pk}))
    assert len(second) == 1 and second[0] != first
    visitor = type(client)()
    assert visitor.post(first.replace("http://testserver", "")).status_code == 404
    assert visitor.post(second[0].replace("http://testserver", "")).status_code == 302


def test_no_link_for_a_member_with_a_password(client, owner, researcher, project):
    client.force_login(owner)
    url = reverse("project-members", args=[project.pk])
    member = Membership.objects.get(project=project, user=researcher)
    response = client.post(url, {"action": "link", "member": member.pk}, follow=True)
    assert "has a password" in response.content.decode() and not _links(response)
    assert not LoginLink.objects.exists()


# Annotators: as if the members page did not exist (they reach only their units).
@pytest.mark.parametrize("who,status", [("researcher", 403), ("annotator", 404), ("outsider", 404)])
def test_only_owners_add_annotators_in_bulk(client, project, owner, who, status, request):
    client.force_login(request.getfixturevalue(who))
    url = reverse("project-members", args=[project.pk])
    assert client.post(url, {"action": "bulk", "usernames": "intruder"}).status_code == status
    member = Membership.objects.get(project=project, user=owner)
    assert client.post(url, {"action": "link", "member": member.pk}).status_code == status
    assert (
        client.post(
            url, {"action": "csv", "link_username": ["a"], "link_url": ["b"], "link_expires": ["c"]}
        ).status_code
        == status
    )
    assert not User.objects.filter(username="intruder").exists() and not LoginLink.objects.exists()


# --- /login/<token>/ -------------------------------------------------------------------------------


def _issue(client, owner, project, name="ann") -> str:
    client.force_login(owner)
    link = _links(client.post(reverse("project-members", args=[project.pk]), {"action": "bulk", "usernames": name}))[0]
    client.logout()
    return link.replace("http://testserver", "")


def test_a_login_link_logs_in_once_and_lands_on_the_annotator_home(client, owner, project):
    path = _issue(client, owner, project)
    visitor = type(client)()
    page = visitor.get(path)
    assert page.status_code == 200 and "Log in as ann" in page.content.decode()
    assert not LoginLink.objects.filter(used_at__isnull=False).exists()  # a GET does not spend it
    response = visitor.post(path)
    assert response.status_code == 302 and response["Location"] == reverse("annotate-home")
    home = visitor.get(reverse("annotate-home"))
    assert home.status_code == 200 and home.wsgi_request.user.username == "ann"
    assert "Set a password" in home.content.decode()
    other = type(client)()
    for method in (other.get, other.post):
        spent = method(path)
        assert spent.status_code == 404 and "already used or has expired" in spent.content.decode()


def test_set_a_first_password_after_a_link(client, owner, project):
    path = _issue(client, owner, project)
    visitor = type(client)()
    visitor.post(path)
    response = visitor.post(
        reverse("password-set"), {"new_password1": "a-long-password-1", "new_password2": "a-long-password-1"}
    )
    assert response.status_code == 302
    assert User.objects.get(username="ann").check_password("a-long-password-1")
    # With a password, Django's own page (which asks for the old one) takes over.
    assert visitor.get(reverse("password-set"))["Location"] == reverse("password_change")


def test_wrong_tokens_are_rate_limited_per_address(client, owner, project, settings):
    settings.WORKBENCH_LOGIN_LINK_FAILURE_LIMIT = 3
    path = _issue(client, owner, project)
    for attempt in range(3):
        assert client.get(f"/login/wrong-{attempt}/").status_code == 404
    locked = client.post(path)
    assert locked.status_code == 429 and "Too many invalid login links" in locked.content.decode()
    # Another address is not affected.
    assert client.post(path, REMOTE_ADDR="10.0.0.9").status_code == 302


# --- REST ------------------------------------------------------------------------------------------


def test_bulk_api_returns_links_and_is_for_owners_only(owner, researcher, annotator, project):
    api = APIClient()
    url = f"/api/projects/{project.pk}/members/bulk/"
    api.force_authenticate(owner)
    response = api.post(url, {"usernames": ["p1", "p2", "anna"]}, format="json")
    body = response.json()
    assert response.status_code == 200
    assert (body["project"], body["members"], body["created"], body["unchanged"]) == (
        "Alpha",
        3,
        ["p1", "p2"],
        ["anna"],
    )
    assert set(body["links"]) == {"p1", "p2"}
    assert all(re.fullmatch(r"http://testserver/login/[A-Za-z0-9_-]{40,}/", u) for u in body["links"].values())
    bad = api.post(url, {"text": "ok1\nnot ok"}, format="json")
    assert bad.status_code == 400 and bad.json()["usernames"][0].startswith("line 2: not ok:")
    assert not User.objects.filter(username="ok1").exists()
    for user, code in ((researcher, 403), (annotator, 404)):
        api.force_authenticate(user)
        assert api.post(url, {"usernames": ["z"]}, format="json").status_code == code
    api.force_authenticate(UserFactory(username="stranger"))
    assert api.post(url, {"usernames": ["z"]}, format="json").status_code == 404


def test_project_create_api_follows_the_creators_setting(owner, annotator, settings):
    api = APIClient()
    api.force_authenticate(annotator)
    assert api.post("/api/projects/", {"name": "P2"}, format="json").status_code == 403
    api.force_authenticate(owner)
    created = api.post("/api/projects/", {"name": "P2"}, format="json")
    assert created.status_code == 201 and created.json()["role"] == "owner"
    assert api.post("/api/projects/", {"name": "P2"}, format="json").status_code == 400


@pytest.mark.parametrize(
    "text", ["a\x00b\nok", "\u202e\nok", "ok\n" + "é" * 200, ",".join(f"u{i}" for i in range(1200))]
)
def test_hostile_pastes_answer_400_with_line_numbers(client, owner, project, text):
    client.force_login(owner)
    response = client.post(reverse("project-members", args=[project.pk]), {"action": "bulk", "usernames": text})
    assert response.status_code == 400
    assert not User.objects.filter(username="ok").exists()
    api = APIClient()
    api.force_authenticate(owner)
    answer = api.post(f"/api/projects/{project.pk}/members/bulk/", {"text": text}, format="json")
    assert answer.status_code == 400 and answer.json()  # a message; NUL is refused by the field itself
