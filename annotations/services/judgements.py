"""Single judgements, as submitted from the browser or the REST API.

Every service validates against the campaign (protocol, criterion, scale),
checks that the outputs belong to the campaign's dataset and to one item, and
lets the database's unique constraints arbitrate between concurrent
submissions: the loser gets `DuplicateJudgement` (HTTP 400), never a second
row or a 500.

The pure `*_check` helpers are shared with the bulk importer
(`annotations.services.imports`) so both paths accept exactly the same values.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotations.models import (
    Annotator,
    Assignment,
    BestWorstJudgement,
    Campaign,
    ErrorSpan,
    JudgementBase,
    Output,
    PairwiseJudgement,
    RatingJudgement,
    SpanJudgement,
)
from workbench.exceptions import DomainError

UNIQUE_CONSTRAINTS = {
    "rating_one_per_annotator_unit",
    "pairwise_one_per_annotator_unit",
    "bws_one_per_annotator_unit",
    "span_one_per_annotator_unit",
}
DEFAULT_SEVERITIES = ("minor", "major")
MAX_SPANS = 200


class DuplicateJudgement(DomainError):
    """The annotator already judged this unit for this criterion."""


# --- checks shared with the importer (raise ValidationError with one message) ---


def protocol_check(*, campaign: Campaign, expected: Sequence[str]) -> None:
    if campaign.protocol not in expected:
        raise ValidationError(
            f"campaign {campaign.name!r} uses the {campaign.protocol} protocol; "
            f"this judgement needs {' or '.join(expected)}"
        )


def criterion_check(*, campaign: Campaign, criterion) -> str:
    if not isinstance(criterion, str) or criterion not in campaign.criteria:
        raise ValidationError(
            f"unknown criterion {criterion!r}; campaign {campaign.name!r} has {', '.join(campaign.criteria)}"
        )
    return criterion


def score_check(*, campaign: Campaign, score, criterion: str | None = None) -> float:
    """A finite number inside the criterion's scale (the campaign's when no
    criterion is given); unbounded RankME magnitudes must be > 0."""
    # Numbers only: HTML-form strings are converted by the caller's serializer.
    if isinstance(score, bool) or not isinstance(score, (int, float, Decimal)):
        raise ValidationError(f"score must be a number, got {score!r}")
    score = float(score)
    if not math.isfinite(score):
        raise ValidationError("score must be a finite number")
    low, high = campaign.criterion_scale(criterion) if criterion else (campaign.scale_min, campaign.scale_max)
    if (low is not None and score < low) or (high is not None and score > high):
        scale = f"{'-inf' if low is None else f'{low:g}'} to {'inf' if high is None else f'{high:g}'}"
        raise ValidationError(f"score {score:g} is outside the scale {scale}")
    if campaign.protocol == Campaign.Protocol.RANKME and low is None and score <= 0:
        raise ValidationError(f"RankME magnitudes must be above 0, got {score:g}")
    return score


def rank_check(rank) -> int | None:
    if rank is None:
        return None
    if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= 32767:
        raise ValidationError(f"rank must be a whole number from 1, got {rank!r}")
    return rank


def time_spent_check(time_spent_ms) -> int | None:
    if time_spent_ms is None:
        return None
    if isinstance(time_spent_ms, bool) or not isinstance(time_spent_ms, int) or not 0 <= time_spent_ms < 2**31:
        raise ValidationError(f"time_spent_ms must be a whole number of milliseconds >= 0, got {time_spent_ms!r}")
    return time_spent_ms


def winner_check(winner) -> str:
    if winner not in PairwiseJudgement.Winner.values:
        raise ValidationError(f"winner must be 'a', 'b' or 'tie', got {winner!r}")
    return winner


def pairwise_canonical(*, a_id: int, b_id: int, winner: str) -> tuple[int, int, str]:
    """Order the pair by output id (the stored form) and flip the winner with it."""
    if a_id < b_id:
        return a_id, b_id, winner
    flipped = {"a": "b", "b": "a", "tie": "tie"}[winner]
    return b_id, a_id, flipped


def tuple_key(output_ids: Sequence[int]) -> str:
    return "-".join(str(i) for i in sorted(output_ids))


def severities_of(campaign: Campaign) -> list[str]:
    return list(campaign.severities or DEFAULT_SEVERITIES)


def spans_check(*, campaign: Campaign, spans, text: str) -> list[dict]:
    """ESA error spans: `[{"start", "end", "severity"} | {"missing": true, "severity"}]`.

    Offsets count Unicode code points of the output text, end exclusive.
    Returns cleaned dicts; raises ValidationError with one message.
    """
    if spans is None:
        return []
    if not isinstance(spans, list):
        raise ValidationError("spans must be a list")
    if len(spans) > MAX_SPANS:
        raise ValidationError(f"at most {MAX_SPANS} spans per judgement")
    allowed = severities_of(campaign)
    cleaned = []
    for index, span in enumerate(spans, start=1):
        if not isinstance(span, dict):
            raise ValidationError(f"span {index} must be an object")
        unknown = set(span) - {"start", "end", "severity", "missing"}
        if unknown:
            raise ValidationError(f"span {index} has unknown keys: {', '.join(sorted(unknown))}")
        severity = span.get("severity")
        if severity not in allowed:
            raise ValidationError(f"span {index}: severity must be one of {', '.join(allowed)}, got {severity!r}")
        missing = span.get("missing", False)
        if not isinstance(missing, bool):
            raise ValidationError(f"span {index}: missing must be true or false")
        if missing:
            if span.get("start") is not None or span.get("end") is not None:
                raise ValidationError(f"span {index}: a missing-content marker has no start or end")
            cleaned.append({"start": None, "end": None, "severity": severity, "missing": True})
            continue
        start, end = span.get("start"), span.get("end")
        for name, value in (("start", start), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValidationError(f"span {index}: {name} must be a whole number")
        if not 0 <= start < end <= len(text):
            raise ValidationError(
                f"span {index}: need 0 <= start < end <= {len(text)} (the output's length), got {start}-{end}"
            )
        cleaned.append({"start": start, "end": end, "severity": severity, "missing": False})
    return cleaned


def ranks_of(scores: Sequence[float]) -> list[int]:
    """Competition ranks, higher score first, ties share a rank: [100, 75, 100] -> [1, 3, 1]."""
    return [1 + sum(1 for other in scores if other > score) for score in scores]


# --- helpers for the single-judgement services ---


def _annotator_check(*, campaign: Campaign, annotator: Annotator) -> None:
    if annotator.project_id != campaign.dataset.project_id:
        raise ValidationError({"annotator": "The annotator does not belong to this campaign's project."})


def _outputs_check(*, campaign: Campaign, outputs: Sequence[Output]) -> int:
    """All outputs from the campaign's dataset and one item; returns the item id."""
    item_ids = {o.item_id for o in outputs}
    if len(item_ids) != 1:
        raise ValidationError({"output": "The outputs judged together must belong to the same item."})
    item_id = item_ids.pop()
    dataset_id = outputs[0].item.dataset_id
    if dataset_id != campaign.dataset_id:
        raise ValidationError({"output": "The output does not belong to this campaign's dataset."})
    return item_id


