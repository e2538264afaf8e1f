"""Single judgements, as submitted from the browser or the REST API.

Every service validates against the campaign (protocol, criterion, scale),
checks that the outputs belong to the campaign's dataset and to one item, and
lets the database's unique constraints arbitrate between concurrent
submissions: the loser gets `DuplicateJudgement` (HTTP 400), never a second
row or a 500.

The rules of an answer (criterion, score on the scale, winner, best and
worst, spans) are the protocol's (`annotations.protocols`, `check_answer`),
shared with the page submit, the importer, gold units and quality control, so
every path accepts exactly the same values with the same messages.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from annotations.protocols import registry as protocols
from annotations.protocols.base import Protocol
from annotations.protocols.errors import AnswerError
from annotations.protocols.pairwise import pairwise_canonical  # noqa: F401 (also the callers' name for it)
from workbench.exceptions import DomainError

UNIQUE_CONSTRAINTS = {
    "rating_one_per_annotator_unit",
    "pairwise_one_per_annotator_unit",
    "bws_one_per_annotator_unit",
    "span_one_per_annotator_unit",
}


class DuplicateJudgement(DomainError):
    """The annotator already judged this unit for this criterion."""


# --- checks of the parts that are no answer rule (the answer's rules: annotations.protocols) ---


def protocol_check(*, campaign: Campaign, model) -> Protocol:
    """The campaign's protocol, if its judgements are stored as `model` (the endpoint's kind)."""
    protocol = protocols.of(campaign)
    if protocol.model is not model:
        expected = [p.name for p in protocols.protocols().values() if p.model is model]
        raise ValidationError(
            f"campaign {campaign.name!r} uses the {campaign.protocol} protocol; "
            f"this judgement needs {' or '.join(expected)}"
        )
    return protocol


def time_spent_check(time_spent_ms) -> int | None:
    if time_spent_ms is None:
        return None
    if isinstance(time_spent_ms, bool) or not isinstance(time_spent_ms, int) or not 0 <= time_spent_ms < 2**31:
        raise ValidationError(f"time_spent_ms must be a whole number of milliseconds >= 0, got {time_spent_ms!r}")
    return time_spent_ms


def tuple_key(output_ids: Sequence[int]) -> str:
    return "-".join(str(i) for i in sorted(output_ids))


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


def _answer_check(
    protocol: Protocol, answer: dict, *, campaign: Campaign, criterion, texts: dict[int, str] | None = None
) -> dict:
    """The protocol's checks of the answer, the message keyed by the answer's field at fault."""
    try:
        return protocol.check_answer(answer, campaign=campaign, criterion=criterion, texts=texts)
    except AnswerError as exc:
        raise ValidationError({exc.field or "answer": exc.messages}) from None


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
    protocol = _check_field(protocol_check, "campaign", campaign=campaign, model=RatingJudgement)
    answer = _answer_check(protocol, {"score": score, "rank": rank}, campaign=campaign, criterion=criterion)
    criterion, score, rank = answer["criterion"], answer["score"], answer.get("rank")
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
    judgement.full_clean(
        exclude=["item", "output", "campaign", "annotator", "assignment"],
        validate_unique=False,
        validate_constraints=False,
    )
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
    protocol = _check_field(protocol_check, "campaign", campaign=campaign, model=PairwiseJudgement)
    answer = _answer_check(
        protocol, {"winner": winner, "a": output_a.id, "b": output_b.id}, campaign=campaign, criterion=criterion
    )
    criterion, winner = answer["criterion"], answer["winner"]
    time_spent_ms = _check_field(time_spent_check, "time_spent_ms", time_spent_ms)
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
    judgement.full_clean(
        exclude=["item", "output_a", "output_b", "campaign", "annotator", "assignment"],
        validate_unique=False,
        validate_constraints=False,
    )
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
    protocol = _check_field(protocol_check, "campaign", campaign=campaign, model=BestWorstJudgement)
    outputs = list(outputs)
    ids = [o.id for o in outputs]
    criterion = _answer_check(
        protocol, {"outputs": ids, "best": best.id, "worst": worst.id}, campaign=campaign, criterion=criterion
    )["criterion"]
    time_spent_ms = _check_field(time_spent_check, "time_spent_ms", time_spent_ms)
    _annotator_check(campaign=campaign, annotator=annotator)
    item_id = _outputs_check(campaign=campaign, outputs=outputs)
    shown = _shown_order_check(shown_order=shown_order, item_id=item_id, required=ids)
    key = tuple_key(ids)

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
    judgement.full_clean(
        exclude=["item", "best", "worst", "campaign", "annotator", "assignment"],
        validate_unique=False,
        validate_constraints=False,
    )
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
    protocol = _check_field(protocol_check, "campaign", campaign=campaign, model=SpanJudgement)
    answer = _answer_check(
        protocol,
        {"output": output.id, "score": score, "spans": list(spans or [])},
        campaign=campaign,
        criterion=criterion,
        texts={output.id: output.text},
    )
    criterion, score, cleaned = answer["criterion"], answer["score"], answer["spans"]
    time_spent_ms = _check_field(time_spent_check, "time_spent_ms", time_spent_ms)
    _annotator_check(campaign=campaign, annotator=annotator)
    item_id = _outputs_check(campaign=campaign, outputs=[output])
    shown = _shown_order_check(shown_order=shown_order, item_id=item_id, required=[output.id])
    low, high = campaign.criterion_scale(criterion)
    judgement = SpanJudgement(
        campaign=campaign,
        annotator=annotator,
        item_id=item_id,
        output=output,
        criterion=criterion,
        score=score,
        scale_min=low,
        scale_max=high,
        time_spent_ms=time_spent_ms,
        shown_order=shown,
        origin=origin,
        assignment=assignment,
        status=status,
    )
    _save(judgement, "span_one_per_annotator_unit")
    ErrorSpan.objects.bulk_create([ErrorSpan(judgement=judgement, **span) for span in cleaned])
    return judgement
