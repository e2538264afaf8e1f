"""Reads, and the one definition of who may see what.

Roles: owners and researchers of a project see everything in it; annotators
see the project's datasets and campaigns but only their own assignments and
judgements, never other annotators' judgements or metric scores. Non-members
see nothing (404, not 403, so ids of other projects leak nothing).
"""
import json

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache import cache
from django.db import connection
from django.db.models import (
    BooleanField, Case, CharField, Count, Exists, F, OuterRef, Prefetch, Q, QuerySet, Subquery, TextField, Value, When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import MD5, Cast, Concat

from annotations.models import (
    Annotator,
    Assignment,
    BestWorstJudgement,
    Campaign,
    Dataset,
    ImportJob,
    Item,
    Membership,
    Output,
    PairwiseJudgement,
    Project,
    RatingJudgement,
    Reference,
    SpanJudgement,
    System,
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
    import hashlib

    return hashlib.md5(f"{getattr(user, 'pk', 0)}:{output_id}".encode()).hexdigest()


def dataset_list(*, user: User) -> QuerySet[Dataset]:
    return Dataset.objects.filter(project__in=project_list(user=user)).select_related("project")


def item_list(*, user: User) -> QuerySet[Item]:
    return Item.objects.filter(dataset__project__in=project_list(user=user)).select_related("dataset")


def output_list(*, user: User) -> QuerySet[Output]:
    return Output.objects.filter(item__dataset__project__in=project_list(user=user)).select_related(
        "item", "item__dataset", "system"
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


def span_judgement_list(*, user: User) -> QuerySet[SpanJudgement]:
    return (
        _judgement_scope(SpanJudgement.objects.all(), user=user)
        .select_related("campaign", "annotator", "output", "item")
        .prefetch_related("spans")
    )


def counted(qs: QuerySet) -> QuerySet:
    """Only the judgements that count: complete units and imports, never
    partial or abandoned work. Every analysis should start from this."""
    return qs.filter(status="complete")


def assignment_list(*, user: User) -> QuerySet[Assignment]:
    if not user.is_authenticated:
        return Assignment.objects.none()
    qs = Assignment.objects.select_related("campaign", "annotator", "item")
    if user.is_superuser:
        return qs
    staff = qs.filter(campaign__dataset__project__in=staff_project_list(user=user))
    own = qs.filter(annotator__user=user)
    return (staff | own).distinct()


def campaign_for_member(*, user: User, campaign_id: int) -> Campaign | None:
    """A campaign (with its dataset and project) for one of its project's members,
    in one query: `member_role` is the user's role (None for non-members, who
    must get a 404) and `member_annotator` their account's annotator (None if
    not made yet). The hot request of annotation asks this first, so the query
    is written as SQL (`annotations.rows`): three ORM lookups cost three round
    trips, one ORM query with subqueries more CPU to build than to answer."""
    from annotations import rows

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
            [user.pk, user.pk, user.pk, campaign_id])
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
            id=annotator_id, project_id=campaign.dataset.project_id, name=annotator_name, user_id=user.pk,
            namespace=Annotator.Namespace.ACCOUNT)
        campaign.member_annotator._state.adding = False
    return campaign


def own_assignment(*, user: User, assignment_id: int) -> Assignment | None:
    """The user's own assignment (None for anyone else's) with its campaign,
    dataset, project and annotator, the user's role in the project
    (`member_role`, None when no longer a member) and whether the campaign
    gives completion codes (`codes_on`): one query, as SQL (`annotations.rows`),
    since every submission and autosave asks it."""
    from annotations import rows
    from annotations.quality.services import completion_codes_on_sql

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
            [user.pk, assignment_id, user.pk])
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
SEARCH_MIN_TEXT_CHARS = 3  # shorter queries match item ids only (a trigram needs 3 characters)
SEARCH_PROBE_ROWS = 5000
SEARCH_COUNT_CAP = 200
# A term matched by this share of a sample of items is common at once (no index probes).
SEARCH_DENSE_SAMPLE = 200
SEARCH_DENSE_SHARE = 0.1