def _shown_order_check(*, shown_order, item_id: int, required: Sequence[int]) -> list[int]:
    if shown_order is None:
        return list(required)
    if not isinstance(shown_order, (list, tuple)) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in shown_order
    ):
        raise ValidationError({"shown_order": "shown_order must be a list of output ids."})
    shown = list(shown_order)
    if len(set(shown)) != len(shown):
        raise ValidationError({"shown_order": "shown_order lists an output twice."})
    if not set(required) <= set(shown):
        raise ValidationError({"shown_order": "shown_order must include the judged outputs."})
    extra = set(shown) - set(required)
    if extra and Output.objects.filter(id__in=extra, item_id=item_id).count() != len(extra):
        raise ValidationError({"shown_order": "shown_order lists outputs of another item."})
    return shown


def _check_field(fn, field: str, *args, **kwargs):
    """Run a shared check and key its message by the input field, for API clients."""
    try:
        return fn(*args, **kwargs)
    except ValidationError as exc:
        raise ValidationError({field: exc.messages}) from None


def _save(judgement: JudgementBase, unique_name: str) -> JudgementBase:
    """Insert in a savepoint; the unique constraint decides concurrent duplicates."""
    try:
        with transaction.atomic():
            judgement.save()
    except IntegrityError as exc:
        message = str(exc)
        if unique_name in message or "UNIQUE constraint failed" in message:
            raise DuplicateJudgement(
                "This annotator has already judged this unit for this criterion in this campaign."
            ) from None
        raise ValidationError(f"The database refused the judgement: {message.splitlines()[0]}") from None
    return judgement


