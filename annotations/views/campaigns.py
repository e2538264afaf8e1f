"""Researcher pages: a campaign's settings and live progress, its judgements,
the campaign set-up page (with a preview identical to the annotator's page),
and the members page for owners."""

from __future__ import annotations

import random

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotations import protocols, selectors
from annotations.access import campaign_for_staff, require_owner, require_staff
from annotations.allocation.services import campaign_stop
from annotations.allocation.state import PARAM_BOUNDS
from annotations.apis.projects import NO_SUCH_ACCOUNT, addable_user
from annotations.forms import AnnotatorsBulkForm, CampaignForm, CriterionFormSet, MemberAddForm
from annotations.models import Campaign, Membership, Output
from annotations.pagination import CappedPaginator
from annotations.selectors.background import background_line, background_questions, background_summary
from annotations.services.campaigns import campaign_create
from annotations.services.progress import campaign_progress
from annotations.services.projects import membership_add, membership_remove
from annotations.studies.views import join_links_context
from annotations.views import members
from annotations.views.annotate import unit_context

JUDGEMENTS_PER_PAGE = 50
JUDGEMENTS_COUNT_CAP = 10_000


@login_required
def campaign_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Researchers: settings and live progress. Annotators go to their work page."""
    campaign = get_object_or_404(selectors.campaign_list(user=request.user).prefetch_related("systems"), pk=pk)
    if not selectors.is_project_staff(user=request.user, project=campaign.project):
        return redirect("annotate-campaign", pk=campaign.pk)
    return render(
        request,
        "campaigns/detail.html",
        {
            "campaign": campaign,
            "project": campaign.project,
            "criteria": campaign.criteria_configs(),
            "systems": sorted(s.name for s in campaign.systems.all()),
            "dashboard": campaign_progress(campaign=campaign),
            "allocation_label": Campaign.Allocation(campaign.allocation).label,
            "allocation_params": _params_in_order(campaign.allocation_params),
            "protocol_settings": protocols.of(campaign).settings_summary(campaign),
            "api_url": f"{protocols.of(campaign).api_path}?campaign={campaign.pk}",
            "background": _background(campaign),
            **join_links_context(request, campaign),
        },
    )


def _background(campaign: Campaign) -> dict | None:
    """The background answers in aggregate (None, and no query, when the campaign asks none)."""
    questions = background_questions(campaign)
    if not questions:
        return None
    summary = background_summary(campaign=campaign, questions=questions)
    return {"n": summary["n"], "lines": [background_line(q) for q in summary["questions"]]}


def _params_in_order(params: dict | None) -> list[tuple[str, object]]:
    """Adaptive knobs in their documented order (jsonb keeps its own)."""

    params = params or {}
    return [(k, params[k]) for k in PARAM_BOUNDS if k in params] + sorted(
        (k, v) for k, v in params.items() if k not in PARAM_BOUNDS
    )


@login_required
def campaign_progress_json(request: HttpRequest, pk: int) -> JsonResponse:
    campaign = campaign_for_staff(user=request.user, pk=pk)
    return JsonResponse(campaign_progress(campaign=campaign))


@login_required
def campaign_stop_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Stop the campaign early with a reason (POST, owners and researchers)."""

    campaign = campaign_for_staff(user=request.user, pk=pk)
    if request.method != "POST":
        return redirect("campaign-detail", pk=campaign.pk)
    try:
        campaign_stop(campaign=campaign, reason=request.POST.get("reason", ""))
    except ValidationError as exc:
        for message in [m for ms in getattr(exc, "message_dict", {"": exc.messages}).values() for m in ms]:
            messages.error(request, message)
    else:
        messages.success(request, "The campaign is stopped: no new units are handed out.")
    return redirect("campaign-detail", pk=campaign.pk)


