"""Judgements: rating (Likert, direct assessment, RankME), pairwise and best-worst.

Listing: owners and researchers see every judgement of their projects,
annotators only their own (`annotations.selectors`). Submitting: only for one
of the submitter's own assignments; each accepted judgement may complete the
assignment (see `assignment_is_complete`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.apis.common import MAX_ID, id_field, paginated, paginated_response, validated_filters
from annotations.models import BestWorstJudgement, Campaign, Output, PairwiseJudgement, RatingJudgement
from annotations.permissions import ApiAuthMixin, require_assignment
from annotations.selectors import (
    bestworst_judgement_list,
    campaign_list,
    pairwise_judgement_list,
    rating_judgement_list,
)
from annotations.services.assignments import assignment_complete_if_judged
from annotations.services.judgements import (
    bestworst_judgement_create,
    pairwise_judgement_create,
    rating_judgement_create,
)

JUDGEMENT_FIELDS = [
    "id", "campaign", "annotator", "annotator_name", "item", "criterion", "time_spent_ms", "shown_order",
    "origin", "created_at",
]


def _output_id_list(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=MAX_ID), **kwargs)


class JudgementOutputSerializer(serializers.ModelSerializer):
    campaign = serializers.IntegerField(source="campaign_id", read_only=True)
    annotator = serializers.IntegerField(source="annotator_id", read_only=True)
    annotator_name = serializers.CharField(source="annotator.name", read_only=True)
    item = serializers.IntegerField(source="item_id", read_only=True)
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


class JudgementFilterSerializer(serializers.Serializer):
    campaign = id_field()
    item = id_field()
    criterion = serializers.CharField(required=False, max_length=100)

    class Meta:
        ref_name = "JudgementFilter"


class JudgementInputSerializer(serializers.Serializer):
    """Fields every submission has; `shown_order` lists output ids left to right."""

    campaign = id_field(required=True)
    criterion = serializers.CharField(min_length=1, max_length=100)
    time_spent_ms = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    shown_order = _output_id_list(required=False, allow_null=True, max_length=100)


def _filtered(queryset: QuerySet, request: Request) -> QuerySet:
    filters = validated_filters(JudgementFilterSerializer, request)
    if "campaign" in filters:
        queryset = queryset.filter(campaign_id=filters["campaign"])
    if "item" in filters:
        queryset = queryset.filter(item_id=filters["item"])
    if "criterion" in filters:
        queryset = queryset.filter(criterion=filters["criterion"])
    return queryset.order_by("campaign_id", "item_id", "id")


def _submit(
    *, request: Request, data: dict, output_ids: Sequence[int], create: Callable[..., object]
) -> object:
    """Resolve the campaign (404 if not visible) and outputs (400 if not in it),
    check the submitter's assignment (403), then write the judgement and
    update the assignment in one transaction."""
    campaign: Campaign | None = campaign_list(user=request.user).filter(pk=data["campaign"]).first()
    if campaign is None:
        raise NotFound()
    outputs = {o.pk: o for o in Output.objects.filter(item__dataset_id=campaign.dataset_id, pk__in=output_ids)}
    unknown = sorted(set(output_ids) - set(outputs))
    if unknown:
        raise ValidationError({"output": [f"Output {i} is not part of this campaign's dataset." for i in unknown]})
    item_ids = {o.item_id for o in outputs.values()}
    if len(item_ids) != 1:
        raise ValidationError({"output": ["The outputs judged together must belong to the same item."]})
    annotator, assignment = require_assignment(user=request.user, campaign=campaign, item_id=item_ids.pop())
    with transaction.atomic():
        judgement = create(campaign=campaign, annotator=annotator, outputs=outputs)
        assignment_complete_if_judged(assignment=assignment)
    return judgement


def _common(data: dict) -> dict:
    return {
        "criterion": data["criterion"],
        "time_spent_ms": data.get("time_spent_ms"),
        # An empty list means "not recorded", like an absent one.
        "shown_order": data.get("shown_order") or None,
    }


class RatingJudgementListApi(ApiAuthMixin, APIView):
    class InputSerializer(JudgementInputSerializer):
        output = id_field(required=True)
        score = serializers.FloatField()
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
    def post(self, request: Request) -> Response:
        """Rate one output of an item you were assigned (Likert, direct assessment, RankME)."""
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        judgement = _submit(
            request=request,
            data=data,
            output_ids=[data["output"]],
            create=lambda *, campaign, annotator, outputs: rating_judgement_create(
                campaign=campaign,
                annotator=annotator,
                output=outputs[data["output"]],
                score=data["score"],
                rank=data.get("rank"),
                **_common(data),
            ),
        )
        return Response(RatingOutputSerializer(judgement).data, status=status.HTTP_201_CREATED)


class PairwiseJudgementListApi(ApiAuthMixin, APIView):
    class InputSerializer(JudgementInputSerializer):
        output_a = id_field(required=True, help_text="The output shown first (left).")
        output_b = id_field(required=True)
        winner = serializers.ChoiceField(choices=PairwiseJudgement.Winner.choices)

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
    def post(self, request: Request) -> Response:
        """Prefer one of two outputs of an item you were assigned (or call a tie).

        Stored with the lower output id as `output_a`, the winner flipped to
        match; the order you showed is kept in `shown_order`.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        judgement = _submit(
            request=request,
            data=data,
            output_ids=[data["output_a"], data["output_b"]],
            create=lambda *, campaign, annotator, outputs: pairwise_judgement_create(
                campaign=campaign,
                annotator=annotator,
                output_a=outputs[data["output_a"]],
                output_b=outputs[data["output_b"]],
                winner=data["winner"],
                **_common(data),
            ),
        )
        return Response(PairwiseOutputSerializer(judgement).data, status=status.HTTP_201_CREATED)


class BestWorstJudgementListApi(ApiAuthMixin, APIView):
    class InputSerializer(JudgementInputSerializer):
        outputs = _output_id_list(min_length=2, max_length=50, help_text="The tuple, in the order shown.")
        best = id_field(required=True)
        worst = id_field(required=True)

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
    def post(self, request: Request) -> Response:
        """Pick the best and the worst output of a tuple from an item you were assigned."""
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        judgement = _submit(
            request=request,
            data=data,
            output_ids=[*data["outputs"], data["best"], data["worst"]],
            create=lambda *, campaign, annotator, outputs: bestworst_judgement_create(
                campaign=campaign,
                annotator=annotator,
                outputs=[outputs[i] for i in data["outputs"]],
                best=outputs[data["best"]],
                worst=outputs[data["worst"]],
                **_common(data),
            ),
        )
        return Response(BestWorstOutputSerializer(judgement).data, status=status.HTTP_201_CREATED)
