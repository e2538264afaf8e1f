"""Who may see what: roles, and every list scoped to what the user may see.

Roles: owners and researchers of a project see everything in it; annotators
see only the project's campaigns and their own assignments: never its datasets,
items, outputs, judgements (their own included: only the unit API shows them
their units, with opaque handles) or metric scores. Non-members
see nothing (404, not 403, so ids of other projects leak nothing).
"""

import hashlib

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import OuterRef, QuerySet, Subquery, Value

from annotations import rows
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
    SpanJudgement,
)
from annotations.selectors.controls import completion_codes_on_sql

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


def blind_project_ids(*, user: User) -> set[int]:
    """Projects where the user only annotates: system names, other annotators'
    judgements and metric scores stay hidden there."""
    if not user.is_authenticated or user.is_superuser:
        return set()
    return set(
        Membership.objects.filter(user=user, role=Membership.Role.ANNOTATOR).values_list("project_id", flat=True)
    )


def blind_order_key(*, user: User, output_id: int) -> str:
    """The order in which a blind user sees an item's outputs: a hash of the
    user and the output, so it is stable for them, different across users,
    and never follows system names."""

    return hashlib.md5(f"{getattr(user, 'pk', 0)}:{output_id}".encode()).hexdigest()


def dataset_list(*, user: User, project_id: int | None = None) -> QuerySet[Dataset]:
    datasets = Dataset.objects.filter(project__in=staff_project_list(user=user)).select_related("project")
    return datasets if project_id is None else datasets.filter(project_id=project_id)


def item_list(*, user: User) -> QuerySet[Item]:
    return Item.objects.filter(dataset__project__in=staff_project_list(user=user)).select_related("dataset")


def output_list(*, user: User) -> QuerySet[Output]:
    return Output.objects.filter(item__dataset__project__in=staff_project_list(user=user)).select_related(
        "item", "item__dataset", "system"
    )


def campaign_list(*, user: User, dataset_id: int | None = None) -> QuerySet[Campaign]:
    campaigns = Campaign.objects.filter(dataset__project__in=project_list(user=user)).select_related(
        "dataset", "dataset__project"
    )
    return campaigns if dataset_id is None else campaigns.filter(dataset_id=dataset_id)


def _judgement_scope(qs: QuerySet, *, user: User) -> QuerySet:
    """Staff see all judgements of their projects; annotators none (a judgement names real
    output and item ids: their units reach them through the unit API, with handles)."""
    if not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    return qs.filter(campaign__dataset__project__in=staff_project_list(user=user))


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


def span_judgement_list(*, user: User) -> QuerySet[SpanJudgement]:
    return (
        _judgement_scope(SpanJudgement.objects.all(), user=user)
        .select_related("campaign", "annotator", "output", "item")
        .prefetch_related("spans")
    )


def judgement_list(*, model, user: User) -> QuerySet:
    """The judgements of a protocol with no list of its own above (post-edit), scoped alike."""
    return _judgement_scope(model.objects.all(), user=user).select_related("campaign", "annotator", "item")


def counted(qs: QuerySet) -> QuerySet:
    """Only the judgements that count: complete units and imports, never
    partial or abandoned work. Every analysis should start from this."""
    return qs.filter(status="complete")


def assignment_list(*, user: User, campaign_id: int | None = None, status: str | None = None) -> QuerySet[Assignment]:
    if not user.is_authenticated:
        return Assignment.objects.none()
    qs = Assignment.objects.select_related("campaign", "annotator", "item")
    if campaign_id is not None:
        qs = qs.filter(campaign_id=campaign_id)
    if status is not None:
        qs = qs.filter(status=status)
    if user.is_superuser:
        return qs
    staff = qs.filter(campaign__dataset__project__in=staff_project_list(user=user))
    own = qs.filter(annotator__user=user)
    # No DISTINCT: both conditions follow to-one relations (campaign, dataset, annotator; the
    # projects are an IN subquery), so no assignment comes twice. DISTINCT over these wide rows
    # sorted the whole campaign for every page (2.9 s for the first 100 of a million, issue 45).
    return staff | own


def judgements_filtered(
    queryset: QuerySet,
    *,
    campaign_id: int | None = None,
    item_id: int | None = None,
    criterion: str | None = None,
    status: str | None = None,
) -> QuerySet:
    """A judgement list (`rating_judgement_list`...) narrowed by the API's filters, in a stable order."""
    if campaign_id is not None:
        queryset = queryset.filter(campaign_id=campaign_id)
    if item_id is not None:
        queryset = queryset.filter(item_id=item_id)
    if criterion is not None:
        queryset = queryset.filter(criterion=criterion)
    if status is not None:
        queryset = queryset.filter(status=status)
    return queryset.order_by("campaign_id", "item_id", "id")