@login_required
def campaign_judgements(request: HttpRequest, pk: int) -> HttpResponse:
    """Every judgement of the campaign, with its status (complete / partial / abandoned)."""
    campaign = campaign_for_staff(user=request.user, pk=pk)
    lists = {
        "RatingJudgement": selectors.rating_judgement_list,
        "PairwiseJudgement": selectors.pairwise_judgement_list,
        "BestWorstJudgement": selectors.bestworst_judgement_list,
        "SpanJudgement": selectors.span_judgement_list,
    }
    model = protocols.of(campaign).model
    listed = lists.get(model.__name__)
    rows = (listed(user=request.user) if listed else selectors.judgement_list(model=model, user=request.user)).filter(
        campaign=campaign
    )
    status = request.GET.get("status", "")
    if status in ("complete", "partial", "abandoned"):
        rows = rows.filter(status=status)
    # Counted up to JUDGEMENTS_COUNT_CAP (counting a million rows, and deep OFFSETs, take
    # seconds): the page says when there are more; the export and the API have them all.
    # Newest first: the primary key's index gives the page without sorting the campaign's judgements.
    ordered = rows.order_by("-id")
    page = CappedPaginator(
        ordered.values_list("pk", flat=True), JUDGEMENTS_PER_PAGE, count_cap=JUDGEMENTS_COUNT_CAP
    ).get_page(request.GET.get("page"))
    # The page's ids first, then their rows with their joins: the OFFSET walks ids alone (the joins
    # of the up to 10,000 rows it skips made a deep page take 0.7-0.9 s at 50,000 judgements).
    page.object_list = list(ordered.filter(pk__in=list(page.object_list)))
    output_ids = set()
    for row in page.object_list:
        output_ids.update(row.shown_order or [])
        for name in ("output_id", "output_a_id", "output_b_id", "best_id", "worst_id"):
            if getattr(row, name, None):
                output_ids.add(getattr(row, name))
    systems = dict(Output.objects.filter(pk__in=output_ids).values_list("pk", "system__name"))
    for row in page.object_list:
        row.shown_systems = [systems.get(i, "?") for i in row.shown_order or []]
        row.span_chips = []
        if hasattr(row, "score"):
            row.answer = f"{row.score:g}" + (f" (rank {row.rank})" if getattr(row, "rank", None) else "")
            if protocols.of(campaign).has_spans:
                row.span_chips = [
                    (f"missing, {s.severity}" if s.missing else f"{s.start}-{s.end} {s.severity}")
                    + (f", {s.category}" if s.category else "")
                    for s in row.spans.all()
                ]
        elif hasattr(row, "winner"):
            winner = {"a": row.output_a_id, "b": row.output_b_id}.get(row.winner)
            row.answer = "tie" if winner is None else f"{systems.get(winner, '?')} preferred"
        else:
            row.answer = f"best {systems.get(row.best_id, '?')}, worst {systems.get(row.worst_id, '?')}"
    return render(
        request,
        "campaigns/judgements.html",
        {
            "campaign": campaign,
            "project": campaign.project,
            "page": page,
            "systems": systems,
            "status": status,
        },
    )


def _preview_payload(*, campaign: Campaign, dataset, system_ids: list[int]) -> dict | None:
    """A unit like the ones annotators will get: the first item's outputs in a
    shuffled order, no system names."""
    outputs = Output.objects.filter(item__dataset=dataset).order_by("item__position", "item_id", "id")
    if system_ids:
        outputs = outputs.filter(system_id__in=system_ids)
    first = outputs.select_related("item").first()
    if first is None:
        return None
    item = first.item
    mine = list(outputs.filter(item=item))
    size = protocols.of(campaign).outputs_per_unit(campaign)
    chosen = mine[:size]
    random.shuffle(chosen)
    references = list(item.references.order_by("position").values("position", "text"))
    anchor = None
    value = protocols.of(campaign).anchor(campaign)
    if protocols.of(campaign).shows_anchor and value and references:
        anchor = {"text": references[0]["text"], "value": value}
    return {
        "id": 0,
        "shown_order": [o.pk for o in chosen],
        "anchor": anchor,
        "draft": {},
        "progress": {"done": 0, "batch": 1, "batch_done": 0, "batch_size": campaign.units_per_batch},
        "item": {
            "id": item.pk,
            "external_id": item.external_id,
            "source": item.source if campaign.show_source else "",
            "data": item.data if campaign.show_source else [],
            "references": references if campaign.show_reference else [],
            "outputs": [{"id": o.pk, "text": o.text} for o in chosen],
        },
    }


