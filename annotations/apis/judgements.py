"""Judgements: rating (Likert, direct assessment, RankME), pairwise, best-worst and ESA spans.

Listing: owners and researchers see every judgement of their projects,
annotators only their own (`annotations.selectors`); every row says whether it
counts (`status`: complete, partial or abandoned; filter with `?status=`).
Submitting: only for one of the submitter's own assignments, through the
`judgement_submit` service (stored with origin "api"); a whole unit at once
goes to `POST /api/assignments/{id}/submit/`.
"""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import require_staff_somewhere
from annotations.apis.common import (
    MAX_ID,
    TIME_SPENT_HELP,
    OutputRefField,
    id_field,
    output_ref_list,
    paginated,
    paginated_response,
    validated_filters,
)
from annotations.models import (
    BestWorstJudgement,
    ErrorSpan,
    JudgementBase,
    PairwiseJudgement,
    RatingJudgement,
    SpanJudgement,
)
from annotations.permissions import ApiAuthMixin
from annotations.protocols.errors import AnswerError
from annotations.selectors import (
    bestworst_judgement_list,
    judgements_filtered,
    pairwise_judgement_list,
    rating_judgement_list,
    span_judgement_list,
)
from annotations.services.handles import (
    OUTPUT_KEYS,
    OUTPUT_LIST_KEYS,
    Handles,
    judgement_for_annotator,
    judgement_handles,
)
from annotations.services.handout_clock import clock_after_response
from annotations.services.judgements import (
    bestworst_judgement_create,
    pairwise_judgement_create,
    rating_judgement_create,
    span_judgement_create,
)
from annotations.services.submissions import judgement_submit
from annotations.timing import unit_response_floor

JUDGEMENT_FIELDS = [
    "id",
    "campaign",
    "annotator",
    "annotator_name",
    "item",
    "criterion",
    "time_spent_ms",
    "shown_order",
    "origin",
    "status",
    "assignment",
    "created_at",
]


class WinnerField(serializers.ChoiceField):
    """a / b / tie; another value is refused with the protocol's message, the one every path gives."""

    def __init__(self, **kwargs):
        super().__init__(choices=PairwiseJudgement.Winner.choices, **kwargs)

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError:
            raise serializers.ValidationError(AnswerError("winner", value=data).messages) from None


class ScoreField(serializers.FloatField):
    """A number (numeric strings too, as ever); anything else is refused with the protocol's message."""

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError:
            rule = "score_finite" if isinstance(data, (int, float)) else "score_type"
            raise serializers.ValidationError(AnswerError(rule, value=data).messages) from None


def _output_id_list(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=MAX_ID), **kwargs)


class JudgementOutputSerializer(serializers.ModelSerializer):
    campaign = serializers.IntegerField(source="campaign_id", read_only=True)
    annotator = serializers.IntegerField(source="annotator_id", read_only=True)
    annotator_name = serializers.CharField(source="annotator.name", read_only=True)
    item = serializers.IntegerField(source="item_id", read_only=True)
    assignment = serializers.IntegerField(source="assignment_id", read_only=True, allow_null=True)
    shown_order = _output_id_list(read_only=True)


class RatingOutputSerializer(JudgementOutputSerializer):
    output = serializers.IntegerField(source="output_id", read_only=True)

    class Meta:
        model = RatingJudgement
        fields = JUDGEMENT_FIELDS + ["output", "score", "rank"]
        ref_name = "RatingJudgement"


class PairwiseOutputSerializer(JudgementOutputSerializer):
    output_a = serializers.IntegerField(source="output_a_id", read_only=True)
    output_b = serializers.IntegerField(source="output_b_id", read_only=True)

    class Meta:
        model = PairwiseJudgement
        fields = JUDGEMENT_FIELDS + ["output_a", "output_b", "winner"]
        ref_name = "PairwiseJudgement"


