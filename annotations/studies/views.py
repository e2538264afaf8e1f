"""Join pages for crowd visitors, and the study-link section of the campaign page.

- `GET /join/<token>/?PROLIFIC_PID=..` shows the study's instructions and a
  Start / Continue button; it writes nothing (an MTurk preview stops here).
- `POST /join/<token>/` (the button, carrying the same parameters) gives the
  visitor their annotator identity, binds the session, hands out (or
  resumes) their unit and redirects to the unit page.
- `GET /join/done/` sends a visitor whose batch is done back to the platform
  with their completion code (Prolific and other URLs: a page showing the code
  that navigates to the completion URL at once; MTurk: a form posted to MTurk's
  externalSubmit).
"""

from __future__ import annotations

from datetime import timezone as dt_timezone

from csp.decorators import csp_replace, csp_update
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_http_methods, require_POST

from annotations import selectors as core
from annotations.access import campaign_for_staff, request_annotator
from annotations.models.studies import JoinLink, JoinParticipant
from annotations.quality.selectors import latest_completion_code
from annotations.studies import selectors
from annotations.studies.forms import JoinLinkForm
from annotations.studies.ratelimit import join_rate_exceeded
from annotations.studies.services import (
    MTURK_HOSTS,
    CapReached,
    join_link_create,
    join_link_revoke,
    join_participant_enter,
    visitor_from_params,
)
from annotations.studies.session import join_bind, join_binding, join_leave

MTURK_ORIGINS = [f"https://{host}" for host in MTURK_HOSTS]
PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "workerId", "assignmentId", "hitId", "turkSubmitTo", "annotator")


def _too_many(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "studies/message.html",
        {
            "title": "Too many requests",
            "message": "Too many requests from your network in the last minute. Wait a minute, then open the study "
            "link again.",
        },
        status=429,
    )


def _frameable_by_mturk(view):
    """MTurk shows an ExternalQuestion in a frame on its own pages: the join page (which
    writes nothing) may be framed there, and only there. Everything after it opens in a
    tab of its own (the page's link), where the session cookie is first-party."""
    view = xframe_options_exempt(view)
    return csp_replace({"frame-ancestors": MTURK_ORIGINS})(view)


def _link_closed(request: HttpRequest) -> HttpResponse:
    """Unknown, revoked and expired links look alike (which one is not told), with a message for the
    participant rather than the staff pages' 404 (or, in debug mode, Django's list of URL patterns)."""
    return render(
        request,
        "studies/message.html",
        {
            "title": "This study link is not open",
            "message": "The link may have expired or been closed by the researchers, or it was copied incompletely. "
            "Please return to the study on your platform, or contact the researchers there.",
        },
        status=404,
    )


