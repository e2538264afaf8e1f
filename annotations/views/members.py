"""The members page's account actions (owners only, checked by `project_members`): annotators in
bulk, a new login link for one member, and the links just issued as a CSV file."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone

from annotations.export.csvsafe import csv_response
from annotations.forms import AnnotatorsBulkForm
from annotations.models import Membership, Project
from annotations.services.accounts import MAX_USERNAMES, annotators_add_bulk
from annotations.services.login_links import login_link_create, login_link_url

CSV_HEADER = ["username", "login_link", "expires_at"]


def _base_url(request: HttpRequest) -> str:
    # The host the owner reached us on is the host the annotators will reach.
    return request.build_absolute_uri("/")


def issued_links(request: HttpRequest, tokens: dict[str, str], expires: str) -> list[dict]:
    base = _base_url(request)
    return [
        {"username": name, "url": login_link_url(token=token, base_url=base), "expires": expires}
        for name, token in tokens.items()
    ]


def bulk_add(request: HttpRequest, project: Project) -> tuple[AnnotatorsBulkForm, dict]:
    """The bulk form (errors attached) and what the page shows about the outcome."""
    form = AnnotatorsBulkForm(request.POST, request.FILES)
    if not form.is_valid():
        return form, {}
    try:
        result = annotators_add_bulk(
            project=project,
            text=form.cleaned_data["text"],
            created_by=request.user,
            links_for_existing=form.cleaned_data["links_for_existing"],
        )
    except ValidationError as exc:
        for message in exc.messages:
            form.add_error(None, message)
        return form, {}
    return AnnotatorsBulkForm(), {"bulk": result, "links": issued_links(request, result.links, _expiry())}


def new_link(request: HttpRequest, project: Project) -> dict:
    """A new link for one member (earlier unused ones stop working); ValidationError says why not."""
    membership = get_object_or_404(
        Membership.objects.select_related("user"), project=project, pk=request.POST.get("member")
    )
    _, token = login_link_create(user=membership.user, project=project, created_by=request.user)
    return {"links": issued_links(request, {membership.user.get_username(): token}, _expiry())}


def links_csv(request: HttpRequest, project: Project) -> HttpResponse:
    """The links shown on the page, as a CSV file. Tokens are stored hashed only, so the page
    posts back the links it shows (they are the owner's own; every cell is neutralised)."""
    names = request.POST.getlist("link_username")[:MAX_USERNAMES]
    urls = request.POST.getlist("link_url")[:MAX_USERNAMES]
    expires = request.POST.getlist("link_expires")[:MAX_USERNAMES]
    rows = [(n[:150], u[:500], e[:40]) for n, u, e in zip(names, urls, expires)]
    return csv_response(f"{project.name} login links", CSV_HEADER, rows)


def _expiry() -> str:
    return (timezone.now() + timedelta(days=settings.WORKBENCH_LOGIN_LINK_DAYS)).strftime("%Y-%m-%d %H:%M UTC")
