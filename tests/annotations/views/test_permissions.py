"""Who may open which page: anonymous -> login, non-member -> 404, annotator -> 404 too (they reach only their
home, their campaigns' unit pages and the unit API; tests/annotations/test_confinement.py crawls every URL)."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def _pages(project, dataset):
    item = dataset.items.first()
    return [
        reverse("project-detail", args=[project.pk]),
        reverse("dataset-detail", args=[dataset.pk]),
        reverse("item-detail", args=[item.pk]),
    ]


def test_anonymous_is_sent_to_login_from_every_page(client, project, dataset):
    for url in [reverse("project-list"), reverse("dataset-upload"), *_pages(project, dataset)]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url
        assert "next=" in response["Location"]


def test_non_member_gets_404_on_every_page_of_the_project(client, project, dataset, outsider):
    client.force_login(outsider)
    for url in _pages(project, dataset):
        assert client.get(url).status_code == 404, url
    assert client.get(reverse("dataset-upload"), {"project": project.pk}).status_code == 404


def test_non_member_does_not_see_the_project_in_the_list(client, project, dataset, outsider):
    client.force_login(outsider)
    response = client.get(reverse("project-list"))
    assert response.status_code == 200
    assert "Other" in response.content.decode()
    assert "Alpha" not in response.content.decode()


@pytest.mark.parametrize("role_fixture", ["owner", "researcher"])
def test_staff_can_browse(client, project, dataset, role_fixture, request):
    client.force_login(request.getfixturevalue(role_fixture))
    for url in _pages(project, dataset):
        assert client.get(url).status_code == 200, url


def test_annotators_get_404_on_project_dataset_and_item_pages(client, project, dataset, annotator):
    client.force_login(annotator)
    for url in _pages(project, dataset):
        assert client.get(url).status_code == 404, url


def test_project_list_shows_the_users_role(client, project, researcher):
    client.force_login(researcher)
    html = client.get(reverse("project-list")).content.decode()
    assert "Alpha" in html
    assert "researcher" in html


def test_project_list_sends_annotators_to_their_home(client, project, annotator):
    client.force_login(annotator)
    response = client.get(reverse("project-list"))
    assert response.status_code == 302 and response["Location"] == reverse("annotate-home")


def test_annotator_cannot_open_the_upload_form(client, project, annotator):
    client.force_login(annotator)
    assert client.get(reverse("dataset-upload")).status_code == 404
    assert client.get(reverse("dataset-upload"), {"project": project.pk}).status_code == 404


def test_upload_link_only_for_staff(client, project, dataset, annotator, researcher):
    url = reverse("dataset-upload")
    client.force_login(annotator)
    assert client.get(reverse("project-detail", args=[project.pk])).status_code == 404
    client.force_login(researcher)
    assert url in client.get(reverse("project-detail", args=[project.pk])).content.decode()
    assert client.get(url, {"project": project.pk}).status_code == 200


def test_logout_is_a_post_form(client, owner):
    client.force_login(owner)
    html = client.get(reverse("project-list")).content.decode()
    assert f'method="post" action="{reverse("logout")}"' in html
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get(reverse("project-list")).status_code == 302


def test_login_page_logs_in_and_lands_on_projects(client, owner):
    assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": "olivia", "password": "pw-123456"})
    assert response.status_code == 302
    assert response["Location"] == reverse("project-list")


def test_wrong_password_shows_an_error_and_stays_logged_out(client, owner):
    response = client.post(reverse("login"), {"username": "olivia", "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
    assert client.get(reverse("project-list")).status_code == 302
