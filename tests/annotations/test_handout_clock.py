"""Issue 46, item 8: a unit's server time starts when its hand-out is answered, so neither the
hand-out's own response nor the response floor of campaigns with controls counts as work."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotations.models import Assignment, Membership
from annotations.quality.services import quality_settings_update
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import DatasetFactory, ItemFactory, MembershipFactory, OutputFactory, SystemFactory

pytestmark = pytest.mark.django_db

FLOOR_MS = 1000


@pytest.fixture
def controlled():
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=name) for name in ("alpha", "beta")]
    for i in range(12):
        item = ItemFactory(dataset=dataset, position=i, source=f"source {i}")
        for system in systems:
            OutputFactory(item=item, system=system, text=f"{system.name} says {i} of many words here")
    membership = MembershipFactory(project=dataset.project, role=Membership.Role.ANNOTATOR)
    campaign = campaign_create(
        dataset=dataset, name="held", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5
    )
    quality_settings_update(campaign=campaign, degraded_share=0.2)  # controls: answers are held
    api = APIClient()
    api.force_authenticate(membership.user)
    return campaign, api


def test_the_clock_of_a_handed_out_unit_starts_after_the_floor(settings, controlled):
    settings.WORKBENCH_UNIT_RESPONSE_FLOOR_MS = FLOOR_MS
    campaign, api = controlled
    asked = timezone.now()
    response = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
    answered = timezone.now()
    assert response.status_code == 201, response.content
    assignment = Assignment.objects.get(pk=response.json()["id"])
    # The answer was held to the floor (so it left at least FLOOR_MS after it was asked for), and
    # the clock started when it left: not while the request was still working or being held.
    assert answered - asked >= timedelta(milliseconds=FLOOR_MS)
    assert asked + timedelta(milliseconds=FLOOR_MS) <= assignment.active_since <= answered
    # The same for a reload of the pending unit (its clock resumes when the answer leaves).
    asked = timezone.now()
    again = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
    assert again.status_code == 200 and again.json()["id"] == assignment.pk
    assignment.refresh_from_db()
    assert assignment.active_since >= asked + timedelta(milliseconds=FLOOR_MS)