class BestWorstOutputSerializer(JudgementOutputSerializer):
    outputs = _output_id_list(read_only=True)
    best = serializers.IntegerField(source="best_id", read_only=True)
    worst = serializers.IntegerField(source="worst_id", read_only=True)

    class Meta:
        model = BestWorstJudgement
        fields = JUDGEMENT_FIELDS + ["outputs", "best", "worst"]
        ref_name = "BestWorstJudgement"


class ErrorSpanSerializer(serializers.ModelSerializer):
    class Meta:
        model = ErrorSpan
        fields = ["start", "end", "severity", "missing", "category"]
        ref_name = "ErrorSpan"


class SpanOutputSerializer(JudgementOutputSerializer):
    output = serializers.IntegerField(source="output_id", read_only=True)
    spans = ErrorSpanSerializer(many=True, read_only=True)

    class Meta:
        model = SpanJudgement
        fields = JUDGEMENT_FIELDS + ["output", "score", "spans"]
        ref_name = "SpanJudgement"


class JudgementFilterSerializer(serializers.Serializer):
    campaign = id_field()
    item = id_field()
    criterion = serializers.CharField(required=False, max_length=100)
    status = serializers.ChoiceField(
        choices=JudgementBase.Status.choices,
        required=False,
        help_text="complete = counts in analyses; partial = unit not finished yet; abandoned = timed out or released.",
    )

    class Meta:
        ref_name = "JudgementFilter"


class JudgementInputSerializer(serializers.Serializer):
    """Fields every submission has; `shown_order` lists the outputs left to right.

    Outputs are named by the handles the unit showed (annotators) or, for owners and
    researchers, by their ids (`annotations.services.handles`)."""

    campaign = id_field(required=True)
    criterion = serializers.CharField(min_length=1, max_length=100)
    time_spent_ms = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=2**31 - 1, help_text=TIME_SPENT_HELP
    )
    shown_order = output_ref_list(required=False, allow_null=True, max_length=100)


def _filtered(queryset: QuerySet, request: Request) -> QuerySet:
    require_staff_somewhere(user=request.user)  # judgement lists are for owners and researchers
    filters = validated_filters(JudgementFilterSerializer, request)
    return judgements_filtered(
        queryset,
        campaign_id=filters.get("campaign"),
        item_id=filters.get("item"),
        criterion=filters.get("criterion"),
        status=filters.get("status"),
    )


def _common(data: dict) -> dict:
    # No `time_spent_ms`: a judgement's time is measured on the server (judgement_submit passes it);
    # the client's figure is accepted for compatibility and not stored.
    return {"criterion": data["criterion"]}


def _translated(request: Request, data: dict) -> tuple[dict, Handles]:
    """The submission with real output ids: handles translated at the boundary."""
    named = [data[k] for k in OUTPUT_KEYS if k in data] + [v for k in OUTPUT_LIST_KEYS for v in data.get(k) or []]
    handles = judgement_handles(user=request.user, campaign_id=data["campaign"], values=named)
    data = dict(data)
    try:
        for key in OUTPUT_KEYS:
            if key in data:
                data[key] = handles.output_or_error(data[key], field=key)
        for key in OUTPUT_LIST_KEYS:
            if key in data:
                data[key] = [handles.output_or_error(v, field=key) for v in data[key]]
    except AnswerError as exc:
        raise serializers.ValidationError({exc.field: exc.messages}) from None
    if data.get("shown_order"):
        try:
            data["shown_order"] = handles.order(data["shown_order"])
        except AnswerError:
            raise serializers.ValidationError(
                {"shown_order": ["shown_order differs from the order this unit was shown in."]}
            ) from None
    return data, handles


def _answer(serializer_class, judgement: JudgementBase, *, handles: Handles, sent: dict) -> dict:
    """The stored judgement; for annotators with handles instead of ids."""
    data = serializer_class(judgement).data
    if handles.allow_ids:
        return data
    return judgement_for_annotator(data, assignment_id=judgement.assignment_id, sent=sent)


def _submit(*, request: Request, data: dict, output_ids, create) -> JudgementBase:
    return judgement_submit(
        user=request.user,
        campaign_id=data["campaign"],
        output_ids=output_ids,
        # An empty list means "not recorded", like an absent one.
        shown_order=data.get("shown_order") or None,
        create=create,
        origin=JudgementBase.Origin.API,
    )


