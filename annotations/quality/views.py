"""Pages: the quality page for researchers, and an annotator's completion code.

The quality page shows every annotator's figures (with the rules that
include or exclude them), takes hand decisions with a reason, the control
settings and rules, gold / tutorial units, and the completion codes. Writes
go through `annotations.quality.services`, then redirect back (POST, then GET).
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotations import selectors as core
from annotations.access import annotate_campaign_for, annotator_required, campaign_for_staff, request_annotator
from annotations.export.csvsafe import csv_response
from annotations.models import Annotator
from annotations.models.quality import CompletionCode
from annotations.quality import selectors, services
from annotations.quality.forms import CodeForm, DecisionForm, GoldForm, SettingsForm
from annotations.studies.session import join_binding
from annotations.views.figures import figures_on_workers
from workbench import strictjson
from workbench.exceptions import DomainError

ROW_HEIGHT, LABEL_W, PANEL_W, GAP, TOP, BOTTOM = 20, 120, 300, 40, 30, 34


def _chart(rows: list[dict]) -> dict:
    """A dot plot, one row per annotator (worst agreement first): agreement with the others
    (-1..1) in the left panel, share of controls passed (0..100 %) in the right one."""
    ordered = sorted(
        rows, key=lambda r: (r["figures"].agreement_with_others is None, r["figures"].agreement_with_others or 0)
    )
    with_controls = any(r["figures"].controls_passed is not None for r in rows)
    left = LABEL_W
    right = left + PANEL_W + GAP
    width = right + (PANEL_W if with_controls else 0) + 16
    height = TOP + max(1, len(ordered)) * ROW_HEIGHT + BOTTOM
    bottom = TOP + len(ordered) * ROW_HEIGHT
    points = []
    for i, row in enumerate(ordered):
        f, q = row["figures"], row["quality"]
        y = TOP + i * ROW_HEIGHT + ROW_HEIGHT / 2
        agreement = (
            None if f.agreement_with_others is None else round(left + (f.agreement_with_others + 1) / 2 * PANEL_W, 1)
        )
        controls = None if f.controls_passed is None else round(right + f.controls_passed * PANEL_W, 1)
        points.append(
            {
                "y": y,
                "name": row["name"],
                "included": q.included,
                "agreement": agreement,
                "controls": controls,
                "title": (
                    f"{row['name']}: agreement {'–' if f.agreement_with_others is None else f'{f.agreement_with_others:.2f}'}"
                    f", controls passed {'–' if f.controls_passed is None else f'{f.controls_passed:.0%}'}, "
                    f"{'included' if q.included else 'excluded'}"
                ),
            }
        )
    ticks_a = [{"label": v, "at": round(left + (v + 1) / 2 * PANEL_W, 1)} for v in (-1, -0.5, 0, 0.5, 1)]
    ticks_c = [{"label": f"{v:.0%}", "at": round(right + v * PANEL_W, 1)} for v in (0, 0.25, 0.5, 0.75, 1)]
    return {
        "width": width,
        "height": height,
        "top": TOP,
        "bottom": bottom,
        "left": left,
        "right": right,
        "panel_w": PANEL_W,
        "points": points,
        "ticks_a": ticks_a,
        "ticks_c": ticks_c,
        "with_controls": with_controls,
        "tick_y": bottom + 14,
        "title_y": TOP - 12,
        "label_x": left - 8,
    }


def _p_text(p: float | None) -> str:
    if p is None:
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _settings_initial(campaign) -> dict:
    current = selectors.quality_settings_get(campaign=campaign)
    rules = selectors.rules_of(campaign=campaign).as_dict()
    return {
        "degraded_share": current.degraded_share,
        "repeat_share": current.repeat_share,
        "degrade_kinds": current.degrade_kinds,
        "degrade_strength": current.degrade_strength,
        "completion_codes": current.completion_codes,
        **rules,
    }


@login_required
@figures_on_workers
def quality_page(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = campaign_for_staff(user=request.user, pk=pk)
    quality = selectors.campaign_quality(campaign=campaign)
    annotators = {a.pk: a for a in Annotator.objects.filter(pk__in=quality)}
    rows = sorted(
        (
            {
                "annotator": annotators[pk],
                "name": annotators[pk].name,
                "figures": q.figures,
                "quality": q,
                "p": _p_text(q.figures.mann_whitney_p),
            }
            for pk, q in quality.items()
        ),
        key=lambda row: (row["quality"].included, row["name"]),
    )
    included = [pk for pk, q in quality.items() if q.included]
    _, filter_label = selectors.annotator_filter(campaign=campaign)
    context = {
        "campaign": campaign,
        "project": campaign.project,
        "rows": rows,
        "chart": _chart(rows),
        "rules": selectors.rules_of(campaign=campaign).describe(),
        "n_included": len(included),
        "agreement": [{"criterion": c, **v} for c, v in selectors.campaign_agreement(campaign=campaign).items()],
        "filter_label": filter_label,
        "settings_form": SettingsForm(initial=_settings_initial(campaign)),
        "gold_form": GoldForm(initial={"mode": "silent"}),
        "code_form": CodeForm(),
        "gold_units": selectors.gold_unit_list(campaign=campaign),
        "codes": selectors.completion_code_list(campaign=campaign)[:50],
        "n_codes": CompletionCode.objects.filter(campaign=campaign).count(),
        "verified": request.session.pop(f"quality-verified-{campaign.pk}", None),
    }
    return render(request, "quality/page.html", context)


def _back(campaign, anchor: str = "") -> HttpResponse:
    return redirect(reverse("campaign-quality", args=[campaign.pk]) + (f"#{anchor}" if anchor else ""))


def _say_errors(request, exc: ValidationError) -> None:
    for message in exc.messages if isinstance(exc, ValidationError) else [str(exc)]:
        messages.error(request, message)


@login_required
@require_POST
def quality_decide(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = campaign_for_staff(user=request.user, pk=pk)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "A decision needs a reason.")
        return _back(campaign, "annotators")
    annotator = get_object_or_404(Annotator, pk=form.cleaned_data["annotator"], project=campaign.project)
    included = {"exclude": False, "include": True, "rules": None}[form.cleaned_data["included"]]
    try:
        services.annotator_decide(
            campaign=campaign,
            annotator=annotator,
            included=included,
            reason=form.cleaned_data["reason"],
            user=request.user,
        )
    except ValidationError as exc:
        _say_errors(request, exc)
    else:
        what = {False: "excluded", True: "included", None: "left to the rules"}[included]
        messages.success(request, f"{annotator.name} {what}. No judgement was deleted.")
    return _back(campaign, "annotators")


@login_required
@require_POST
def quality_settings(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = campaign_for_staff(user=request.user, pk=pk)
    form = SettingsForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{form.fields[field].label if field in form.fields else field}: {error}")
        return _back(campaign, "settings")
    data = form.cleaned_data
    rules = {name: data[name] for name in SettingsForm.RULES}
    try:
        services.quality_settings_update(
            campaign=campaign,
            degraded_share=data["degraded_share"],
            repeat_share=data["repeat_share"],
            degrade_kinds=list(data["degrade_kinds"]),
            degrade_strength=data["degrade_strength"],
            completion_codes=data["completion_codes"],
            rules=rules,
        )
    except ValidationError as exc:
        _say_errors(request, exc)
    else:
        messages.success(request, "Settings saved. New controls follow them; figures use the new rules now.")
    return _back(campaign, "settings")


@login_required
@require_POST
def quality_gold(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = campaign_for_staff(user=request.user, pk=pk)
    upload = request.FILES.get("file")
    if upload is not None:
        if upload.size > 5_000_000:
            messages.error(request, "The file is larger than 5 MB.")
            return _back(campaign, "gold")
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            messages.error(request, "The file is not UTF-8 text.")
            return _back(campaign, "gold")
    else:
        form = GoldForm(request.POST)
        if not form.is_valid():
            for field, errors in form.errors.items():
                for error in errors:
                    messages.error(request, f"{field}: {error}")
            return _back(campaign, "gold")
        data = form.cleaned_data
        try:
            expected = strictjson.loads(data["expected"])
        except ValueError as exc:
            raise DomainError(f"The expected answer is not JSON: {exc}") from None
        text = json.dumps(
            {
                "item": data["item"],
                "systems": [s.strip() for s in data["systems"].split(",") if s.strip()],
                "expected": expected,
                "mode": data["mode"],
                "explanation": data["explanation"],
            }
        )
    # A bad line raises ImportFailed (a DomainError): a 400 page listing every problem (DomainErrorMiddleware).
    try:
        created = services.gold_units_import(campaign=campaign, text=text)
    except ValidationError as exc:
        _say_errors(request, exc)
    else:
        messages.success(request, f"{len(created)} gold unit{'s' if len(created) != 1 else ''} added.")
    return _back(campaign, "gold")


@login_required
@require_POST
def quality_verify_code(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = campaign_for_staff(user=request.user, pk=pk)
    form = CodeForm(request.POST)
    if form.is_valid():
        request.session[f"quality-verified-{campaign.pk}"] = services.completion_code_check(
            campaign=campaign, code=form.cleaned_data["code"]
        )
    return _back(campaign, "codes")


@login_required
def quality_codes_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Every completion code issued, with pass or fail, for the crowd platform."""
    campaign = campaign_for_staff(user=request.user, pk=pk)
    standing = selectors.campaign_quality(campaign=campaign)
    rows = []
    for row in selectors.completion_code_list(campaign=campaign):
        now = standing.get(row.annotator_id)
        rows.append(
            [
                row.annotator.name,
                row.batch + 1,
                row.code,
                "pass" if row.passed else "fail",
                "" if now is None else ("yes" if now.included else "no"),
                row.created_at.isoformat(),
            ]
        )
    return csv_response(
        f"completion-codes-{campaign.pk}", ["annotator", "batch", "code", "verdict", "included_now", "issued_at"], rows
    )


@annotator_required
def annotate_completion_code(request: HttpRequest, pk: int) -> HttpResponse:
    """An annotator's code at the end of a batch, with a button to go on (a join
    visitor goes back to the crowd platform instead: `join-done`)."""
    campaign = annotate_campaign_for(request, pk)
    if join_binding(request) is not None:
        return redirect("join-done")
    annotator = request_annotator(request, campaign)
    code = None if annotator is None else selectors.latest_completion_code(campaign=campaign, annotator=annotator)
    if code is None:
        return redirect("annotate-campaign", pk=campaign.pk)
    enrolment = core.enrolment_for(campaign=campaign, annotator=annotator)
    return render(
        request,
        "quality/batch_done.html",
        {
            "campaign": campaign,
            "code": code,
            "progress": core.annotator_progress(campaign=campaign, enrolment=enrolment),
        },
    )
