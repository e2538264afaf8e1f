"""POST /api/campaigns/{id}/waves/ {"name": ...}: a second wave of the campaign (researchers only)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import campaign_for_staff
from annotations.apis.campaigns import CampaignOutputSerializer
from annotations.permissions import ApiAuthMixin
from annotations.services.waves import wave_create


class WaveCreateApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)

        class Meta:
            ref_name = "WaveCreate"

    @extend_schema(
        operation_id="campaigns_wave_create",
        request=InputSerializer,
        responses={201: CampaignOutputSerializer},
        summary="Open a second wave: the same units and settings, annotators disjoint from this one's",
    )
    def post(self, request: Request, pk: int) -> Response:
        campaign = campaign_for_staff(user=request.user, pk=pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        wave = wave_create(first=campaign, name=serializer.validated_data["name"])
        return Response(CampaignOutputSerializer(wave).data, status=status.HTTP_201_CREATED)
