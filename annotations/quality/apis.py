"""Quality control through the REST API: figures, settings, decisions, gold units and
completion codes for researchers; an annotator's own completion code.

Owners and researchers only (404 for annotators and non-members), except
`CompletionCodeMineApi`, which shows an annotator their own code.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import campaign_for_any_member, campaign_for_staff
from annotations.apis.common import MAX_ID
from annotations.apis.figures import FigureStatusSerializer, figures_api, pending_response
from annotations.models import Annotator, Campaign, Item, Output
from annotations.models.quality import CompletionCode, GoldUnit, QualitySettings
from annotations.permissions import ApiAuthMixin
from annotations.quality import selectors, services
from annotations.quality.services.settings import quality_settings_names_check
from annotations.selectors import annotator_for_user


def _campaign(request: Request, pk: int, *, staff: bool = True) -> Campaign:
    return (campaign_for_staff if staff else campaign_for_any_member)(user=request.user, pk=pk)


class FiguresSerializer(serializers.Serializer):
    annotator = serializers.IntegerField()
    name = serializers.CharField()
    agreement_with_others = serializers.FloatField(allow_null=True)
    controls_passed = serializers.FloatField(allow_null=True)
    self_consistency = serializers.FloatField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)
    min_seconds = serializers.FloatField(allow_null=True)
    straight_lining = serializers.BooleanField(allow_null=True)
    mann_whitney_p = serializers.FloatField(allow_null=True)
    included = serializers.BooleanField()
    judgements = serializers.IntegerField()
    degraded = serializers.DictField(child=serializers.IntegerField())
    gold = serializers.DictField(child=serializers.IntegerField())
    # Relative attention checks (issue 41 part 5): {"judged", "passed"}.
    relative = serializers.DictField(child=serializers.IntegerField())
    repeats = serializers.IntegerField()
    tutorial_tries = serializers.IntegerField()
    reasons = serializers.ListField(child=serializers.CharField())
    pending = serializers.ListField(child=serializers.CharField())
    decision = serializers.DictField(allow_null=True)

    class Meta:
        ref_name = "AnnotatorQuality"


def quality_report(campaign: Campaign) -> dict:
    quality = selectors.campaign_quality(campaign=campaign)
    names = dict(Annotator.objects.filter(pk__in=quality).values_list("id", "name"))
    return {
        "campaign": campaign.pk,
        "rules": selectors.rules_of(campaign=campaign).describe(),
        "annotators": [
            {"annotator": pk, "name": names[pk], **q.as_json()}
            for pk, q in sorted(quality.items(), key=lambda x: names[x[0]])
        ],
        # Per criterion, the same headline figure (value and label) as the analysis dashboard,
        # the `agreement` command and the export's card.
        "agreement": selectors.campaign_agreement(campaign=campaign),
    }


class QualityApi(ApiAuthMixin, APIView):
    @extend_schema(
        operation_id="campaigns_quality",
        responses={
            200: inline_serializer(
                name="CampaignQuality",
                fields={
                    "campaign": serializers.IntegerField(),
                    "rules": serializers.ListField(child=serializers.CharField()),
                    "annotators": FiguresSerializer(many=True),
                    "agreement": serializers.DictField(),
                    # Only above WORKBENCH_FIGURES_INLINE_MAX judgements (annotations.apis.figures).
                    "figure": FigureStatusSerializer(required=False),
                },
            ),
            202: pending_response(),
        },
    )
    @figures_api
    def get(self, request: Request, pk: int) -> Response:
        """Reliability figures of every annotator, the rules applied and whether each is included.
        Above WORKBENCH_FIGURES_INLINE_MAX judgements: the figures a worker computed, with a `figure`
        object (status ready|computing|queued, age); 202 while none exists yet."""
        return Response(quality_report(_campaign(request, pk)))


class QualitySettingsSerializer(serializers.ModelSerializer):
    rules = serializers.JSONField()
    degrade_kinds = serializers.ListField(child=serializers.CharField(max_length=20), max_length=10)

    class Meta:
        model = QualitySettings
        fields = ["degraded_share", "repeat_share", "degrade_kinds", "degrade_strength", "rules", "completion_codes"]
        ref_name = "QualitySettings"


class QualitySettingsApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="campaigns_quality_settings", responses=QualitySettingsSerializer)
    def get(self, request: Request, pk: int) -> Response:
        campaign = _campaign(request, pk)
        current = selectors.quality_settings_get(campaign=campaign)
        data = QualitySettingsSerializer(current).data
        data["rules"] = selectors.rules_of(campaign=campaign).as_dict()
        return Response(data)

    @extend_schema(
        operation_id="campaigns_quality_settings_update",
        request=QualitySettingsSerializer,
        responses=QualitySettingsSerializer,
    )
    def patch(self, request: Request, pk: int) -> Response:
        """Change some settings; rules are merged into the current ones (null turns a rule off)."""
        campaign = _campaign(request, pk)
        if not isinstance(request.data, dict):
            raise serializers.ValidationError({"detail": "Send a JSON object."})
        # Checked before the call: a body key `campaign` would otherwise clash with the argument.
        quality_settings_names_check(request.data)
        services.quality_settings_update(campaign=campaign, **request.data)
        return self.get(request, pk)


class DecisionApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        annotator = serializers.IntegerField(min_value=1, max_value=MAX_ID)
        included = serializers.BooleanField(
            allow_null=True, help_text="false: exclude; true: include whatever the rules say; null: back to the rules."
        )
        reason = serializers.CharField(max_length=2000)

        class Meta:
            ref_name = "AnnotatorDecisionInput"

    @extend_schema(operation_id="campaigns_quality_decide", request=InputSerializer, responses={201: None})
    def post(self, request: Request, pk: int) -> Response:
        """Include or exclude an annotator by hand, with a reason. No judgement is deleted."""
        campaign = _campaign(request, pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        annotator = get_object_or_404(Annotator, pk=data["annotator"], project=campaign.project)
        decision = services.annotator_decide(
            campaign=campaign, annotator=annotator, included=data["included"], reason=data["reason"], user=request.user
        )
        return Response(
            {"annotator": annotator.pk, "included": decision.included, "reason": decision.reason},
            status=status.HTTP_201_CREATED,
        )


class GoldUnitSerializer(serializers.ModelSerializer):
    item = serializers.CharField(source="item.external_id", read_only=True)

    class Meta:
        model = GoldUnit
        fields = ["id", "item", "outputs", "expected", "mode", "explanation", "position", "created_at"]
        ref_name = "GoldUnit"


class GoldUnitListApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        item = serializers.IntegerField(min_value=1, max_value=MAX_ID)
        outputs = serializers.ListField(
            child=serializers.IntegerField(min_value=1, max_value=MAX_ID), min_length=1, max_length=10
        )
        expected = serializers.JSONField()
        mode = serializers.ChoiceField(choices=GoldUnit.Mode.choices, default=GoldUnit.Mode.SILENT)
        explanation = serializers.CharField(max_length=5000, required=False, allow_blank=True, default="")

        class Meta:
            ref_name = "GoldUnitInput"

    @extend_schema(operation_id="campaigns_gold_list", responses=GoldUnitSerializer(many=True))
    def get(self, request: Request, pk: int) -> Response:
        campaign = _campaign(request, pk)
        return Response(GoldUnitSerializer(selectors.gold_unit_list(campaign=campaign), many=True).data)

    @extend_schema(operation_id="campaigns_gold_create", request=InputSerializer, responses={201: GoldUnitSerializer})
    def post(self, request: Request, pk: int) -> Response:
        """A gold unit: outputs of one item and the expected answer (output ids in pairwise / best-worst)."""
        campaign = _campaign(request, pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        item = get_object_or_404(Item, pk=data["item"], dataset_id=campaign.dataset_id)
        outputs = list(Output.objects.filter(pk__in=data["outputs"], item=item))
        if len(outputs) != len(set(data["outputs"])):
            raise serializers.ValidationError({"outputs": "Every output must be an output of the item."})
        gold_unit = services.gold_unit_create(
            campaign=campaign,
            item=item,
            outputs=outputs,
            expected=data["expected"],
            mode=data["mode"],
            explanation=data["explanation"],
        )
        return Response(GoldUnitSerializer(gold_unit).data, status=status.HTTP_201_CREATED)


class CompletionCodeSerializer(serializers.ModelSerializer):
    annotator_name = serializers.CharField(source="annotator.name")
    verdict = serializers.SerializerMethodField()

    class Meta:
        model = CompletionCode
        fields = ["annotator", "annotator_name", "batch", "code", "verdict", "reasons", "created_at"]
        ref_name = "CompletionCode"

    def get_verdict(self, code: CompletionCode) -> str:
        return "pass" if code.passed else "fail"


class CompletionCodeListApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="campaigns_completion_codes", responses=CompletionCodeSerializer(many=True))
    def get(self, request: Request, pk: int) -> Response:
        """Every code issued, with pass or fail (what the crowd platform needs to approve work)."""
        campaign = _campaign(request, pk)
        return Response(CompletionCodeSerializer(selectors.completion_code_list(campaign=campaign), many=True).data)


class CompletionCodeVerifyApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        code = serializers.CharField(max_length=40)

        class Meta:
            ref_name = "CompletionCodeVerify"

    @extend_schema(operation_id="campaigns_completion_code_verify", request=InputSerializer, responses={200: None})
    def post(self, request: Request, pk: int) -> Response:
        """Whose a pasted code is, which batch, and whether it is a pass code."""
        campaign = _campaign(request, pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(services.completion_code_check(campaign=campaign, code=serializer.validated_data["code"]))


class CompletionCodeMineApi(ApiAuthMixin, APIView):
    @extend_schema(
        operation_id="campaigns_my_completion_code",
        responses={
            200: inline_serializer(
                name="MyCompletionCode",
                fields={
                    "code": serializers.CharField(allow_null=True),
                    "batch": serializers.IntegerField(allow_null=True),
                },
            )
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        """Your latest completion code in this campaign (null until you finish a batch).

        Codes are issued by writes: a submit that ends a batch, and the
        `next-assignment` call that finds nothing left (the last, partial
        batch). This read issues none."""
        campaign = _campaign(request, pk, staff=False)
        annotator = annotator_for_user(user=request.user, project=campaign.project)
        code = None if annotator is None else selectors.latest_completion_code(campaign=campaign, annotator=annotator)
        return Response({"code": code.code if code else None, "batch": code.batch + 1 if code else None})
