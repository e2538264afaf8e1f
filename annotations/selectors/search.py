"""Item search and the lists behind the dataset pages and the item and output APIs."""

from django.db import connection
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Exists,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import MD5, Cast, Concat

from annotations.models import (
    Dataset,
    DatasetCount,
    Item,
    Output,
    Reference,
)
from annotations.selectors.roles import User, blind_project_ids, dataset_list, item_list, output_list

SEARCH_MIN_TEXT_CHARS = 3  # shorter queries match item ids only (a trigram needs 3 characters)
# Longest query, for the API and the dataset page alike: the query is one substring, and a long
# one cannot use the trigram indexes well (a 300-word query took 12 s on the page).
SEARCH_MAX_CHARS = 200
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
        Item.objects.filter(dataset__in=datasets)
        .annotate(data_text=Cast("data", TextField()))
        .filter(in_item)
        .values_list("pk", flat=True),
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


_NO_COUNTS = {"items": 0, "systems": 0, "outputs": 0, "references": 0}


def dataset_counts_of(*, dataset_ids: list[int]) -> dict[int, dict[str, int]]:
    """Items, systems, outputs and references of each dataset, in one query whatever their size:
    the counters the database keeps (`DatasetCount`), never a count of the rows (a million outputs
    took 0.4-0.6 s to count, on every first load after the cache was emptied)."""
    found = {
        row["dataset_id"]: {
            "items": row["n_items"],
            "systems": row["n_systems"],
            "outputs": row["n_outputs"],
            "references": row["n_references"],
        }
        for row in DatasetCount.objects.filter(dataset_id__in=dataset_ids).values()
    }
    return {pk: found.get(pk, dict(_NO_COUNTS)) for pk in dataset_ids}


def dataset_counts(*, dataset: Dataset) -> dict[str, int]:
    """Items, systems, outputs and references of a dataset (`dataset_counts_of`)."""
    return dataset_counts_of(dataset_ids=[dataset.pk])[dataset.pk]


def search_query_problem(query: str) -> str | None:
    """Why `query` is refused (the API answers 400, the page shows it), or None."""
    if len(query) > SEARCH_MAX_CHARS:
        return f"The search is {len(query):,} characters long; at most {SEARCH_MAX_CHARS} are searched."
    return None


def dataset_item_search(*, dataset: Dataset, query: str = "", system_id: int | None = None) -> QuerySet[Item]:
    """Items of one dataset matching `query` and `system_id` (see `_item_search`): the very
    query of the item API's search (`item_api_list`) for one dataset, so the page is as fast as
    the API and finds the same items (the page used to join through a dataset subquery of its own
    and took three to fifteen times as long)."""
    datasets = Dataset.objects.filter(pk=dataset.pk).order_by().values("pk")
    qs = Item.objects.filter(dataset_id=dataset.pk)
    return _item_search(qs, datasets=datasets, query=query, system_id=system_id).order_by(
        "dataset_id", "position", "id"
    )


# --- REST API (filters on the scoped lists above) ----------------------------


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
        qs = qs.annotate(
            order_key=Case(
                When(item__dataset__project_id__in=blind, then=key), default=F("system__name"), output_field=CharField()
            )
        )
        return qs.order_by("item__dataset_id", "item__position", "item_id", "order_key", "id")
    return qs.order_by("item__dataset_id", "item__position", "item_id", "system__name")


# --- Annotation (the unit an annotator works on) ------------------------------