class RatingJudgementListApi(ApiAuthMixin, APIView):
    class InputSerializer(JudgementInputSerializer):
        output = OutputRefField()
        score = ScoreField()
        rank = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=32767)

        class Meta:
            ref_name = "RatingJudgementCreate"

    @extend_schema(
        operation_id="judgements_ratings_list",
        parameters=[JudgementFilterSerializer],
        responses=paginated(RatingOutputSerializer),
    )
    def get(self, request: Request) -> Response:
        ratings = _filtered(rating_judgement_list(user=request.user), request)
        return paginated_response(queryset=ratings, serializer_class=RatingOutputSerializer, request=request, view=self)

    @extend_schema(
        operation_id="judgements_ratings_create", request=InputSerializer, responses={201: RatingOutputSerializer}
    )
    @clock_after_response
    @unit_response_floor
    def post(self, request: Request) -> Response:
        """Rate one output of an item you were assigned (Likert, direct assessment, RankME)."""
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data, handles = _translated(request, serializer.validated_data)
        judgement = _submit(
            request=request,
            data=data,
            output_ids=[data["output"]],
            create=lambda *, outputs, **common: rating_judgement_create(
                output=outputs[data["output"]],
                score=data["score"],
                rank=data.get("rank"),
                **common,
                **_common(data),
            ),
        )
        return Response(
            _answer(RatingOutputSerializer, judgement, handles=handles, sent=serializer.validated_data),
            status=status.HTTP_201_CREATED,
        )


