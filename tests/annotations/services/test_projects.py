import pytest
from django.core.exceptions import ValidationError

from annotations.models import Annotator, Membership, Project
from annotations.services.projects import (
    annotator_get_or_create,
    membership_add,
    project_create,
    project_get_or_create,
)
from tests.annotations.factories import ProjectFactory, UserFactory


@pytest.mark.django_db
def test_project_get_or_create_makes_owner_only_of_a_new_project():
    user, stranger = UserFactory(), UserFactory()
    p = project_get_or_create(name="p", owner=user)
    assert project_get_or_create(name="p") == p
    assert Project.objects.count() == 1
    assert Membership.objects.get(project=p, user=user).role == "owner"
    # Naming an existing project never makes anyone a member of it.
    assert project_get_or_create(name="p", owner=stranger) == p
    assert not Membership.objects.filter(project=p, user=stranger).exists()
    # A project keeps one owner: the last one cannot step down...
    with pytest.raises(ValidationError, match="keeps at least one owner"):
        membership_add(project=p, user=user, role="researcher")
    # ...until someone else is owner too.
    membership_add(project=p, user=stranger, role="owner")
    membership_add(project=p, user=user, role="researcher")
    assert Membership.objects.get(project=p, user=user).role == "researcher"


@pytest.mark.django_db
def test_membership_add_rejects_unknown_role():
    with pytest.raises(ValidationError):
        membership_add(project=ProjectFactory(), user=UserFactory(), role="admin")


@pytest.mark.django_db
def test_annotator_get_or_create_by_name_and_by_user():
    project = ProjectFactory()
    worker = annotator_get_or_create(project=project, name="alice")
    assert annotator_get_or_create(project=project, name="alice") == worker
    user = UserFactory(username="alice")
    # An imported worker id "alice" is not merged with the workbench user alice:
    # they live in separate namespaces.
    mine = annotator_get_or_create(project=project, name="alice", user=user)
    assert mine != worker and mine.user == user and mine.name == "alice"
    assert (mine.namespace, worker.namespace) == ("account", "import")
    assert annotator_get_or_create(project=project, name="alice") == worker
    assert annotator_get_or_create(project=project, name="whatever", user=user) == mine
    assert Annotator.objects.filter(project=project).count() == 2


@pytest.mark.django_db
def test_project_create_refuses_a_taken_name():
    user = UserFactory(is_staff=True)
    project = project_create(name="p", owner=user, description="d")
    assert project.memberships.get().role == "owner" and project.description == "d"
    with pytest.raises(ValidationError, match="already exists"):
        project_create(name="p", owner=user)
    with pytest.raises(ValidationError):
        project_create(name=" ", owner=user)
    assert Project.objects.count() == 1