@_frameable_by_mturk
@require_http_methods(["GET", "HEAD", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    if join_rate_exceeded(request):
        return _too_many(request)
    link = selectors.join_link_active(token=token)
    if link is None:
        return _link_closed(request)
    campaign = link.campaign
    params = request.POST if request.method == "POST" else request.GET
    context = {"link": link, "campaign": campaign, "params": [(k, params[k]) for k in PARAMS if params.get(k)]}
    try:
        visitor = visitor_from_params(params)
    except ValidationError as exc:
        context["error"] = " ".join(exc.messages)
        return render(request, "studies/join.html", context, status=400)
    context["visitor"] = visitor
    if visitor.preview or not visitor.platform_id:
        # MTurk's preview, or no participant id: the instructions (and a form asking for the id), nothing taken.
        return render(request, "studies/join.html", context, status=200 if request.method != "POST" else 400)
    # On Start, a returning participant matters only to the one-per-browser guard and the cap
    # (join_participant_enter finds them again under its lock): a link without either skips the read.
    guarded = link.one_per_browser or link.max_annotators is not None
    returning = (
        selectors.participant_of(
            campaign=campaign,
            platform=visitor.platform,
            platform_id=visitor.platform_id,
            any_platform=link.one_per_browser,
        )
        if request.method != "POST" or guarded
        else None
    )
    if link.one_per_browser and _browser_is_another_participant(request, campaign, returning):
        return render(
            request,
            "studies/message.html",
            {
                "title": "This browser already takes part",
                "message": "This browser already takes part in this study as another participant, and the study "
                "allows one participant per browser. Continue with the participant id you started with.",
            },
            status=403,
        )
    if returning is None and selectors.join_link_is_full(link=link):
        return render(
            request,
            "studies/message.html",
            {
                "title": "This study is full",
                "message": "Every place in this study has been taken. Thank you for your interest: please return the "
                "study on your platform.",
            },
            status=403,
        )
    if request.method != "POST":
        context["returning"] = returning is not None
        # In MTurk's frame a session cookie would be a third-party one: open the study in a tab instead.
        context["framed"] = request.headers.get("Sec-Fetch-Dest") == "iframe"
        return render(request, "studies/join.html", context)
    try:
        participant = join_participant_enter(link=link, visitor=visitor)
    except CapReached:
        return render(
            request,
            "studies/message.html",
            {
                "title": "This study is full",
                "message": "Every place in this study has been taken. Thank you for your interest: please return the "
                "study on your platform.",
            },
            status=403,
        )
    join_bind(request, participant=participant, link_id=link.pk)
    # Hand out (or resume) the unit: the same POST the landing page's Start button sends.
    from annotations.views.annotate import annotate_campaign  # lazy: cycle with annotations.views.annotate

    request.method = "POST"
    return annotate_campaign(request, pk=campaign.pk)


def _browser_is_another_participant(request: HttpRequest, campaign, returning) -> bool:
    """The browser's session is bound to a participant of this campaign other than the visitor's."""
    binding = join_binding(request)
    if binding is None or binding["campaign"] != campaign.pk:
        return False
    return returning is None or returning.pk != binding["participant"]


@csp_update({"form-action": MTURK_ORIGINS})  # the MTurk completion form posts to MTurk
def join_done(request: HttpRequest) -> HttpResponse:
    """The end of a join visitor's batch: back to the platform with the completion code."""
    binding = join_binding(request)
    if binding is None:
        raise Http404()
    participant = (
        JoinParticipant.objects.select_related("link", "campaign__dataset__project")
        .filter(pk=binding["participant"])
        .first()
    )
    if participant is None:
        raise Http404()
    campaign, link = participant.campaign, participant.link
    annotator = request_annotator(request, campaign)  # 404 once the link is revoked
    enrolment = core.enrolment_for(campaign=campaign, annotator=annotator)
    code = latest_completion_code(campaign=campaign, annotator=annotator)
    if not selectors.join_visit_finished(campaign=campaign, annotator=annotator, enrolment=enrolment, code=code):
        return redirect("annotate-campaign", pk=campaign.pk)
    value = selectors.completion_value(link=link, code=code)
    if link.completion_url and participant.platform == JoinParticipant.Platform.MTURK and participant.submit_to:
        return render(
            request,
            "studies/mturk_submit.html",
            {
                "action": f"{participant.submit_to}/mturk/externalSubmit",
                "assignment_id": participant.session_id,
                "code": value,
                "campaign": campaign,
            },
        )
    if link.completion_url:
        # A page of our own that then navigates, not a redirect: this answer often ends a form POST's
        # redirect chain (Continue on the join page, the unit page's POST once the campaign has
        # stopped), and CSP `form-action 'self'` blocks such a chain from leaving the site. A
        # navigation the page starts itself (studies.js, or the link) is no form submission, so the
        # policy stays as strict, and the code and link are on screen should the navigation fail.
        return render(
            request,
            "studies/done.html",
            {
                "campaign": campaign,
                "code": code,
                "value": value,
                "completion_url": selectors.completion_redirect_url(link=link, code=value),
            },
        )
    return render(request, "studies/done.html", {"campaign": campaign, "code": code})


@require_POST
def join_leave_view(request: HttpRequest) -> HttpResponse:
    """End the join session in this browser (a researcher who tried their own link)."""
    join_leave(request)
    return redirect("login")


# --- researchers: the campaign page's "Study links" section ----------------------------------


def link_url(request: HttpRequest, link: JoinLink) -> str:
    return request.build_absolute_uri(reverse("join", args=[link.token]))


@login_required
@require_POST
def join_link_new(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = campaign_for_staff(user=request.user, pk=pk)
    form = JoinLinkForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{form.fields[field].label if field in form.fields else field}: {error}")
        return redirect(reverse("campaign-detail", args=[campaign.pk]) + "#study-links")
    data = form.cleaned_data
    expires = data["expires_at"]
    if expires is not None and timezone.is_naive(expires):
        expires = expires.replace(tzinfo=dt_timezone.utc)
    try:
        link = join_link_create(
            campaign=campaign,
            user=request.user,
            completion_url=data["completion_url"],
            max_annotators=data["max_annotators"],
            expires_at=expires,
            pass_code=data["pass_code"],
            fail_code=data["fail_code"],
            one_per_browser=data["one_per_browser"],
        )
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, f"Study link created: {link_url(request, link)}")
    return redirect(reverse("campaign-detail", args=[campaign.pk]) + "#study-links")


@login_required
@require_POST
def join_link_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    link = get_object_or_404(JoinLink.objects.select_related("campaign__dataset__project"), pk=pk)
    campaign = campaign_for_staff(user=request.user, pk=link.campaign_id)
    join_link_revoke(link=link)
    messages.success(request, "Study link revoked: it answers 404 from now on.")
    return redirect(reverse("campaign-detail", args=[campaign.pk]) + "#study-links")


def join_links_context(request: HttpRequest, campaign) -> dict:
    """What the campaign page's "Study links" section shows."""
    rows = [
        {"link": link, "url": link_url(request, link), "state": selectors.join_link_state(link)}
        for link in selectors.join_link_list(campaign=campaign)
    ]
    return {"join_links": rows, "join_link_form": JoinLinkForm()}
