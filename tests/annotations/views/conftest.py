import pytest

from annotations.models import Membership
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ProjectFactory,
    ReferenceFactory,
    SystemFactory,
    UserFactory,
)


@pytest.fixture
def project(db):
    return ProjectFactory(name="Alpha")


@pytest.fixture
def owner(project):
    return MembershipFactory(project=project, user=UserFactory(username="olivia"), role=Membership.Role.OWNER).user


@pytest.fixture
def researcher(project):
    return MembershipFactory(project=project, user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER).user


@pytest.fixture
def annotator(project):
    return MembershipFactory(project=project, user=UserFactory(username="anna"), role=Membership.Role.ANNOTATOR).user


@pytest.fixture
def outsider(db):
    """Owner of another project: logged in, but no member of `project`."""
    other = ProjectFactory(name="Other")
    return MembershipFactory(project=other, user=UserFactory(username="oscar"), role=Membership.Role.OWNER).user


@pytest.fixture
def dataset(project):
    """Three items, two systems; item-2 has only sysA's output."""
    ds = DatasetFactory(project=project, name="alpha-data")
    sys_a = SystemFactory(dataset=ds, name="sysA")
    sys_b = SystemFactory(dataset=ds, name="sysB")
    texts = [
        ("item-1", "The cat sat on the mat.", "A cat was sitting on the mat.", "cat on mat", "feline mat"),
        ("item-2", "It rained all day in Leeds.", "Leeds had rain all day.", "rain in Leeds", None),
        ("item-3", "", "Blue Spice is a pub.", "Blue Spice pub", "pub Blue Spice"),
    ]
    for position, (ext, source, ref, out_a, out_b) in enumerate(texts):
        data = [["Blue Spice", "eatType", "pub"]] if ext == "item-3" else []
        item = ItemFactory(dataset=ds, external_id=ext, position=position, source=source, data=data)
        ReferenceFactory(item=item, position=0, text=ref)
        OutputFactory(item=item, system=sys_a, text=out_a)
        if out_b:
            OutputFactory(item=item, system=sys_b, text=out_b)
    return ds
