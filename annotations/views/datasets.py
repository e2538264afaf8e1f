from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotations import pagination, selectors
from annotations.access import require_staff, require_staff_somewhere
from annotations.forms import DatasetUploadForm
from annotations.models import ImportJob, Item, Output, Reference, System
from annotations.pagination import CappedPaginator
from annotations.services.import_jobs import dataset_upload_import
from annotations.services.imports import DatasetNameTaken, ImportFailed
from annotations.views.items import item_preview
from annotations.views.projects import count_of
from workbench.exceptions import DomainError

ITEMS_PER_PAGE = 25


@login_required
def dataset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = get_object_or_404(selectors.dataset_list(user=request.user), pk=pk)
    systems = list(System.objects.filter(dataset=dataset).order_by("name"))
    if dataset.project_id in selectors.blind_project_ids(user=request.user):
        systems = []  # annotators browse blind: no system names, no filter by system
    query = request.GET.get("q", "").strip()
    system = None
    system_param = request.GET.get("system", "")
    if system_param.isdigit():
        system = next((s for s in systems if s.pk == int(system_param)), None)

    # The API's limits: an over-long query is answered with a message, not searched.
    query_problem = selectors.search_query_problem(query)
    items = selectors.dataset_item_search(
        dataset=dataset, query="" if query_problem else query, system_id=system.pk if system else None
    )
    # A search counts at most SEARCH_COUNT_CAP matches; the items of one system at most LIST_COUNT_CAP
    # (an EXISTS probe per item: 0.15-0.25 s over 100,000 items, bench_pages at 1M); a plain listing
    # counts all (an index-only count).
    cap = selectors.SEARCH_COUNT_CAP if query else (pagination.LIST_COUNT_CAP if system else None)
    paginator = CappedPaginator(items, ITEMS_PER_PAGE, count_cap=cap)
    page = paginator.get_page(request.GET.get("page"))
    page.object_list = _page_columns(list(page.object_list), system)
    for item in page.object_list:
        item.preview = item_preview(item)

    # Keep the search when moving between pages.
    params = request.GET.copy()
    params.pop("page", None)
    role = selectors.project_role(user=request.user, project=dataset.project)
    return render(
        request,
        "annotations/dataset_detail.html",
        {
            "dataset": dataset,
            "project": dataset.project,
            "systems": systems,
            "system": system,
            "query": query[: selectors.SEARCH_MAX_CHARS],
            "query_problem": query_problem,
            "search_max_chars": selectors.SEARCH_MAX_CHARS,
            "page": page,
            "querystring": params.urlencode(),
            "filtered": bool((query and not query_problem) or system),
            "capped": paginator.capped,
            "ids_only": 0 < len(query) < selectors.SEARCH_MIN_TEXT_CHARS,
            "is_staff": role in selectors.STAFF_ROLES,
            "counts": selectors.dataset_counts(dataset=dataset),
        },
        status=400 if query_problem else 200,
    )


def _page_columns(items: list, system: System | None) -> list:
    """The page's items with their table columns (first reference, number of outputs, the chosen
    system's output), computed for these rows only: in the paginated query, PostgreSQL would
    compute them for every row an OFFSET skips too (seconds on the last page of 100,000 items)."""
    columns = Item.objects.filter(pk__in=[item.pk for item in items]).annotate(
        first_reference=Subquery(Reference.objects.filter(item=OuterRef("pk")).order_by("position").values("text")[:1]),
        n_outputs=count_of(Output, item=OuterRef("pk")),
    )
    if system:
        # Show the chosen system's output beside each item.
        columns = columns.annotate(
            system_output=Subquery(Output.objects.filter(item=OuterRef("pk"), system=system).values("text")[:1])
        )
    by_id = {item.pk: item for item in columns}
    return [by_id[item.pk] for item in items]


@login_required
def dataset_upload(request: HttpRequest) -> HttpResponse:
    require_staff_somewhere(user=request.user)  # users who only annotate: 404
    projects = selectors.staff_project_list(user=request.user)
    initial = {}
    if request.GET.get("project"):
        # 404 outside the user's projects (and for what is not an id) and where they only annotate.
        project_id = request.GET["project"]
        if not (project_id.isascii() and project_id.isdigit() and len(project_id) < 19):
            raise Http404("No such project.")
        project = get_object_or_404(selectors.project_list(user=request.user), pk=int(project_id))
        require_staff(user=request.user, project=project, message="Only owners and researchers may import datasets.")
        initial["project"] = project
    if not projects.exists():
        raise PermissionDenied("Only owners and researchers may import datasets.")

    errors: list = []
    if request.method == "POST":
        form = DatasetUploadForm(request.POST, request.FILES, projects=projects)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                result = dataset_upload_import(
                    user=request.user,
                    upload=upload,
                    dataset_name=form.cleaned_data["dataset_name"],
                    project=form.cleaned_data["project"],
                    fmt=form.fmt,
                )
            except DatasetNameTaken as exc:
                form.add_error("dataset_name", "; ".join(e.reason for e in exc.errors))
            except ImportFailed as exc:
                errors = list(exc.errors)
            except (DomainError, PermissionDenied) as exc:
                form.add_error(None, str(exc) or "The import was refused.")
            else:
                if isinstance(result, ImportJob):
                    return redirect("import-job-detail", pk=result.pk)
                if result.unchanged:
                    messages.info(
                        request, f"{upload.name} was already imported into {result.dataset}: nothing changed."
                    )
                else:
                    verb = "Created" if result.created else "Updated"
                    messages.success(
                        request,
                        f"{verb} dataset {result.dataset}: {result.items} items, {result.outputs} outputs.",
                    )
                return redirect("dataset-detail", pk=result.dataset.pk)
    else:
        form = DatasetUploadForm(initial=initial, projects=projects)
    return render(
        request,
        "annotations/dataset_upload.html",
        {"form": form, "errors": errors, "project": initial.get("project")},
        status=400 if request.method == "POST" else 200,
    )