def _item_search(
    qs: QuerySet[Item], *, datasets: QuerySet[Dataset], query: str = "", system_id: int | None = None
) -> QuerySet[Item]:
    """Items of `qs` (all in `datasets`) whose external id or any text matches `query`.

    Text means the source, the structured input, a reference or an output. With
    `system_id`, only items that have an output of that system. Queries shorter
    than SEARCH_MIN_TEXT_CHARS match item ids only.
    """
    query = query.strip()
    if query and len(query) < SEARCH_MIN_TEXT_CHARS:
        qs = qs.filter(external_id__icontains=query)
    elif query:
        qs = _item_text_search(qs, datasets, query)
    if system_id is not None:
        qs = qs.filter(Exists(Output.objects.filter(item=OuterRef("pk"), system_id=system_id)))
    return qs


def _item_text_search(qs: QuerySet[Item], datasets: QuerySet[Dataset], query: str) -> QuerySet[Item]:
    in_item = Q(external_id__icontains=query) | Q(source__icontains=query) | Q(data_text__icontains=query)
    # Each probe reads at most SEARCH_PROBE_ROWS rows through its trigram index.
    probes = [
        Item.objects.filter(dataset__in=datasets).annotate(data_text=Cast("data", TextField()))
        .filter(in_item).values_list("pk", flat=True),
        Reference.objects.filter(item__dataset__in=datasets, text__icontains=query).values_list("item_id", flat=True),
        # Through the system: a dataset has few, so this never hashes every item of the dataset.
        Output.objects.filter(system__dataset__in=datasets, text__icontains=query).values_list("item_id", flat=True),
    ]
    walk = qs.annotate(data_text=Cast("data", TextField())).filter(
        in_item | _text_exists(Reference, query) | _text_exists(Output, query)
    )
    # A very common term shows in a sample of items: no need to ask the indexes
    # (whose posting lists for it are long).
    sample = qs.order_by().values("pk")[:SEARCH_DENSE_SAMPLE]
    if walk.filter(pk__in=sample).count() >= SEARCH_DENSE_SAMPLE * SEARCH_DENSE_SHARE:
        return walk
    ids: set[int] = set()
    for probe in probes:
        found = list(probe.order_by()[:SEARCH_PROBE_ROWS])
        if len(found) == SEARCH_PROBE_ROWS:
            return walk
        ids.update(found)
    # A rare term: every matching item is known. Joined from the ids (unnest), so the
    # page is sorted from them rather than found by walking the whole dataset.
    return qs.filter(pk__in=RawSQL("SELECT unnest(%s::bigint[])", [sorted(ids)]))


def _text_exists(model, query: str) -> RawSQL:
    """EXISTS (a `model` row of this item whose text contains `query`), kept correlated.

    For a common term the matching items are dense: walking the items in the
    page's order and checking each one stops after a few rows. PostgreSQL
    would rather hash every matching text first (seconds for a million);
    OFFSET 0 keeps the subquery per item (it may not be flattened or hashed).
    """
    table = connection.ops.quote_name(model._meta.db_table)
    pattern = f"%{connection.ops.prep_for_like_query(query)}%"
    return RawSQL(
        f"EXISTS (SELECT 1 FROM {table} t WHERE t.item_id = {connection.ops.quote_name(Item._meta.db_table)}.id "
        f"AND UPPER(t.text) LIKE UPPER(%s) OFFSET 0)",
        [pattern],
        output_field=BooleanField(),
    )


# A dataset's counts scan its outputs (a million: a few hundred ms). Above this many
# items they are cached until the next import changes the dataset, or DATASET_COUNTS_TTL.
DATASET_COUNTS_CACHE_ABOVE = 10_000
DATASET_COUNTS_TTL = 300


def dataset_counts(*, dataset: Dataset) -> dict[str, int]:
    """Items, systems, outputs and references of a dataset."""
    items = Item.objects.filter(dataset=dataset).count()

    def count() -> dict[str, int]:
        return {
            "items": items,
            "systems": System.objects.filter(dataset=dataset).count(),
            # Through the systems: an index-only count, no join with the items.
            "outputs": Output.objects.filter(system__dataset=dataset).count(),
            "references": Reference.objects.filter(item__dataset=dataset).count(),
        }

    if items <= DATASET_COUNTS_CACHE_ABOVE:
        return count()
    # The item count and the last import's time are in the key: an import refreshes it.
    key = f"dataset-counts:{dataset.pk}:{items}:{dataset.updated_at.timestamp()}"
    return cache.get_or_set(key, count, DATASET_COUNTS_TTL)