def _campaign_fields(form: CampaignForm, criteria: list[dict]) -> dict:
    data = form.cleaned_data
    protocol = data["protocol"]
    rated = protocols.get(protocol).has_scale
    first = criteria[0] if criteria else {}
    fields = {
        "name": data["name"],
        "protocol": protocol,
        "criteria": [c["name"] for c in criteria],
        "instructions": data["instructions"],
        "redundancy": data["redundancy"],
        "public_title": data.get("public_title") or "",
        "units_per_batch": data["units_per_batch"],
        "show_source": data["show_source"],
        "show_reference": data["show_reference"],
        "options": form.options_given(protocols.get(protocol)),
        "assignment_timeout_minutes": data["assignment_timeout_minutes"],
        "criteria_config": [
            {k: v for k, v in c.items() if v not in ("", None) or k in ("name",)}
            if rated
            else {"name": c["name"], "question": c.get("question", "")}
            for c in criteria
        ],
    }
    if rated and first.get("scale_min") is not None and first.get("scale_max") is not None:
        fields["scale_min"], fields["scale_max"] = first["scale_min"], first["scale_max"]
    if protocols.get(protocol).has_spans:
        if data.get("prefill_run"):
            fields["prefill_run"] = data["prefill_run"]
            fields["prefill_holdout"] = data.get("prefill_holdout") or 0.0
    fields["allocation"] = data.get("allocation") or Campaign.Allocation.OVERLAP_FIRST
    if fields["allocation"] == Campaign.Allocation.ADAPTIVE:
        fields["allocation_params"] = {
            name: data.get(f"adaptive_{name}")
            for name in CampaignForm.ADAPTIVE_FIELDS
            if data.get(f"adaptive_{name}") is not None
        }
    return fields


@login_required
def campaign_new(request: HttpRequest, pk: int) -> HttpResponse:
    """Set up a campaign; "Preview" shows exactly the page annotators will get."""
    project = get_object_or_404(selectors.project_list(user=request.user), pk=pk)
    require_staff(user=request.user, project=project, message="Only owners and researchers may set up campaigns.")
    preview, errors = None, []
    if request.method == "POST":
        form = CampaignForm(request.POST, project=project)
        formset = CriterionFormSet(request.POST, prefix="criteria")
        if form.is_valid() and formset.is_valid():
            criteria = [c for c in formset.cleaned_data if c and c.get("name", "").strip()]
            try:
                fields = _campaign_fields(form, criteria)
            except ValidationError as exc:
                fields, errors = None, [m for ms in exc.message_dict.values() for m in ms]
            dataset, systems = form.cleaned_data["dataset"], form.cleaned_data["systems"]
            if fields is None:
                pass
            elif request.POST.get("action") == "preview":
                try:
                    campaign = _preview_campaign(dataset=dataset, fields=fields)
                except ValidationError as exc:
                    errors = [m for ms in getattr(exc, "message_dict", {"": exc.messages}).values() for m in ms]
                else:
                    payload = _preview_payload(campaign=campaign, dataset=dataset, system_ids=[s.pk for s in systems])
                    if payload is None:
                        errors = ["The dataset has no outputs of the chosen systems to preview."]
                    else:
                        preview = unit_context(campaign=campaign, payload=payload, preview=True)
            else:
                try:
                    campaign = campaign_create(dataset=dataset, systems=[s.name for s in systems], **fields)
                except ValidationError as exc:
                    errors = [m for ms in getattr(exc, "message_dict", {"": exc.messages}).values() for m in ms]
                else:
                    messages.success(request, f"Created campaign {campaign.name}: {campaign.units.count()} units.")
                    return redirect("campaign-detail", pk=campaign.pk)
    else:
        form = CampaignForm(project=project, initial={"dataset": request.GET.get("dataset")})
        formset = CriterionFormSet(
            prefix="criteria",
            initial=[{"name": "quality", "question": "How good is this output?", "scale_min": 1, "scale_max": 5}],
        )
    return render(
        request,
        "campaigns/new.html",
        {
            "project": project,
            "form": form,
            "formset": formset,
            "preview": preview,
            "errors": errors,
            "protocol_fields": protocols.setup_fields(),
            "protocol_hints": protocols.setup_hints(),
        },
        status=400 if errors else 200,
    )


