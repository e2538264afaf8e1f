"""Reopening a unit of the batch in progress: the unit page with the stored answers filled in,
and its JSON resubmission (`annotations.services.revisions.unit_revise`, origin "browser").

The page is the work page (`annotate/unit.html`) in its revising state: the same protocol
partial and script, the answers given as the draft the script restores, no autosave to the
server (the stored answers stay until the new ones are sent), and no skip button.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotations import protocols, selectors
from annotations.access import annotator_required
from annotations.models import Assignment, JudgementBase
from annotations.selectors.batches import annotator_batch, assignment_answers
from annotations.services.handles import handles_for, payload_for_annotator, unit_submission_translate
from annotations.services.revisions import LOCKED_MESSAGE, unit_revise
from annotations.timing import campaign_controls_check, unit_response_floor
from annotations.views.annotate import _errors, _json_body, _own_pending, unit_context


def _own(request: HttpRequest, pk: int) -> Assignment:
    """The requester's own assignment (404 otherwise): the work page's own lookup, whatever its status."""
    return _own_pending(request, pk)


def answers_draft(*, campaign, answers: list[dict], shown: list, handles: list, saved_at: int = 0) -> dict:
    """Stored answers as the draft `annotate.js` restores (`{v: 1, fields, touched}`, span protocols'
    `spans` and, per output, `spans_by_output`), each answer put in by its protocol (`draft_answer`).

    `shown` are the output ids in the order shown, `handles` the ids the page names those outputs
    by (the same position): field names and values use the page's ids, whatever they are.
    """
    protocol = protocols.of(campaign)
    index = {c: i for i, c in enumerate(campaign.criteria)}
    by_id = dict(zip(shown, handles))
    # saved_at = when the answers were last stored (ms): a half-done revision kept in this browser
    # since then wins over them, an older copy (the answers were revised elsewhere since) does not.
    draft = {"v": 1, "fields": {}, "touched": [], "spans": [], "elapsed_ms": 0, "saved_at": saved_at}
    for answer in answers:
        # A special answer and the comment go back in their own fields (annotate/_extras.html).
        if "comment" in answer:
            draft["fields"]["unit-text"] = answer["comment"]
            continue
        ci = index.get(answer.get("criterion"))
        if ci is not None and "special" in answer:
            draft["fields"][f"special-{ci}"] = answer["special"]
        elif ci is not None:
            protocol.draft_answer(answer, draft, index=ci, page_id=lambda output: by_id.get(output, output))
    if campaign.prefilled:
        # ESA^AI: every suggestion was decided when the unit was sent; those no span names were deleted.
        draft["suggestionsDecided"] = True
    return draft


@annotator_required
@unit_response_floor
def annotate_revise(request: HttpRequest, pk: int) -> HttpResponse:
    """A finished unit of the batch in progress, reopened with its answers (400 once the batch is complete)."""
    assignment = _own(request, pk)
    campaign, annotator = assignment.campaign, assignment.annotator
    if assignment.status == Assignment.Status.PENDING:  # the unit in progress: its own page
        return redirect("annotate-unit", pk=campaign.pk)
    batch = annotator_batch(campaign=campaign, annotator=annotator)
    if assignment.status != Assignment.Status.DONE or assignment.pk not in batch.revisable_ids:
        return render(request, "annotate/locked.html", {"campaign": campaign, "message": LOCKED_MESSAGE}, status=400)
    enrolment = selectors.enrolment_for(campaign=campaign, annotator=annotator)
    campaign_controls_check(campaign.pk)  # no lock taken here: ask whether answers are held to the floor
    # The page shows handles, never output or item ids (annotations.services.handles).
    payload = payload_for_annotator(selectors.assignment_payload(assignment=assignment, enrolment=enrolment))
    context = {
        "campaign": campaign,
        "assignment": assignment,
        "revising": True,
        "progress": selectors.annotator_progress(campaign=campaign, enrolment=enrolment),
        "batch": batch,
        "slots": batch.slots(current_id=assignment.pk),
    }
    context.update(unit_context(campaign=campaign, payload=payload))
    outputs = payload["item"]["outputs"]
    draft = answers_draft(
        campaign=campaign,
        answers=assignment_answers(assignment=assignment),
        shown=list(assignment.shown_order) or [o["id"] for o in outputs],
        handles=[o["id"] for o in outputs],
        saved_at=int(assignment.updated_at.timestamp() * 1000),
    )
    context["unit_config"].update(
        draft=draft, revising=True, draft_url=None, submit_url=reverse("annotate-revise-submit", args=[assignment.pk])
    )
    return render(request, "annotate/unit.html", context)


@annotator_required
@require_POST
@unit_response_floor
def annotate_revise_submit(request: HttpRequest, pk: int) -> JsonResponse:
    """The reopened unit's new answers (JSON, the body of a submission); back to the unit in progress."""
    assignment = _own(request, pk)
    try:
        body = _json_body(request)
        judgements, shown_order = unit_submission_translate(
            handles_for(assignment, allow_ids=False),
            judgements=body.get("judgements"),
            shown_order=body.get("shown_order"),
        )
        result = unit_revise(
            annotator=assignment.annotator,
            assignment_id=assignment.pk,
            campaign=assignment.campaign,
            judgements=judgements,
            shown_order=shown_order,
            origin=JudgementBase.Origin.BROWSER,
            listened_ms=body.get("listened_ms"),  # the audio player's count on the revision page
        )
    except ValidationError as exc:
        # RevisionLocked (a DomainError) goes to DomainErrorMiddleware: a 400 with `errors` too.
        return JsonResponse({"errors": _errors(exc)}, status=400)
    except Http404:
        return JsonResponse({"errors": ["This unit is not yours."]}, status=404)
    return JsonResponse(
        {
            "revised": True,
            "judgements": result.judgements,
            "next": reverse("annotate-unit", args=[assignment.campaign_id]),
        },
        status=200,
    )
