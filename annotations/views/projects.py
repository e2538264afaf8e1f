from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotations import selectors
from annotations.access import annotates_only, require_staff
from annotations.forms import ProjectCreateForm
from annotations.models import Campaign, Dataset
from annotations.services.projects import project_create, user_may_create_projects

CREATORS_ONLY = "You may not create projects; ask an administrator or the owner of a project."


def count_of(model, **lookup) -> Coalesce:
    """A correlated COUNT(*) subquery: counting through joins would multiply rows."""
    sub = model.objects.filter(**lookup).order_by().values(*lookup.keys()).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(sub, output_field=IntegerField()), 0)


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    """The user's projects; users allowed by WORKBENCH_PROJECT_CREATORS create one here (they own it)."""
    may_create = user_may_create_projects(user=request.user)
    if annotates_only(user=request.user) and not may_create:
        return redirect("annotate-home")  # their campaigns; projects, datasets... are for staff
    form = ProjectCreateForm()
    if request.method == "POST":
        if not may_create:
            raise PermissionDenied(CREATORS_ONLY)
        form = ProjectCreateForm(request.POST)
        if form.is_valid():
            try:
                project = project_create(
                    name=form.cleaned_data["name"], owner=request.user, description=form.cleaned_data["description"]
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    for error in errors:
                        form.add_error(field if field in form.fields else None, error)
            else:
                messages.success(
                    request,
                    f"Project {project.name} created: you are its owner. Import a dataset and add members next.",
                )
                return redirect("project-detail", pk=project.pk)
    projects = selectors.project_list_with_roles(user=request.user).annotate(
        n_datasets=count_of(Dataset, project=OuterRef("pk")),
        n_campaigns=count_of(Campaign, dataset__project=OuterRef("pk")),
    )
    can_upload = selectors.staff_project_list(user=request.user).exists()
    return render(
        request,
        "annotations/project_list.html",
        {
            "projects": projects,
            "can_upload": can_upload,
            "may_create": may_create,
            "form": form,
        },
        status=400 if request.method == "POST" else 200,
    )


@login_required
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(selectors.project_list(user=request.user), pk=pk)
    role = require_staff(user=request.user, project=project)
    # The counters the database keeps, one query for every dataset: a correlated count of a
    # million outputs per dataset would take the page seconds.
    datasets = list(selectors.dataset_list(user=request.user).filter(project=project))
    all_counts = selectors.dataset_counts_of(dataset_ids=[dataset.pk for dataset in datasets])
    for dataset in datasets:
        counts = all_counts[dataset.pk]
        dataset.n_items, dataset.n_systems, dataset.n_outputs = counts["items"], counts["systems"], counts["outputs"]
    campaigns = selectors.campaign_list(user=request.user).filter(dataset__project=project)
    return render(
        request,
        "annotations/project_detail.html",
        {
            "project": project,
            "role": role,
            "is_staff": role in selectors.STAFF_ROLES,
            "datasets": datasets,
            "campaigns": campaigns,
        },
    )
