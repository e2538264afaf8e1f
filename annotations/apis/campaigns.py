"""Campaigns and the assignment of items to annotators."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.apis.common import id_field, paginated, paginated_response, validated_filters
from annotations.apis.datasets import ReferenceOutputSerializer
from annotations.models import Assignment, Campaign, Item, Output
from annotations.permissions import ApiAuthMixin, require_member, require_staff
from annotations.selectors import assignment_list, campaign_list, dataset_list
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.projects import annotator_get_or_create

SMALLINT_MAX = 32767


class CampaignOutputSerializer(serializers.ModelSerializer):
    dataset = serializers.IntegerField(source="dataset_id", read_only=True)
    criteria = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Campaign
        fields = [
            "id", "name", "dataset", "protocol", "criteria", "scale_min", "scale_max", "instructions",
            "redundancy", "anchor_value", "tuple_size", "created_at",
        ]
        ref_name = "Campaign"


class CampaignListApi(ApiAuthMixin, APIView):
    class FilterSerializer(serializers.Serializer):
        dataset = id_field()

        class Meta:
            ref_name = "CampaignFilter"

    class InputSerializer(serializers.Serializer):
        dataset = id_field(required=True)
        name = serializers.CharField(min_length=1, max_length=200)
        protocol = serializers.ChoiceField(choices=Campaign.Protocol.choices)
        criteria = serializers.ListField(child=serializers.CharField(min_length=1, max_length=100), min_length=1, max_length=50)
        scale_min = serializers.FloatField(required=False, allow_null=True)
        scale_max = serializers.FloatField(required=False, allow_null=True)
        instructions = serializers.CharField(required=False, allow_blank=True, max_length=100_000)
        redundancy = serializers.IntegerField(required=False, min_value=1, max_value=SMALLINT_MAX)
        anchor_value = serializers.FloatField(required=False, allow_null=True)
        tuple_size = serializers.IntegerField(required=False, min_value=2, max_value=SMALLINT_MAX)

        class Meta:
            ref_name = "CampaignCreate"

    @extend_schema(
        operation_id="campaigns_list", parameters=[FilterSerializer], responses=paginated(CampaignOutputSerializer)
    )
    def get(self, request: Request) -> Response:
        filters = validated_filters(self.FilterSerializer, request)
        campaigns = campaign_list(user=request.user)
        if "dataset" in filters:
            campaigns = campaigns.filter(dataset_id=filters["dataset"])
        return paginated_response(
            queryset=campaigns, serializer_class=CampaignOutputSerializer, request=request, view=self
        )

    @extend_schema(operation_id="campaigns_create", request=InputSerializer, responses={201: CampaignOutputSerializer})
    def post(self, request: Request) -> Response:
        """Create a campaign on a dataset (owners and researchers of its project)."""
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        dataset = dataset_list(user=request.user).filter(pk=data.pop("dataset")).first()
        if dataset is None:
            raise NotFound()
        require_staff(user=request.user, project=dataset.project)
        campaign = campaign_create(dataset=dataset, **data)
        return Response(CampaignOutputSerializer(campaign).data, status=status.HTTP_201_CREATED)


class CampaignDetailApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="campaigns_retrieve", responses=CampaignOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        campaign = get_object_or_404(campaign_list(user=request.user), pk=pk)
        return Response(CampaignOutputSerializer(campaign).data)


class BlindOutputSerializer(serializers.ModelSerializer):
    """An output as shown to annotators: no system name, so judging stays blind."""

    class Meta:
        model = Output
        fields = ["id", "text"]
        ref_name = "BlindOutput"


class AssignmentItemSerializer(serializers.ModelSerializer):
    data = serializers.JSONField(read_only=True)
    references = ReferenceOutputSerializer(many=True, read_only=True)
    outputs = BlindOutputSerializer(many=True, read_only=True)

    class Meta:
        model = Item
        fields = ["id", "external_id", "source", "data", "references", "outputs"]
        ref_name = "AssignmentItem"


class AssignmentOutputSerializer(serializers.ModelSerializer):
    campaign = serializers.IntegerField(source="campaign_id", read_only=True)
    annotator = serializers.IntegerField(source="annotator_id", read_only=True)
    annotator_name = serializers.CharField(source="annotator.name", read_only=True)
    item = serializers.IntegerField(source="item_id", read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "campaign", "annotator", "annotator_name", "item", "status", "created_at"]
        ref_name = "Assignment"


class NextAssignmentOutputSerializer(AssignmentOutputSerializer):
    item = AssignmentItemSerializer(read_only=True)

    class Meta(AssignmentOutputSerializer.Meta):
        ref_name = "NextAssignment"


class NextAssignmentApi(ApiAuthMixin, APIView):
    @extend_schema(
        operation_id="campaigns_next_assignment",
        request=None,
        responses={
            201: NextAssignmentOutputSerializer,
            200: OpenApiResponse(NextAssignmentOutputSerializer, description="Your pending assignment, unchanged."),
            204: OpenApiResponse(description="Nothing left for you in this campaign."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        """Hand the next item of the campaign to the requesting member.

        Your pending assignment if you have one (200), else a new one (201);
        204 when every item has its redundancy or was already yours.
        """
        campaign = get_object_or_404(campaign_list(user=request.user), pk=pk)
        require_member(user=request.user, project=campaign.project)
        annotator = annotator_get_or_create(
            project=campaign.project, name=request.user.get_username(), user=request.user
        )
        assignment, created = assignment_next(campaign=campaign, annotator=annotator)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        assignment = (
            Assignment.objects.select_related("annotator")
            .prefetch_related("item__references", "item__outputs")
            .get(pk=assignment.pk)
        )
        return Response(
            NextAssignmentOutputSerializer(assignment).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class AssignmentListApi(ApiAuthMixin, APIView):
    """Annotators see only their own assignments; owners and researchers all of their projects'."""

    class FilterSerializer(serializers.Serializer):
        campaign = id_field()
        status = serializers.ChoiceField(choices=Assignment.Status.choices, required=False)

        class Meta:
            ref_name = "AssignmentFilter"

    @extend_schema(
        operation_id="assignments_list", parameters=[FilterSerializer], responses=paginated(AssignmentOutputSerializer)
    )
    def get(self, request: Request) -> Response:
        filters = validated_filters(self.FilterSerializer, request)
        assignments = assignment_list(user=request.user)
        if "campaign" in filters:
            assignments = assignments.filter(campaign_id=filters["campaign"])
        if "status" in filters:
            assignments = assignments.filter(status=filters["status"])
        return paginated_response(
            queryset=assignments.order_by("campaign_id", "id"),
            serializer_class=AssignmentOutputSerializer,
            request=request,
            view=self,
        )