def _preview_campaign(*, dataset, fields: dict) -> Campaign:
    """The campaign as it would be created, unsaved, checked by the same service
    (in a transaction rolled back at once)."""

    holder = {}

    class _Rollback(Exception):
        pass

    try:
        with transaction.atomic():
            created = campaign_create(dataset=dataset, **{**fields, "name": f"preview {random.random()}"}, plan="none")
            holder["campaign"] = Campaign(
                **{f.attname: getattr(created, f.attname) for f in Campaign._meta.concrete_fields}
            )
            raise _Rollback()
    except _Rollback:
        pass
    campaign = holder["campaign"]
    campaign.pk = None
    campaign.name = fields["name"]
    return campaign


@login_required
def project_members(request: HttpRequest, pk: int) -> HttpResponse:
    """Owners add people by username, change roles and remove members (a project keeps one owner)."""
    project = get_object_or_404(selectors.project_list(user=request.user), pk=pk)
    require_owner(user=request.user, project=project, message="Only owners of the project may manage its members.")
    form = MemberAddForm()
    bulk_form = AnnotatorsBulkForm()
    shown: dict = {}
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "csv":
                return members.links_csv(request, project)
            if action == "bulk":
                bulk_form, shown = members.bulk_add(request, project)
                if shown:
                    return _members_page(request, project, form, bulk_form, shown, status=200)
            elif action == "link":
                shown = members.new_link(request, project)
                return _members_page(request, project, form, bulk_form, shown, status=200)
            elif action == "add":
                form = MemberAddForm(request.POST)
                if form.is_valid():
                    user = addable_user(form.cleaned_data["username"])
                    if user is None:
                        # The same answer for unknown and inactive accounts.
                        raise ValidationError(NO_SUCH_ACCOUNT)
                    membership_add(project=project, user=user, role=form.cleaned_data["role"])
                    messages.success(request, f"{user.get_username()} is now {form.cleaned_data['role']}.")
                    return redirect("project-members", pk=project.pk)
            elif action == "role":
                membership = get_object_or_404(Membership, project=project, pk=request.POST.get("member"))
                membership_add(project=project, user=membership.user, role=request.POST.get("role", ""))
                messages.success(request, f"{membership.user.get_username()} is now {request.POST.get('role')}.")
                return redirect("project-members", pk=project.pk)
            elif action == "remove":
                membership = get_object_or_404(Membership, project=project, pk=request.POST.get("member"))
                membership_remove(project=project, membership_id=membership.pk)
                messages.success(request, f"{membership.user.get_username()} was removed.")
                return redirect("project-members", pk=project.pk)
        except ValidationError as exc:
            text = " ".join(m for ms in getattr(exc, "message_dict", {"": exc.messages}).values() for m in ms)
            if action not in ("add", "bulk"):
                messages.error(request, text)
                return redirect("project-members", pk=project.pk)
            form.add_error(None, text)
    return _members_page(request, project, form, bulk_form, shown, status=400 if request.method == "POST" else 200)


def _members_page(request, project, form, bulk_form, shown: dict, status: int) -> HttpResponse:
    return render(
        request,
        "projects/members.html",
        {
            "project": project,
            "members": selectors.membership_list(project=project),
            "form": form,
            "bulk_form": bulk_form,
            "roles": Membership.Role.choices,
            **shown,
        },
        status=status,
    )
