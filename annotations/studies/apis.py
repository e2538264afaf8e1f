"""Study links through the REST API: list and create a campaign's links, revoke one.

Owners and researchers only (403 for annotators, 404 for non-members).
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import campaign_for_staff
from annotations.models.studies import JoinLink
from annotations.permissions import ApiAuthMixin
from annotations.studies import selectors, services
from annotations.studies.views import link_url


class JoinLinkSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    campaign = serializers.IntegerField(source="campaign_id")
    url = serializers.SerializerMethodField()
    token = serializers.CharField()
    completion_url = serializers.CharField()
    pass_code = serializers.CharField()
    fail_code = serializers.CharField()
    max_annotators = serializers.IntegerField(allow_null=True)
    one_per_browser = serializers.BooleanField()
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    state = serializers.SerializerMethodField()
    participants = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "JoinLink"

    def get_url(self, link) -> str:
        return link_url(self.context["request"], link)

    def get_state(self, link) -> str:
        return selectors.join_link_state(link)

    def get_participants(self, link) -> int:
        n = getattr(link, "n_participants", None)
        return n if n is not None else link.participants.count()


class JoinLinkListApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        completion_url = serializers.CharField(required=False, allow_blank=True, max_length=1000, default="")
        max_annotators = serializers.IntegerField(required=False, allow_null=True, min_value=1, default=None)
        pass_code = serializers.CharField(required=False, allow_blank=True, max_length=40, default="")
        fail_code = serializers.CharField(required=False, allow_blank=True, max_length=40, default="")
        expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
        one_per_browser = serializers.BooleanField(
            required=False,
            default=False,
            help_text="One participant per browser (session cookie), and one per platform id whichever "
            "parameter carries it.",
        )

        class Meta:
            ref_name = "JoinLinkInput"

    @extend_schema(operation_id="campaigns_join_links_list", responses={200: JoinLinkSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        """The campaign's study links, newest first, with their participant counts."""
        campaign = campaign_for_staff(user=request.user, pk=pk)
        links = selectors.join_link_list(campaign=campaign)
        return Response(JoinLinkSerializer(links, many=True, context={"request": request}).data)

    @extend_schema(
        operation_id="campaigns_join_links_create", request=InputSerializer, responses={201: JoinLinkSerializer}
    )
    def post(self, request: Request, pk: int) -> Response:
        """A new study link (`completion_url` may hold `{code}`; else `cc=<code>` is appended)."""
        campaign = campaign_for_staff(user=request.user, pk=pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        link = services.join_link_create(campaign=campaign, user=request.user, **serializer.validated_data)
        return Response(JoinLinkSerializer(link, context={"request": request}).data, status=status.HTTP_201_CREATED)


class JoinLinkDetailApi(ApiAuthMixin, APIView):
    def _revoke(self, request: Request, pk: int) -> Response:
        link = get_object_or_404(JoinLink.objects.select_related("campaign"), pk=pk)
        campaign_for_staff(user=request.user, pk=link.campaign_id)  # 404 for non-members, 403 for annotators
        link = services.join_link_revoke(link=link)
        return Response(JoinLinkSerializer(link, context={"request": request}).data)

    @extend_schema(operation_id="join_links_revoke", request=None, responses={200: JoinLinkSerializer})
    def delete(self, request: Request, pk: int) -> Response:
        """Revoke the link: it answers 404 from now on (the row and its participants are kept)."""
        return self._revoke(request, pk)

    @extend_schema(operation_id="join_links_revoke_post", request=None, responses={200: JoinLinkSerializer})
    def post(self, request: Request, pk: int) -> Response:
        """The same as DELETE, for clients that cannot send one."""
        return self._revoke(request, pk)