def dataset_item_search(*, dataset: Dataset, query: str = "", system_id: int | None = None) -> QuerySet[Item]:
    """Items of one dataset matching `query` and `system_id` (see `_item_search`)."""
    datasets = Dataset.objects.filter(pk=dataset.pk)
    return _item_search(
        Item.objects.filter(dataset=dataset), datasets=datasets, query=query, system_id=system_id
    ).order_by("position", "id")


# --- REST API (filters on the scoped lists above) ----------------------------


def membership_list(*, project: Project) -> QuerySet[Membership]:
    return Membership.objects.filter(project=project).select_related("user").order_by("user__username")


def item_api_list(
    *, user: User, dataset_id: int | None = None, system_id: int | None = None, query: str = ""
) -> QuerySet[Item]:
    """Visible items with their references and outputs, filtered like `dataset_item_search`.

    A system filter never reaches projects where the user only annotates
    (grouping outputs by system would unblind them).
    """
    qs = item_list(user=user)
    datasets = dataset_list(user=user)
    if dataset_id is not None:
        qs = qs.filter(dataset_id=dataset_id)
        datasets = datasets.filter(pk=dataset_id)
    if system_id is not None:
        qs = qs.exclude(dataset__project_id__in=blind_project_ids(user=user))
    qs = _item_search(qs, datasets=datasets.order_by().values("pk"), query=query, system_id=system_id)
    return qs.order_by("dataset_id", "position", "id").prefetch_related(
        "references", Prefetch("outputs", queryset=Output.objects.select_related("system"))
    )


def output_api_list(
    *, user: User, dataset_id: int | None = None, system_id: int | None = None, item_id: int | None = None
) -> QuerySet[Output]:
    """Visible outputs; in projects where the user only annotates they come in
    the user's own blind order (see `blind_order_key`), and a system filter
    does not reach them."""
    qs = output_list(user=user)
    blind = blind_project_ids(user=user)
    if dataset_id is not None:
        qs = qs.filter(item__dataset_id=dataset_id)
    if system_id is not None:
        qs = qs.filter(system_id=system_id).exclude(item__dataset__project_id__in=blind)
    if item_id is not None:
        qs = qs.filter(item_id=item_id)
    if blind:
        key = MD5(Concat(Value(f"{user.pk}:"), Cast("id", CharField())))
        qs = qs.annotate(order_key=Case(When(item__dataset__project_id__in=blind, then=key),
                                        default=F("system__name"), output_field=CharField()))
        return qs.order_by("item__dataset_id", "item__position", "item_id", "order_key", "id")
    return qs.order_by("item__dataset_id", "item__position", "item_id", "system__name")


# --- Annotation (the unit an annotator works on) ------------------------------


def enrolment_for(*, campaign: Campaign, annotator: Annotator | None):
    from annotations.models import Enrolment

    if annotator is None:
        return None
    return Enrolment.objects.filter(campaign=campaign, annotator=annotator).first()