class PairwiseJudgementListApi(ApiAuthMixin, APIView):
    class InputSerializer(JudgementInputSerializer):
        output_a = OutputRefField(help_text="The output shown first (left).")
        output_b = OutputRefField()
        winner = WinnerField()

        class Meta:
            ref_name = "PairwiseJudgementCreate"

    @extend_schema(
        operation_id="judgements_pairwise_list",
        parameters=[JudgementFilterSerializer],
        responses=paginated(PairwiseOutputSerializer),
    )
    def get(self, request: Request) -> Response:
        pairs = _filtered(pairwise_judgement_list(user=request.user), request)
        return paginated_response(queryset=pairs, serializer_class=PairwiseOutputSerializer, request=request, view=self)

    @extend_schema(
        operation_id="judgements_pairwise_create", request=InputSerializer, responses={201: PairwiseOutputSerializer}
    )
    @clock_after_response
    @unit_response_floor
    def post(self, request: Request) -> Response:
        """Prefer one of two outputs of an item you were assigned (or call a tie).

        Stored with the lower output id as `output_a`, the winner flipped to
        match; the order you showed is kept in `shown_order`.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data, handles = _translated(request, serializer.validated_data)
        judgement = _submit(
            request=request,
            data=data,
            output_ids=[data["output_a"], data["output_b"]],
            create=lambda *, outputs, **common: pairwise_judgement_create(
                output_a=outputs[data["output_a"]],
                output_b=outputs[data["output_b"]],
                winner=data["winner"],
                **common,
                **_common(data),
            ),
        )
        return Response(
            _answer(PairwiseOutputSerializer, judgement, handles=handles, sent=serializer.validated_data),
            status=status.HTTP_201_CREATED,
        )


class BestWorstJudgementListApi(ApiAuthMixin, APIView):
    class InputSerializer(JudgementInputSerializer):
        outputs = output_ref_list(min_length=2, max_length=50, help_text="The tuple, in the order shown.")
        best = OutputRefField()
        worst = OutputRefField()

        class Meta:
            ref_name = "BestWorstJudgementCreate"

    @extend_schema(
        operation_id="judgements_bestworst_list",
        parameters=[JudgementFilterSerializer],
        responses=paginated(BestWorstOutputSerializer),
    )
    def get(self, request: Request) -> Response:
        tuples = _filtered(bestworst_judgement_list(user=request.user), request)
        return paginated_response(
            queryset=tuples, serializer_class=BestWorstOutputSerializer, request=request, view=self
        )

    @extend_schema(
        operation_id="judgements_bestworst_create",
        request=InputSerializer,
        responses={201: BestWorstOutputSerializer},
    )
    @clock_after_response
    @unit_response_floor
    def post(self, request: Request) -> Response:
        """Pick the best and the worst output of a tuple from an item you were assigned."""
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data, handles = _translated(request, serializer.validated_data)
        judgement = _submit(
            request=request,
            data=data,
            output_ids=[*data["outputs"], data["best"], data["worst"]],
            create=lambda *, outputs, **common: bestworst_judgement_create(
                outputs=[outputs[i] for i in data["outputs"]],
                best=outputs[data["best"]],
                worst=outputs[data["worst"]],
                **common,
                **_common(data),
            ),
        )
        return Response(
            _answer(BestWorstOutputSerializer, judgement, handles=handles, sent=serializer.validated_data),
            status=status.HTTP_201_CREATED,
        )


class SpanInputSerializer(serializers.Serializer):
    start = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    end = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    severity = serializers.ChoiceField(choices=ErrorSpan.Severity.choices)
    missing = serializers.BooleanField(required=False, default=False)
    category = serializers.CharField(
        required=False, max_length=300, help_text='MQM: the error category, e.g. "Accuracy/Mistranslation"'
    )

    class Meta:
        ref_name = "ErrorSpanCreate"


class SpanJudgementListApi(ApiAuthMixin, APIView):
    class InputSerializer(JudgementInputSerializer):
        output = OutputRefField()
        score = ScoreField(required=False, help_text="ESA: the 0-100 score; MQM: ignored (computed from the spans)")
        spans = SpanInputSerializer(
            many=True,
            required=False,
            max_length=200,
            help_text="Character offsets into the output (end exclusive), or "
            '{"missing": true, "severity": ...} for omitted content.',
        )

        class Meta:
            ref_name = "SpanJudgementCreate"

    @extend_schema(
        operation_id="judgements_spans_list",
        parameters=[JudgementFilterSerializer],
        responses=paginated(SpanOutputSerializer),
    )
    def get(self, request: Request) -> Response:
        rows = _filtered(span_judgement_list(user=request.user), request)
        return paginated_response(queryset=rows, serializer_class=SpanOutputSerializer, request=request, view=self)

    @extend_schema(
        operation_id="judgements_spans_create", request=InputSerializer, responses={201: SpanOutputSerializer}
    )
    @clock_after_response
    @unit_response_floor
    def post(self, request: Request) -> Response:
        """Error span annotation (ESA) of one output of a unit you were assigned: spans, then a 0-100 score."""
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data, handles = _translated(request, serializer.validated_data)
        spans = [
            {
                k: v
                for k, v in span.items()
                if not (k in ("start", "end") and v is None) and not (k == "missing" and v is False)
            }
            for span in data.get("spans", [])
        ]
        judgement = _submit(
            request=request,
            data=data,
            output_ids=[data["output"]],
            create=lambda *, outputs, **common: span_judgement_create(
                output=outputs[data["output"]],
                score=data.get("score"),
                spans=spans,
                **common,
                **_common(data),
            ),
        )
        if handles.allow_ids:
            judgement = span_judgement_list(user=request.user).get(pk=judgement.pk)
            return Response(SpanOutputSerializer(judgement).data, status=status.HTTP_201_CREATED)
        # Annotators: the spans as sent, whatever kind of unit (a control's judgement is not
        # stored in the judgement tables: reading it back would tell it apart).
        answer = _answer(SpanOutputSerializer, judgement, handles=handles, sent=serializer.validated_data)
        answer["spans"] = [
            {
                "start": span.get("start"),
                "end": span.get("end"),
                "severity": span["severity"],
                "missing": bool(span.get("missing")),
                **({"category": span["category"]} if span.get("category") else {}),
            }
            for span in spans
        ]
        return Response(answer, status=status.HTTP_201_CREATED)