# --- services ---


@transaction.atomic
def rating_judgement_create(
    *,
    campaign: Campaign,
    annotator: Annotator,
    output: Output,
    criterion: str,
    score: float,
    rank: int | None = None,
    time_spent_ms: int | None = None,
    shown_order: Sequence[int] | None = None,
    origin: str = JudgementBase.Origin.BROWSER,
    assignment: Assignment | None = None,
    status: str = JudgementBase.Status.COMPLETE,
) -> RatingJudgement:
    """One Likert / direct-assessment score or RankME magnitude for one output."""
    _check_field(protocol_check, "campaign", campaign=campaign, expected=Campaign.RATING_PROTOCOLS)
    criterion = _check_field(criterion_check, "criterion", campaign=campaign, criterion=criterion)
    score = _check_field(score_check, "score", campaign=campaign, score=score, criterion=criterion)
    rank = _check_field(rank_check, "rank", rank)
    time_spent_ms = _check_field(time_spent_check, "time_spent_ms", time_spent_ms)
    _annotator_check(campaign=campaign, annotator=annotator)
    item_id = _outputs_check(campaign=campaign, outputs=[output])
    shown = _shown_order_check(shown_order=shown_order, item_id=item_id, required=[output.id])

    judgement = RatingJudgement(
        campaign=campaign,
        annotator=annotator,
        item_id=item_id,
        output=output,
        criterion=criterion,
        score=score,
        rank=rank,
        # Copied so the database's check constraints refuse out-of-scale scores too.
        scale_min=campaign.criterion_scale(criterion)[0],
        scale_max=campaign.criterion_scale(criterion)[1],
        time_spent_ms=time_spent_ms,
        shown_order=shown,
        origin=origin,
        assignment=assignment,
        status=status,
    )
    # Uniqueness is left to the database (see _save): a pre-check would race.
    judgement.full_clean(exclude=["item", "output", "campaign", "annotator", "assignment"], validate_unique=False,
                         validate_constraints=False)
    return _save(judgement, "rating_one_per_annotator_unit")


@transaction.atomic
def pairwise_judgement_create(
    *,
    campaign: Campaign,
    annotator: Annotator,
    output_a: Output,
    output_b: Output,
    criterion: str,
    winner: str,
    time_spent_ms: int | None = None,
    shown_order: Sequence[int] | None = None,
    origin: str = JudgementBase.Origin.BROWSER,
    assignment: Assignment | None = None,
    status: str = JudgementBase.Status.COMPLETE,
) -> PairwiseJudgement:
    """A side-by-side preference; `output_a` is the output shown first (left).

    Stored canonically with output_a.id < output_b.id, the winner flipped to
    match; the order actually shown is kept in `shown_order`.
    """
    _check_field(protocol_check, "campaign", campaign=campaign, expected=[Campaign.Protocol.PAIRWISE])
    criterion = _check_field(criterion_check, "criterion", campaign=campaign, criterion=criterion)
    winner = _check_field(winner_check, "winner", winner)
    time_spent_ms = _check_field(time_spent_check, "time_spent_ms", time_spent_ms)
    if output_a.id == output_b.id:
        raise ValidationError({"output_b": "A pairwise judgement compares two different outputs."})
    _annotator_check(campaign=campaign, annotator=annotator)
    item_id = _outputs_check(campaign=campaign, outputs=[output_a, output_b])
    shown = _shown_order_check(shown_order=shown_order, item_id=item_id, required=[output_a.id, output_b.id])
    a_id, b_id, stored_winner = pairwise_canonical(a_id=output_a.id, b_id=output_b.id, winner=winner)

    judgement = PairwiseJudgement(
        campaign=campaign,
        annotator=annotator,
        item_id=item_id,
        output_a_id=a_id,
        output_b_id=b_id,
        winner=stored_winner,
        criterion=criterion,
        time_spent_ms=time_spent_ms,
        shown_order=shown,
        origin=origin,
        assignment=assignment,
        status=status,
    )
    judgement.full_clean(exclude=["item", "output_a", "output_b", "campaign", "annotator", "assignment"],
                         validate_unique=False, validate_constraints=False)
    return _save(judgement, "pairwise_one_per_annotator_unit")


