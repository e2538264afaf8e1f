"""The one definition of "this object, for the project's staff": pages and APIs alike.

Who is staff is decided by `selectors.project_role`; this module turns it into
outcomes, the same everywhere:

- a project the user is not a member of (or an id that does not exist): 404
  (`Http404`), so ids of other projects leak nothing;
- a member without the needed role: 403 (`PermissionDenied`, with the reason);
- except annotators: for them staff pages and APIs answer 404, as if absent
  (they reach their home, their campaigns' unit pages and the unit API only;
  datasets, items, outputs, search, judgements lists, analysis... are not theirs
  to know about).

Pages get Django's 404/403 pages; the API's exception handler answers the same
exceptions 404 and 403 (`annotations.permissions` uses these checks too).
"""
from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotations.models import Campaign, Dataset, Membership, Project
from annotations.selectors import STAFF_ROLES, User, campaign_list, dataset_list, project_role, staff_project_list

STAFF_ONLY = "Only owners and researchers of the project may do this."
OWNERS_ONLY = "Only owners of the project may do this."


def require_member(*, user: User, project: Project) -> str:
    """The user's role in the project; 404 for non-members."""
    role = project_role(user=user, project=project)
    if role is None:
        raise Http404()
    return role


def require_staff(*, user: User, project: Project, message: str = STAFF_ONLY) -> str:
    """Owners and researchers: import, set up campaigns, see every judgement and figure."""
    role = require_member(user=user, project=project)
    if role == Membership.Role.ANNOTATOR:
        raise Http404()
    if role not in STAFF_ROLES:
        raise PermissionDenied(message)
    return role


def require_owner(*, user: User, project: Project, message: str = OWNERS_ONLY) -> str:
    """Owners: manage members."""
    role = require_staff(user=user, project=project, message=message)
    if role != Membership.Role.OWNER:
        raise PermissionDenied(message)
    return role


def annotates_only(*, user: User) -> bool:
    """A user who annotates in some project and is owner or researcher in none."""
    if not user.is_authenticated or user.is_superuser:
        return False
    return (Membership.objects.filter(user=user, role=Membership.Role.ANNOTATOR).exists()
            and not staff_project_list(user=user).exists())


def require_staff_somewhere(*, user: User) -> None:
    """Lists across projects meant for staff (datasets, items, outputs, judgements, projects):
    404 for users who only annotate, as for a page that does not exist; others get their
    lists, scoped by the selectors (empty for users in no project)."""
    if annotates_only(user=user):
        raise Http404()


def campaign_for_staff(*, user: User, pk: int, queryset: QuerySet[Campaign] | None = None) -> Campaign:
    """The campaign, for owners and researchers of its project (404 / 403 otherwise).

    `queryset` narrows or extends `selectors.campaign_list(user=user)` (a
    prefetch...); it must be a queryset of that list."""
    campaign = get_object_or_404(campaign_list(user=user) if queryset is None else queryset, pk=pk)
    require_staff(user=user, project=campaign.project)
    return campaign


def campaign_for_any_member(*, user: User, pk: int) -> Campaign:
    """The campaign, for any member of its project (404 otherwise)."""
    campaign = get_object_or_404(campaign_list(user=user), pk=pk)
    require_member(user=user, project=campaign.project)
    return campaign


def dataset_for_staff(*, user: User, pk: int) -> Dataset:
    """The dataset, for owners and researchers of its project (404 / 403 otherwise)."""
    dataset = get_object_or_404(dataset_list(user=user), pk=pk)
    require_staff(user=user, project=dataset.project)
    return dataset
