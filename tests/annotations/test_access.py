"""`annotations.access`: one answer for "this object, for the project's staff", on pages and in the API."""
import pytest
from django.http import Http404
from rest_framework.test import APIClient

from annotations.access import STAFF_ONLY, campaign_for_any_member, campaign_for_staff, dataset_for_staff
from annotations.models import Membership
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import DatasetFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    project = ProjectFactory()
    dataset = DatasetFactory(project=project)
    campaign = campaign_create(dataset=dataset, name="c", protocol="likert", criteria=["fluency"], scale_min=1,
                               scale_max=5, redundancy=1)
    users = {}
    for role in (Membership.Role.OWNER, Membership.Role.RESEARCHER, Membership.Role.ANNOTATOR):
        users[role] = MembershipFactory(project=project, user=UserFactory(), role=role).user
    users["outsider"] = MembershipFactory(project=ProjectFactory(), user=UserFactory(),
                                          role=Membership.Role.OWNER).user
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
    for who, status in ((Membership.Role.ANNOTATOR, 404), ("outsider", 404), (Membership.Role.RESEARCHER, 200)):
        client.force_login(users[who])
        api.force_authenticate(users[who])
        page = client.get(f"/campaigns/{campaign.pk}/quality/")
        answer = api.get(f"/api/campaigns/{campaign.pk}/quality/")
        assert (page.status_code, answer.status_code) == (status, status), who
        if status == 403:
            assert STAFF_ONLY in page.content.decode()
            assert answer.json() == {"detail": STAFF_ONLY}
