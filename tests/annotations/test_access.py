"""`annotations.access`: one answer for "this object, for the project's staff", on pages and in the API."""

import re

import pytest
from django.http import Http404
from rest_framework.test import APIClient

from annotations.access import OWNERS_ONLY, STAFF_ONLY, campaign_for_any_member, campaign_for_staff, dataset_for_staff
from annotations.models import Membership
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import DatasetFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    project = ProjectFactory()
    dataset = DatasetFactory(project=project)
    campaign = campaign_create(
        dataset=dataset, name="c", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5, redundancy=1
    )
    users = {}
    for role in (Membership.Role.OWNER, Membership.Role.RESEARCHER, Membership.Role.ANNOTATOR):
        users[role] = MembershipFactory(project=project, user=UserFactory(), role=role).user
    users["outsider"] = MembershipFactory(project=ProjectFactory(), user=UserFactory(), role=Membership.Role.OWNER).user
    return campaign, users


def test_staff_get_the_object_annotators_and_outsiders_404(people):
    """Annotators are confined to their units: staff objects answer them 404, as to outsiders."""
    campaign, users = people
    for role in (Membership.Role.OWNER, Membership.Role.RESEARCHER):
        assert campaign_for_staff(user=users[role], pk=campaign.pk) == campaign
        assert dataset_for_staff(user=users[role], pk=campaign.dataset_id) == campaign.dataset
    for getter, pk in ((campaign_for_staff, campaign.pk), (dataset_for_staff, campaign.dataset_id)):
        with pytest.raises(Http404):
            getter(user=users[Membership.Role.ANNOTATOR], pk=pk)
        with pytest.raises(Http404):
            getter(user=users["outsider"], pk=pk)
        with pytest.raises(Http404):  # an id that does not exist answers the same
            getter(user=users[Membership.Role.OWNER], pk=pk + 10_000)
    assert campaign_for_any_member(user=users[Membership.Role.ANNOTATOR], pk=campaign.pk) == campaign
    with pytest.raises(Http404):
        campaign_for_any_member(user=users["outsider"], pk=campaign.pk)


def test_page_and_api_give_the_same_answers(people, client):
    campaign, users = people
    api = APIClient()
    answers = {}
    for who, status in ((Membership.Role.ANNOTATOR, 404), ("outsider", 404), (Membership.Role.RESEARCHER, 200)):
        client.force_login(users[who])
        api.force_authenticate(users[who])
        page = client.get(f"/campaigns/{campaign.pk}/quality/")
        answer = api.get(f"/api/campaigns/{campaign.pk}/quality/")
        assert (page.status_code, answer.status_code) == (status, status), who
        answers[who] = (_page_text(page), answer.json())
    # An annotator's 404 is an absent campaign's, word for word, and an outsider's: nothing says the
    # campaign exists or that its staff could see it (no "only owners and researchers").
    absent = {}
    for who in (Membership.Role.ANNOTATOR, "outsider"):
        client.force_login(users[who])
        api.force_authenticate(users[who])
        absent[who] = (
            _page_text(client.get(f"/campaigns/{campaign.pk + 10_000}/quality/")),
            api.get(f"/api/campaigns/{campaign.pk + 10_000}/quality/").json(),
        )
        assert answers[who] == absent[who], who
    assert answers[Membership.Role.ANNOTATOR][1] == answers["outsider"][1] == {"detail": "Not found."}
    assert STAFF_ONLY not in answers[Membership.Role.ANNOTATOR][0]
    assert answers[Membership.Role.RESEARCHER][1]["annotators"] == []  # the staff's figures (none judged yet)


def _page_text(response) -> str:
    """The page without what changes from one request to the next (CSRF tokens, CSP nonces)."""
    return re.sub(r'(nonce|value)="[^"]{16,}"', "", response.content.decode())


def test_a_member_without_the_role_gets_403_with_the_reason_on_the_page_and_in_the_api(people, client):
    """A researcher on an owners-only page (the members): 403 and the same reason on both."""
    campaign, users = people
    client.force_login(users[Membership.Role.RESEARCHER])
    api = APIClient()
    api.force_authenticate(users[Membership.Role.RESEARCHER])
    project = campaign.dataset.project_id
    page = client.get(f"/projects/{project}/members/")
    answer = api.get(f"/api/projects/{project}/members/")
    assert (page.status_code, answer.status_code) == (403, 403)
    assert "Only owners of the project may manage its members." in page.content.decode()
    assert answer.json() == {"detail": OWNERS_ONLY}