def campaign_for_member(*, user: User, campaign_id: int) -> Campaign | None:
    """A campaign (with its dataset and project) for one of its project's members,
    in one query: `member_role` is the user's role (None for non-members, who
    must get a 404) and `member_annotator` their account's annotator (None if
    not made yet). The hot request of annotation asks this first, so the query
    is written as SQL (`annotations.rows`): three ORM lookups cost three round
    trips, one ORM query with subqueries more CPU to build than to answer."""

    if not user.is_authenticated:
        return None
    with rows.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(Campaign, 'c')}, {rows.columns(Dataset, 'd')}, {rows.columns(Project, 'p')}, "
            f"(SELECT m.role FROM {rows.table(Membership)} m WHERE m.project_id = p.id AND m.user_id = %s "
            "ORDER BY m.id LIMIT 1), "
            f"(SELECT a.id FROM {rows.table(Annotator)} a WHERE a.project_id = p.id AND a.user_id = %s), "
            f"(SELECT a.name FROM {rows.table(Annotator)} a WHERE a.project_id = p.id AND a.user_id = %s) "
            f"FROM {rows.table(Campaign)} c JOIN {rows.table(Dataset)} d ON d.id = c.dataset_id "
            f"JOIN {rows.table(Project)} p ON p.id = d.project_id WHERE c.id = %s",
            [user.pk, user.pk, user.pk, campaign_id],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    campaign = rows.from_row(Campaign, row)
    at = rows.width(Campaign)
    campaign.dataset = rows.from_row(Dataset, row, at)
    campaign.dataset.project = rows.from_row(Project, row, at + rows.width(Dataset))
    role, annotator_id, annotator_name = row[-3:]
    campaign.member_role = Membership.Role.OWNER if user.is_superuser else role
    campaign.member_annotator = None
    if annotator_id is not None:  # one per account and project (a unique constraint)
        campaign.member_annotator = Annotator(
            id=annotator_id,
            project_id=campaign.dataset.project_id,
            name=annotator_name,
            user_id=user.pk,
            namespace=Annotator.Namespace.ACCOUNT,
        )
        campaign.member_annotator._state.adding = False
    return campaign


def own_assignment(*, user: User, assignment_id: int) -> Assignment | None:
    """The user's own assignment (None for anyone else's) with its campaign,
    dataset, project and annotator, the user's role in the project
    (`member_role`, None when no longer a member) and whether the campaign
    gives completion codes (`codes_on`): one query, as SQL (`annotations.rows`),
    since every submission and autosave asks it."""

    if not user.is_authenticated:
        return None
    with rows.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(Assignment, 'a')}, {rows.columns(Campaign, 'c')}, {rows.columns(Dataset, 'd')}, "
            f"{rows.columns(Project, 'p')}, {rows.columns(Annotator, 'an')}, "
            f"(SELECT m.role FROM {rows.table(Membership)} m WHERE m.project_id = p.id AND m.user_id = %s "
            f"ORDER BY m.id LIMIT 1), {completion_codes_on_sql('c.id')} "
            f"FROM {rows.table(Assignment)} a JOIN {rows.table(Annotator)} an ON an.id = a.annotator_id "
            f"JOIN {rows.table(Campaign)} c ON c.id = a.campaign_id JOIN {rows.table(Dataset)} d ON d.id = c.dataset_id "
            f"JOIN {rows.table(Project)} p ON p.id = d.project_id WHERE a.id = %s AND an.user_id = %s",
            [user.pk, assignment_id, user.pk],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    assignment = rows.from_row(Assignment, row)
    at = rows.width(Assignment)
    assignment.campaign = rows.from_row(Campaign, row, at)
    at += rows.width(Campaign)
    assignment.campaign.dataset = rows.from_row(Dataset, row, at)
    at += rows.width(Dataset)
    assignment.campaign.dataset.project = rows.from_row(Project, row, at)
    at += rows.width(Project)
    assignment.annotator = rows.from_row(Annotator, row, at)
    role, assignment.codes_on = row[-2:]
    assignment.member_role = Membership.Role.OWNER if user.is_superuser else role
    return assignment


def annotator_for_user(*, user: User, project: Project) -> Annotator | None:
    if not user.is_authenticated:
        return None
    return Annotator.objects.filter(project=project, user=user).first()


# --- Pages (projects -> datasets -> items) -----------------------------------


def project_list_with_roles(*, user: User) -> QuerySet[Project]:
    """The user's projects, each annotated with the user's `role` (owner for superusers)."""
    qs = project_list(user=user)
    if user.is_authenticated and user.is_superuser:
        return qs.annotate(role=Value(Membership.Role.OWNER.value))
    if not user.is_authenticated:
        return qs
    role = Membership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]
    return qs.annotate(role=Subquery(role))


# Search (pages and API). Substring matching, case-insensitive, served by
# trigram GIN indexes (migration 0003). A term matched by fewer than
# SEARCH_PROBE_ROWS texts is "rare": the indexes find all its items at once.
# A more common one would make the indexes return most of the table, so its
# items are found by walking the items in order and stopping at the page
# (they are dense). Counts of searches stop at SEARCH_COUNT_CAP (see
# `SearchPaginator`), so no page ever counts a million matches.


def membership_list(*, project: Project) -> QuerySet[Membership]:
    return Membership.objects.filter(project=project).select_related("user").order_by("user__username")
