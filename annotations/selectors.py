"""Reads, and the one definition of who may see what.

Roles: owners and researchers of a project see everything in it; annotators
see the project's datasets and campaigns but only their own assignments and
judgements, never other annotators' judgements or metric scores. Non-members
see nothing (404, not 403, so ids of other projects leak nothing).
"""
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from annotations.models import (
    Annotator,
    Assignment,
    BestWorstJudgement,
    Campaign,
    Dataset,
    Item,
    Membership,
    Output,
    PairwiseJudgement,
    Project,
    RatingJudgement,
)

STAFF_ROLES = (Membership.Role.OWNER, Membership.Role.RESEARCHER)

User = AbstractBaseUser | AnonymousUser


def project_role(*, user: User, project: Project) -> str | None:
    """The user's role in the project, or None for non-members."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return Membership.Role.OWNER
    return Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()


def is_project_staff(*, user: User, project: Project) -> bool:
    return project_role(user=user, project=project) in STAFF_ROLES


def project_list(*, user: User) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def staff_project_list(*, user: User) -> QuerySet[Project]:
    """Projects where the user may import, create campaigns and export."""
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user, memberships__role__in=STAFF_ROLES).distinct()


def dataset_list(*, user: User) -> QuerySet[Dataset]:
    return Dataset.objects.filter(project__in=project_list(user=user)).select_related("project")


def item_list(*, user: User) -> QuerySet[Item]:
    return Item.objects.filter(dataset__project__in=project_list(user=user)).select_related("dataset")


def output_list(*, user: User) -> QuerySet[Output]:
    return Output.objects.filter(item__dataset__project__in=project_list(user=user)).select_related(
        "item", "system"
    )


def campaign_list(*, user: User) -> QuerySet[Campaign]:
    return Campaign.objects.filter(dataset__project__in=project_list(user=user)).select_related(
        "dataset", "dataset__project"
    )


def _judgement_scope(qs: QuerySet, *, user: User) -> QuerySet:
    """Staff see all judgements of their projects; annotators only their own."""
    if not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    staff = qs.filter(campaign__dataset__project__in=staff_project_list(user=user))
    own = qs.filter(annotator__user=user)
    return (staff | own).distinct()


def rating_judgement_list(*, user: User) -> QuerySet[RatingJudgement]:
    return _judgement_scope(RatingJudgement.objects.all(), user=user).select_related(
        "campaign", "annotator", "output", "output__system", "item"
    )


def pairwise_judgement_list(*, user: User) -> QuerySet[PairwiseJudgement]:
    return _judgement_scope(PairwiseJudgement.objects.all(), user=user).select_related(
        "campaign", "annotator", "output_a", "output_b", "item"
    )


def bestworst_judgement_list(*, user: User) -> QuerySet[BestWorstJudgement]:
    return _judgement_scope(BestWorstJudgement.objects.all(), user=user).select_related(
        "campaign", "annotator", "best", "worst", "item"
    )


def assignment_list(*, user: User) -> QuerySet[Assignment]:
    if not user.is_authenticated:
        return Assignment.objects.none()
    qs = Assignment.objects.select_related("campaign", "annotator", "item")
    if user.is_superuser:
        return qs
    staff = qs.filter(campaign__dataset__project__in=staff_project_list(user=user))
    own = qs.filter(annotator__user=user)
    return (staff | own).distinct()


def annotator_for_user(*, user: User, project: Project) -> Annotator | None:
    if not user.is_authenticated:
        return None
    return Annotator.objects.filter(project=project, user=user).first()
