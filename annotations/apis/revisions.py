"""`POST /api/assignments/{id}/revise/`: new answers for a unit already submitted, while its batch
is open (`annotations.services.revisions.unit_revise`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.apis.campaigns import AssignmentOutputSerializer, UnitSubmitApi, _own_assignment
from annotations.models import JudgementBase
from annotations.permissions import ApiAuthMixin
from annotations.selectors import STAFF_ROLES, assignment_brief
from annotations.services.handles import brief_for_annotator, handles_for, unit_submission_translate
from annotations.services.revisions import unit_revise
from annotations.timing import unit_response_floor


class UnitReviseApi(ApiAuthMixin, APIView):
    class InputSerializer(UnitSubmitApi.InputSerializer):
        # The body of a submission; `time_spent_ms` is accepted and ignored (the unit keeps the
        # time of its first submission), `listened_ms` is added to the unit's listening time when
        # plausible, and `next` has no meaning here.
        class Meta:
            ref_name = "UnitRevise"

    class OutputSerializer(serializers.Serializer):
        assignment = AssignmentOutputSerializer()
        judgements = serializers.IntegerField(help_text="Judgements stored (they replace the unit's earlier ones).")

        class Meta:
            ref_name = "UnitReviseResult"

    @extend_schema(operation_id="assignments_revise", request=InputSerializer, responses={200: OutputSerializer})
    @unit_response_floor
    def post(self, request: Request, pk: int) -> Response:
        """Replace your answers to a unit you already submitted, while its batch is in progress.

        Same body as submit; the new judgements replace the old ones in one transaction and the
        unit is not counted again. 400 once the batch is complete (its last unit submitted, or a
        completion code issued), for a unit not yet submitted, and for any answer submit refuses.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        assignment = _own_assignment(request.user, pk)
        staff = assignment.member_role in STAFF_ROLES
        # Handles (and, for owners and researchers, ids) to ids, at the boundary as in submit.
        judgements, shown_order = unit_submission_translate(
            handles_for(assignment, allow_ids=staff), judgements=data["judgements"], shown_order=data.get("shown_order")
        )
        result = unit_revise(
            annotator=assignment.annotator,
            assignment_id=assignment.pk,
            campaign=assignment.campaign,
            judgements=judgements,
            shown_order=shown_order,
            origin=JudgementBase.Origin.API,
            listened_ms=data.get("listened_ms"),
        )
        result.assignment.annotator = assignment.annotator
        brief = assignment_brief(assignment=result.assignment, show_unit=staff)
        body = {"assignment": brief if staff else brief_for_annotator(brief), "judgements": result.judgements}
        return Response(body, status=status.HTTP_200_OK)
