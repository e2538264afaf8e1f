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

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, QuerySet
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from annotations.models import Annotator, Campaign, Dataset, Membership, Project
from annotations.models.studies import JoinLink
from annotations.selectors import (
    STAFF_ROLES,
    User,
    annotator_for_user,
    campaign_list,
    dataset_list,
    project_role,
    staff_project_list,
)
from annotations.services.projects import annotator_get_or_create
from annotations.studies.session import join_binding

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
    return (
        Membership.objects.filter(user=user, role=Membership.Role.ANNOTATOR).exists()
        and not staff_project_list(user=user).exists()
    )


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


# --- Who annotates: a logged-in member, or a join-link visitor -------------------------------


def annotator_required(view):
    """`login_required` for annotate pages: a logged-in user or a join session
    (`annotations.studies.session`); anyone else goes to the login page."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated and join_binding(request) is None:
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


def annotate_campaign_for(request: HttpRequest, pk: int) -> Campaign:
    """The campaign of an annotate page: any member's (404 otherwise), or the join session's own."""
    if request.user.is_authenticated:
        return campaign_for_any_member(user=request.user, pk=pk)
    binding = join_binding(request)
    if binding is None or binding["campaign"] != pk:
        raise Http404()
    return get_object_or_404(Campaign.objects.select_related("dataset__project"), pk=pk)


def request_annotator(request: HttpRequest, campaign: Campaign, *, create: bool = False) -> Annotator | None:
    """THE identity of whoever annotates `campaign` in this request.

    - A logged-in member: their account's annotator (created when `create`,
      else None until they have one); non-members get 404.
    - A join visitor: the imported-namespace annotator their session is bound
      to, only for the session's campaign and while its link is not revoked
      (404 otherwise).
    """
    if request.user.is_authenticated:
        require_member(user=request.user, project=campaign.project)
        if create:
            return annotator_get_or_create(
                project=campaign.project, name=request.user.get_username(), user=request.user
            )

        return annotator_for_user(user=request.user, project=campaign.project)
    binding = join_binding(request)
    if binding is None or binding["campaign"] != campaign.pk:
        raise Http404()
    # The session counts while the link it came through is live: that is the link of this visit,
    # not necessarily the one the participant first joined by (any live link of the study
    # continues, even when the first one was revoked since).
    live_link = JoinLink.objects.filter(pk=binding["link"], campaign_id=campaign.pk, revoked_at__isnull=True)
    annotator = Annotator.objects.filter(
        Exists(live_link),
        pk=binding["annotator"],
        project_id=campaign.dataset.project_id,
        namespace=Annotator.Namespace.IMPORT,
        join_participants__pk=binding["participant"],
        join_participants__campaign_id=campaign.pk,
    ).first()
    if annotator is None:
        raise Http404()
    return annotator