@transaction.atomic
def bestworst_judgement_create(
    *,
    campaign: Campaign,
    annotator: Annotator,
    outputs: Sequence[Output],
    best: Output,
    worst: Output,
    criterion: str,
    time_spent_ms: int | None = None,
    shown_order: Sequence[int] | None = None,
    origin: str = JudgementBase.Origin.BROWSER,
    assignment: Assignment | None = None,
    status: str = JudgementBase.Status.COMPLETE,
) -> BestWorstJudgement:
    """Best and worst of a tuple of outputs of one item, `outputs` in shown order."""
    _check_field(protocol_check, "campaign", campaign=campaign, expected=[Campaign.Protocol.BWS])
    criterion = _check_field(criterion_check, "criterion", campaign=campaign, criterion=criterion)
    time_spent_ms = _check_field(time_spent_check, "time_spent_ms", time_spent_ms)
    outputs = list(outputs)
    ids = [o.id for o in outputs]
    if len(ids) < 2:
        raise ValidationError({"outputs": "A best-worst tuple holds at least 2 outputs."})
    if len(set(ids)) != len(ids):
        raise ValidationError({"outputs": "The tuple lists an output twice."})
    if best.id not in ids or worst.id not in ids:
        raise ValidationError({"best": "Best and worst must be outputs of the tuple."})
    if best.id == worst.id:
        raise ValidationError({"worst": "Best and worst must be different outputs."})
    _annotator_check(campaign=campaign, annotator=annotator)
    item_id = _outputs_check(campaign=campaign, outputs=outputs)
    shown = _shown_order_check(shown_order=shown_order, item_id=item_id, required=ids)
    key = tuple_key(ids)
    if len(key) > BestWorstJudgement._meta.get_field("tuple_key").max_length:
        raise ValidationError({"outputs": "Too many outputs in one tuple."})

    judgement = BestWorstJudgement(
        campaign=campaign,
        annotator=annotator,
        item_id=item_id,
        outputs=sorted(ids),
        tuple_key=key,
        best=best,
        worst=worst,
        criterion=criterion,
        time_spent_ms=time_spent_ms,
        shown_order=shown,
        origin=origin,
        assignment=assignment,
        status=status,
    )
    judgement.full_clean(exclude=["item", "best", "worst", "campaign", "annotator", "assignment"],
                         validate_unique=False, validate_constraints=False)
    return _save(judgement, "bws_one_per_annotator_unit")


@transaction.atomic
def span_judgement_create(
    *,
    campaign: Campaign,
    annotator: Annotator,
    output: Output,
    criterion: str,
    score: float,
    spans: Sequence[dict] | None = None,
    time_spent_ms: int | None = None,
    shown_order: Sequence[int] | None = None,
    origin: str = JudgementBase.Origin.BROWSER,
    assignment: Assignment | None = None,
    status: str = JudgementBase.Status.COMPLETE,
) -> SpanJudgement:
    """An ESA judgement: error spans in one output (character offsets), then a score."""
    _check_field(protocol_check, "campaign", campaign=campaign, expected=[Campaign.Protocol.ESA])
    criterion = _check_field(criterion_check, "criterion", campaign=campaign, criterion=criterion)
    score = _check_field(score_check, "score", campaign=campaign, score=score, criterion=criterion)
    time_spent_ms = _check_field(time_spent_check, "time_spent_ms", time_spent_ms)
    cleaned = _check_field(spans_check, "spans", campaign=campaign, spans=list(spans or []), text=output.text)
    _annotator_check(campaign=campaign, annotator=annotator)
    item_id = _outputs_check(campaign=campaign, outputs=[output])
    shown = _shown_order_check(shown_order=shown_order, item_id=item_id, required=[output.id])
    low, high = campaign.criterion_scale(criterion)
    judgement = SpanJudgement(
        campaign=campaign, annotator=annotator, item_id=item_id, output=output, criterion=criterion, score=score,
        scale_min=low, scale_max=high, time_spent_ms=time_spent_ms, shown_order=shown, origin=origin,
        assignment=assignment, status=status,
    )
    _save(judgement, "span_one_per_annotator_unit")
    ErrorSpan.objects.bulk_create([ErrorSpan(judgement=judgement, **span) for span in cleaned])
    return judgement