def annotator_progress(*, campaign: Campaign, enrolment) -> dict:
    """Done / total for the annotator's current batch, and their units done overall."""
    size = max(1, campaign.units_per_batch)
    done = enrolment.n_done if enrolment else 0
    return {"done": done, "batch": done // size + 1, "batch_done": done % size, "batch_size": size}


def _item_and_texts(*, item_id: int, output_ids: list[int]) -> tuple[Item, dict[int, str]]:
    """The item shown with a unit and the texts of `output_ids` (all of the
    item's outputs when empty), in one query when `output_ids` are given: this is on the
    path of every unit an annotator is given."""
    item_fields = ("id", "external_id", "source", "data")
    if output_ids:
        from annotations import rows

        with rows.cursor() as cursor:
            cursor.execute(
                f"SELECT i.id, i.external_id, i.source, i.data::text, (SELECT jsonb_object_agg(o.id, o.text)::text "
                f"FROM {connection.ops.quote_name(Output._meta.db_table)} o WHERE o.id = ANY(%s)) "
                f"FROM {connection.ops.quote_name(Item._meta.db_table)} i WHERE i.id = %s",
                [list(output_ids), item_id])
            pk, external_id, source, data, texts = cursor.fetchone()
        item = Item(id=pk, external_id=external_id, source=source, data=json.loads(data))
        return item, {int(k): v for k, v in json.loads(texts or "{}").items()}
    item = Item.objects.only(*item_fields).get(pk=item_id)
    # order_by(): the default ordering of outputs would join items and systems.
    if output_ids:
        return item, dict(Output.objects.filter(pk__in=output_ids).order_by().values_list("id", "text"))
    return item, dict(Output.objects.filter(item_id=item_id).order_by("id").values_list("id", "text"))


def assignment_payload(*, assignment: Assignment, enrolment=None, show_unit: bool = False) -> dict:
    """What an annotator is shown for an assignment: outputs as `id` + `text`
    in the order the server chose, never a system name; the input and the
    references only where the campaign shows them; the RankME anchor."""
    campaign = assignment.campaign
    order = list(assignment.shown_order)
    if not order and assignment.unit_id:
        order = list(assignment.unit.outputs)
    item, texts = _item_and_texts(item_id=assignment.item_id, output_ids=order)
    if not order:
        order = list(texts)
    if assignment.unit_id and not set(order) <= set(texts):
        # Quality control: a control unit shows its own texts under alias ids (annotations.quality);
        # only then are ids missing from the outputs table, so regular units cost no query here.
        from annotations.quality.services import unit_texts

        texts = unit_texts(unit=assignment.unit) or texts
    references = []
    if campaign.show_reference or campaign.protocol == Campaign.Protocol.RANKME:
        references = list(Reference.objects.filter(item_id=item.pk).order_by("position").values("position", "text"))
    anchor = None
    if campaign.protocol == Campaign.Protocol.RANKME and campaign.anchor_value is not None and references:
        anchor = {"text": references[0]["text"], "value": campaign.anchor_value}
    return {
        "id": assignment.pk,
        "campaign": campaign.pk,
        # The unit id only for researchers: control units (annotations.quality) are created during the
        # campaign, so their ids would tell an annotator which units are controls.
        "unit": assignment.unit_id if show_unit else None,
        "annotator": assignment.annotator_id,
        "annotator_name": assignment.annotator.name,
        "status": assignment.status,
        "seq": assignment.seq,
        "created_at": assignment.created_at,
        "expires_at": assignment.expires_at,
        "shown_order": order,
        "item": {
            "id": item.pk,
            "external_id": item.external_id,
            "source": item.source if campaign.show_source else "",
            "data": item.data if campaign.show_source else [],
            "references": references if campaign.show_reference else [],
            "outputs": [{"id": output_id, "text": texts.get(output_id, "")} for output_id in order],
        },
        "anchor": anchor,
        "draft": assignment.draft or {},
        "progress": annotator_progress(campaign=campaign, enrolment=enrolment),
    }


def assignment_brief(*, assignment: Assignment, show_unit: bool = False) -> dict:
    """An assignment as AssignmentOutputSerializer renders it (the unit id for
    researchers only), built without running the serializer: every submit answers it."""
    return {
        "id": assignment.pk,
        "campaign": assignment.campaign_id,
        "annotator": assignment.annotator_id,
        "annotator_name": assignment.annotator.name,
        "item": assignment.item_id,
        "unit": assignment.unit_id if show_unit else None,
        "status": assignment.status,
        "seq": assignment.seq,
        "shown_order": list(assignment.shown_order),
        "expires_at": assignment.expires_at,
        "completed_at": assignment.completed_at,
        "time_spent_ms": assignment.time_spent_ms,
        "created_at": assignment.created_at,
    }


def campaign_settings(*, campaign: Campaign) -> dict:
    """The campaign as its pages and clients need it (no system names)."""
    from annotations.services.judgements import severities_of

    return {
        "id": campaign.pk,
        "name": campaign.name,
        "protocol": campaign.protocol,
        "criteria": campaign.criteria_configs(),
        "anchor_value": campaign.anchor_value,
        "tuple_size": campaign.tuple_size,
        "severities": severities_of(campaign) if campaign.protocol == Campaign.Protocol.ESA else [],
        "units_per_batch": campaign.units_per_batch,
        "show_source": campaign.show_source,
        "show_reference": campaign.show_reference,
    }


def campaign_dashboard(*, campaign: Campaign) -> dict:
    """Live progress of a campaign for its researchers: units, judgements by
    status, per annotator (done, pending, abandoned, median seconds per unit)
    and per system (units complete)."""
    import statistics
    from collections import defaultdict

    from annotations.models import Unit

    # Regular units only: control units (annotations.quality) have their own page.
    units = list(Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR).values_list(
        "systems", "n_done", "redundancy"))
    complete = sum(1 for _, done, k in units if done >= k)
    per_system: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])  # units, complete, judged
    for systems, done, k in units:
        for system_id in systems:
            row = per_system[system_id]
            row[0] += 1
            row[1] += done >= k
            row[2] += done
    names = dict(campaign.dataset.systems.filter(pk__in=list(per_system)).values_list("pk", "name"))
    systems = [
        {"system": names.get(pk, str(pk)), "units": u, "complete": c, "judged": j, "slots": u * campaign.redundancy,
         "percent": round(100 * j / (u * campaign.redundancy)) if u else 0}
        for pk, (u, c, j) in per_system.items()
    ]
    systems.sort(key=lambda row: row["system"])

    rows: dict[int, dict] = {}
    times: dict[int, list[int]] = defaultdict(list)
    for annotator_id, name, status, spent in Assignment.objects.filter(campaign=campaign).values_list(
        "annotator_id", "annotator__name", "status", "time_spent_ms"
    ):
        row = rows.setdefault(annotator_id, {"annotator": name, "done": 0, "pending": 0, "abandoned": 0})
        if status == Assignment.Status.DONE:
            row["done"] += 1
            if spent is not None:
                times[annotator_id].append(spent)
        elif status == Assignment.Status.PENDING:
            row["pending"] += 1
        else:
            row["abandoned"] += 1
    for annotator_id, row in rows.items():
        row["median_seconds"] = round(statistics.median(times[annotator_id]) / 1000, 1) if times[annotator_id] else None
    annotators = sorted(rows.values(), key=lambda row: (-row["done"], row["annotator"]))

    model = {"likert": RatingJudgement, "rankme": RatingJudgement, "pairwise": PairwiseJudgement,
             "bws": BestWorstJudgement, "esa": SpanJudgement}[campaign.protocol]
    by_status = dict(
        model.objects.filter(campaign=campaign).order_by().values_list("status").annotate(n=Count("id"))
    )
    return {
        "units": len(units),
        "complete": complete,
        "percent": round(100 * complete / len(units)) if units else 0,
        "judgements": {status: by_status.get(status, 0) for status in ("complete", "partial", "abandoned")},
        "annotators": annotators,
        "systems": systems,
    }


# --- Imports running on a worker ------------------------------------------------


def import_job_list(*, user: User) -> QuerySet[ImportJob]:
    """Import jobs the user may follow: their own, and all of the projects they are staff of."""
    if not user.is_authenticated:
        return ImportJob.objects.none()
    qs = ImportJob.objects.select_related("project", "dataset", "campaign")
    if user.is_superuser:
        return qs
    return qs.filter(Q(user=user) | Q(project__in=staff_project_list(user=user))).distinct()


# --- Exports written by a worker ----------------------------------------------------


def export_job_list(*, user: User):
    """Export jobs the user may follow and download: those of campaigns in projects where they are
    owner or researcher now (annotators and non-members see none)."""
    from annotations.export.models import ExportJob

    if not user.is_authenticated:
        return ExportJob.objects.none()
    return ExportJob.objects.select_related("campaign__dataset__project").filter(
        campaign__dataset__project__in=staff_project_list(user=user))
