"""Two projects with data, and one user for each role the API distinguishes."""

from dataclasses import dataclass, field

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotations.models import Assignment, Campaign, Membership, RatingJudgement
from tests.annotations.factories import (
    AnnotatorFactory,
    CampaignFactory,
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ProjectFactory,
    ReferenceFactory,
    SystemFactory,
    UserFactory,
)
from tests.module_rows import kept_for_module, kept_rows

ROLES = ("anonymous", "annotator", "researcher", "owner", "outsider")


@dataclass
class ProjectData:
    project: object
    dataset: object
    systems: list
    items: list
    outputs: list
    campaign: object
    pairwise: object
    bestworst: object
    annotators: dict = field(default_factory=dict)  # username -> Annotator
    assignments: list = field(default_factory=list)
    ratings: list = field(default_factory=list)


def _project_data(name: str, users: dict) -> ProjectData:
    """A dataset of 3 items x 2 systems, a Likert campaign, and one rating per
    annotator (user) given, each on an assignment of their own."""
    project = ProjectFactory(name=name)
    for role, user in users.items():
        MembershipFactory(project=project, user=user, role=role.split("#")[0])
    dataset = DatasetFactory(project=project, name=f"{name}-data")
    systems = [SystemFactory(dataset=dataset, name=f"{name}-sys{i}") for i in range(2)]
    items = [ItemFactory(dataset=dataset, external_id=f"{name}-item-{i}", position=i) for i in range(3)]
    outputs = []
    for item in items:
        ReferenceFactory(item=item, position=0, text=f"reference of {item.external_id}")
        for system in systems:
            outputs.append(OutputFactory(item=item, system=system, text=f"{system.name} says {item.external_id}"))
    campaign = CampaignFactory(
        dataset=dataset, name=f"{name}-likert", criteria=["fluency", "adequacy"], scale_min=1, scale_max=5, redundancy=2
    )
    pairwise = CampaignFactory(
        dataset=dataset,
        name=f"{name}-pairwise",
        protocol="pairwise",
        criteria=["overall"],
        scale_min=None,
        scale_max=None,
    )
    bestworst = CampaignFactory(
        dataset=dataset,
        name=f"{name}-bws",
        protocol="bws",
        criteria=["overall"],
        scale_min=None,
        scale_max=None,
        tuple_size=2,
    )
    data = ProjectData(project, dataset, systems, items, outputs, campaign, pairwise, bestworst)
    for role, user in users.items():
        if not role.startswith("annotator"):
            continue
        annotator = AnnotatorFactory(project=project, name=user.username, user=user)
        data.annotators[user.username] = annotator
        # Handed out now (the server's clock of the time on a unit starts at the hand-out).
        assignment = Assignment.objects.create(
            campaign=campaign, annotator=annotator, item=items[0], active_since=timezone.now()
        )
        data.assignments.append(assignment)
        for extra in (pairwise, bestworst):
            Assignment.objects.create(campaign=extra, annotator=annotator, item=items[0], active_since=timezone.now())
        data.ratings.append(
            RatingJudgement.objects.create(
                campaign=campaign,
                annotator=annotator,
                item=items[0],
                output=outputs[0],
                criterion="fluency",
                score=4,
                scale_min=1,
                scale_max=5,
            )
        )
    return data


@dataclass
class World:
    users: dict  # role -> User (no entry for anonymous)
    mine: ProjectData  # the project the annotator, researcher and owner belong to
    other: ProjectData  # the project of the outsider (a researcher there)
    other_annotator: object  # a second annotator of `mine`

    def client(self, role: str) -> APIClient:
        client = APIClient()
        if role != "anonymous":
            client.force_authenticate(self.users[role])
        return client


def _build_world() -> World:
    users = {role: UserFactory(username=role) for role in ROLES if role != "anonymous"}
    other_annotator = UserFactory(username="annotator2")
    mine = _project_data(
        "mine",
        {
            "owner": users["owner"],
            "researcher": users["researcher"],
            "annotator": users["annotator"],
            "annotator#2": other_annotator,
        },
    )
    other_owner = UserFactory(username="other-owner")
    other = _project_data(
        "other",
        {"owner": other_owner, "researcher": users["outsider"], "annotator": UserFactory(username="other-annot")},
    )
    assert Membership.objects.filter(project=mine.project).count() == 4
    assert Campaign.objects.count() == 6
    return World(users=users, mine=mine, other=other, other_annotator=other_annotator)


@pytest.fixture(scope="module")
def _world_rows(django_db_setup, django_db_blocker):
    """The world, built once per module (tests/module_rows.py): the permission matrix alone asks for it
    114 times, and its ~60 rows cost more round trips than most of its tests' own requests."""
    with kept_for_module(django_db_blocker):
        yield _build_world()


@pytest.fixture
def world(request, db, _world_rows) -> World:
    """Two projects with data and a user per role, as built, whatever the module's earlier tests wrote."""
    return kept_rows(request, _world_rows)
