from django.contrib.auth.decorators import login_required
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotations import selectors
from annotations.access import annotates_only, require_staff
from annotations.models import Campaign, Dataset, Item, Output, System


def count_of(model, **lookup) -> Coalesce:
    """A correlated COUNT(*) subquery: counting through joins would multiply rows."""
    sub = model.objects.filter(**lookup).order_by().values(*lookup.keys()).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(sub, output_field=IntegerField()), 0)


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    if annotates_only(user=request.user):
        return redirect("annotate-home")  # their campaigns; projects, datasets... are for staff
    projects = selectors.project_list_with_roles(user=request.user).annotate(
        n_datasets=count_of(Dataset, project=OuterRef("pk")),
        n_campaigns=count_of(Campaign, dataset__project=OuterRef("pk")),
    )
    can_upload = selectors.staff_project_list(user=request.user).exists()
    return render(request, "annotations/project_list.html", {"projects": projects, "can_upload": can_upload})


@login_required
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(selectors.project_list(user=request.user), pk=pk)
    role = require_staff(user=request.user, project=project)
    datasets = selectors.dataset_list(user=request.user).filter(project=project).annotate(
        n_items=count_of(Item, dataset=OuterRef("pk")),
        n_systems=count_of(System, dataset=OuterRef("pk")),
        n_outputs=count_of(Output, item__dataset=OuterRef("pk")),
    )
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
