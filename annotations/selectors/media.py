"""Who may fetch a unit's media (issue 41): the annotator the unit was handed to (their account, or
the join session bound to them), and the owners and researchers of the campaign's project. The
file is found from the assignment and the role (source / reference), never from the request's path."""

from __future__ import annotations

from annotations.models import Assignment
from annotations.selectors.roles import STAFF_ROLES, User, project_role


def media_assignment(*, assignment_id: int) -> Assignment | None:
    """The assignment with its item's media, its annotator and its campaign's dataset and project."""
    return (
        Assignment.objects.select_related("annotator", "item", "campaign__dataset__project")
        .filter(pk=assignment_id)
        .first()
    )


def may_see_unit(*, assignment: Assignment, user: User, join_annotator_id: int | None) -> bool:
    """Whether the requester may see the assignment's unit: the join session's annotator, the
    account it was handed to (still a member), or staff of the project."""
    if join_annotator_id is not None:
        return assignment.annotator_id == join_annotator_id
    if not user.is_authenticated:
        return False
    role = project_role(user=user, project=assignment.campaign.dataset.project)
    if role is None:
        return False
    return role in STAFF_ROLES or assignment.annotator.user_id == user.pk
