"""Including and excluding annotators by hand, and the completion codes of their batches."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations import rows
from annotations.models import Annotator, Assignment, Campaign, Enrolment
from annotations.models.quality import AnnotatorDecision, CompletionCode, QualitySettings
from annotations.quality import codes
from annotations.quality.selectors import annotator_quality

# --- decisions ----------------------------------------------------------------------------------


@transaction.atomic
def annotator_decide(
    *, campaign: Campaign, annotator: Annotator, included: bool | None, reason: str, user=None
) -> AnnotatorDecision:
    """Include or exclude an annotator by hand (None: back to the rules), with a reason.

    Never deletes or changes a judgement; analysis and export filter by it.
    """
    if annotator.project_id != campaign.dataset.project_id:
        raise ValidationError({"annotator": "The annotator does not belong to this campaign's project."})
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why: the reason is kept with the decision."})
    if len(reason) > 2000:
        raise ValidationError({"reason": "Keep the reason under 2,000 characters."})
    decision = AnnotatorDecision(
        campaign=campaign,
        annotator=annotator,
        included=included,
        reason=reason,
        decided_by=user if getattr(user, "is_authenticated", False) else None,
    )
    decision.full_clean(exclude=["campaign", "annotator", "decided_by"])
    decision.save()
    return decision


# --- completion codes ------------------------------------------------------------------------------


def _code_key() -> str:
    return f"completion-codes:{django_settings.SECRET_KEY}"


@transaction.atomic
def completion_code_issue(*, campaign: Campaign, annotator: Annotator, batch: int) -> CompletionCode:
    """The code for the end of `batch` (issued once; the same code on every later request).

    Pass or fail follows the annotator's standing when the batch ends: the
    rules on the figures so far, or a decision taken by hand.
    """
    existing = CompletionCode.objects.filter(campaign=campaign, annotator=annotator, batch=batch).first()
    if existing is not None:
        return existing

    standing = annotator_quality(campaign=campaign, annotator_id=annotator.pk)
    passed = True if standing is None else standing.included
    reasons = [] if standing is None else list(standing.rule_verdict.reasons)
    code = codes.completion_code(
        key=_code_key(), campaign=campaign.pk, annotator=annotator.pk, batch=batch, passed=passed
    )
    CompletionCode.objects.bulk_create(
        [
            CompletionCode(
                campaign=campaign, annotator=annotator, batch=batch, code=code, passed=passed, reasons=reasons
            )
        ],
        ignore_conflicts=True,
    )
    return CompletionCode.objects.get(campaign=campaign, annotator=annotator, batch=batch)


def completion_code_at_batch_end(
    *, campaign: Campaign, annotator: Annotator, finished: bool = False
) -> CompletionCode | None:
    """The code to show now: when the annotator has just finished a batch, or
    (`finished`) has nothing left to do after part of one. None when the
    campaign gives no codes or the annotator is mid-batch."""

    with rows.cursor() as cursor:  # on every submit: a prepared statement, no query building
        cursor.execute(
            f"SELECT completion_codes FROM {rows.table(QualitySettings)} WHERE campaign_id = %s LIMIT 1", [campaign.pk]
        )
        found = cursor.fetchone()
    if found is None or not found[0]:
        return None
    enrolment = Enrolment.objects.filter(campaign=campaign, annotator=annotator).first()
    if enrolment is None:
        return None
    done = Assignment.objects.filter(campaign=campaign, annotator=annotator, status=Assignment.Status.DONE).count()
    size = max(1, campaign.units_per_batch)
    if done and done % size == 0:
        return completion_code_issue(campaign=campaign, annotator=annotator, batch=done // size - 1)
    if finished and done:
        return completion_code_issue(campaign=campaign, annotator=annotator, batch=done // size)
    return None


def completion_code_check(*, campaign: Campaign, code: str) -> dict:
    """What a pasted code is: whose, which batch, pass or fail, and whether it is genuine."""
    normal = codes.normalise(code)
    found = CompletionCode.objects.filter(campaign=campaign, code=normal).select_related("annotator").first()
    if found is None:
        return {"code": normal, "valid": False, "verdict": None, "annotator": None, "batch": None}
    verdict = codes.code_verdict(
        key=_code_key(), code=normal, campaign=campaign.pk, annotator=found.annotator_id, batch=found.batch
    )
    return {
        "code": normal,
        "valid": verdict == codes.PASS,
        "verdict": verdict,
        "annotator": found.annotator.name,
        "batch": found.batch,
    }
