"""The background questions page (issue 41 part 4): asked once, before an annotator's first unit,
to accounts and join-link visitors alike. A POST stores the answers
(annotations.services.background) and returns to the landing page, whose Start hands out the
first unit."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotations.access import annotate_campaign_for, annotator_required, request_annotator
from annotations.protocols.common_options import BACKGROUND_TEXT_MAX
from annotations.selectors.background import background_answered, background_questions
from annotations.services.background import background_answers_save


def background_pending(request: HttpRequest, campaign) -> bool:
    """Whether the campaign asks questions this visitor has not answered yet. No query for a
    campaign without questions (the hot path of every other campaign)."""
    if not background_questions(campaign):
        return False
    return not background_answered(campaign=campaign, annotator=request_annotator(request, campaign))


@annotator_required
@require_http_methods(["GET", "HEAD", "POST"])
def annotate_background(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = annotate_campaign_for(request, pk)
    questions = background_questions(campaign)
    if not questions or not background_pending(request, campaign):
        return redirect("annotate-campaign", pk=campaign.pk)
    errors, given = [], {}
    if request.method == "POST":
        given = {q["name"]: request.POST.get(q["name"], "") for q in questions}
        try:
            background_answers_save(
                campaign=campaign, annotator=request_annotator(request, campaign, create=True), data=given
            )
        except ValidationError as exc:
            errors = exc.messages
        else:
            # Back to the landing page, whose Start now hands out the first unit.
            return redirect("annotate-campaign", pk=campaign.pk)
    shown = [{**q, "value": given.get(q["name"])} for q in questions]
    return render(
        request,
        "annotate/background.html",
        {"campaign": campaign, "questions": shown, "errors": errors, "max_text": BACKGROUND_TEXT_MAX},
        status=400 if errors else 200,
    )
