"""Campaigns, the assignment of units to annotators, and submitting a whole unit."""

from __future__ import annotations

import json

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations import protocols
from annotations.access import campaign_for_staff
from annotations.allocation.services import campaign_stop
from annotations.apis.common import (
    MAX_ID,
    TIME_SPENT_HELP,
    JsonOnlyMixin,
    OutputRefField,
    id_field,
    output_ref_list,
    paginated,
    paginated_response,
    validated_filters,
)
from annotations.apis.datasets import ReferenceOutputSerializer
from annotations.models import Assignment, Campaign, JudgementBase
from annotations.pagination import BoundedPagination
from annotations.permissions import ApiAuthMixin, require_staff
from annotations.quality.services import completion_code_at_batch_end
from annotations.selectors import (
    STAFF_ROLES,
    assignment_brief,
    assignment_list,
    assignment_payload,
    blind_project_ids,
    campaign_for_member,
    campaign_list,
    dataset_list,
    enrolment_for,
    own_assignment,
    staff_project_list,
)
from annotations.services.assignment_work import assignment_draft_save, assignment_release
from annotations.services.assignments import assignment_next
from annotations.services.campaign_files import campaign_create_from_file, campaign_file_schema
from annotations.services.campaigns import campaign_create
from annotations.services.handles import (
    brief_for_annotator,
    handles_for,
    payload_for_annotator,
    unit_submission_translate,
)
from annotations.services.handout_clock import clock_after_response
from annotations.services.progress import campaign_progress
from annotations.services.projects import annotator_get_or_create
from annotations.services.submissions import LISTENED_MAX_MS, unit_submit_own
from annotations.timing import unit_response_floor

SMALLINT_MAX = 32767
DRAFT_MAX_BYTES = 200_000


class CriterionSerializer(serializers.Serializer):
    name = serializers.CharField()
    question = serializers.CharField(required=False, allow_blank=True, max_length=1000)
    scale_min = serializers.FloatField(required=False, allow_null=True)
    scale_max = serializers.FloatField(required=False, allow_null=True)
    widget = serializers.ChoiceField(choices=Campaign.Widget.choices, required=False, allow_blank=True)
    min_label = serializers.CharField(required=False, allow_blank=True, max_length=100)
    max_label = serializers.CharField(required=False, allow_blank=True, max_length=100)

    class Meta:
        ref_name = "CampaignCriterion"


class CampaignOutputSerializer(serializers.ModelSerializer):
    """A campaign; `systems` (names) only for its project's owners and researchers."""

    dataset = serializers.IntegerField(source="dataset_id", read_only=True)
    criteria = serializers.ListField(child=serializers.CharField(), read_only=True)
    criteria_config = serializers.SerializerMethodField()
    systems = serializers.SerializerMethodField()
    stop_reason = serializers.SerializerMethodField()
    options = serializers.SerializerMethodField()

    class Meta:
        model = Campaign
        fields = [
            "id",
            "name",
            "public_title",
            "dataset",
            "protocol",
            "criteria",
            "criteria_config",
            "scale_min",
            "scale_max",
            "instructions",
            "redundancy",
            "options",
            "units_per_batch",
            "show_source",
            "show_reference",
            "assignment_timeout_minutes",
            "seed",
            "systems",
            "allocation",
            "allocation_params",
            "stopped_at",
            "stopped_by",
            "stop_reason",
            "created_at",
            "n_units",
            "plan_status",
            "plan_done",
            "plan_total",
        ]
        ref_name = "Campaign"

    @extend_schema_field(CriterionSerializer(many=True))
    def get_criteria_config(self, campaign: Campaign) -> list[dict]:
        return campaign.criteria_configs()

    @extend_schema_field(
        serializers.DictField(
            help_text="The protocol's own settings, defaults filled in (docs/reference/campaign-files.md)."
        )
    )
    def get_options(self, campaign: Campaign) -> dict:
        protocol = protocols.of(campaign)
        return {o.name: protocol.option(campaign, o.name) for o in protocol.options}

    def to_representation(self, campaign: Campaign) -> dict:
        data = super().to_representation(campaign)
        # Each option also at the top level, where clients read `tuple_size`, `severities`, ... before
        # `options` existed; `options` is what to read.
        return {**data, **{k: v for k, v in data["options"].items() if k not in data}}

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_stop_reason(self, campaign: Campaign) -> str | None:
        # A researcher's free text may name systems: not for annotators.
        if campaign.dataset.project_id in self.context.get("blind", ()):
            return None
        return campaign.stop_reason

    @extend_schema_field(serializers.ListField(child=serializers.CharField(), allow_null=True))
    def get_systems(self, campaign: Campaign) -> list[str] | None:
        if campaign.dataset.project_id in self.context.get("blind", ()):
            return None
        return sorted(s.name for s in campaign.systems.all())


class CampaignListApi(ApiAuthMixin, APIView):
    class FilterSerializer(serializers.Serializer):
        dataset = id_field()

        class Meta:
            ref_name = "CampaignFilter"

    class InputSerializer(serializers.Serializer):
        dataset = id_field(required=True)
        name = serializers.CharField(min_length=1, max_length=200)
        public_title = serializers.CharField(
            required=False, allow_blank=True, max_length=200, help_text="The title annotators see (empty: the name)."
        )
        protocol = serializers.ChoiceField(choices=[])  # the registry's, when the serializer is made
        criteria = serializers.ListField(
            child=serializers.CharField(min_length=1, max_length=100), min_length=1, max_length=50
        )
        scale_min = serializers.FloatField(required=False, allow_null=True)
        scale_max = serializers.FloatField(required=False, allow_null=True)
        instructions = serializers.CharField(required=False, allow_blank=True, max_length=100_000)
        redundancy = serializers.IntegerField(required=False, min_value=1, max_value=SMALLINT_MAX)
        options = serializers.DictField(
            required=False,
            help_text="The protocol's own settings (RankME anchor_value and tuple_size, "
            "severities, MQM typology and mqm_weights, pairwise pair_rounds, ...): "
            "see GET /api/campaigns/schema/ or docs/reference/campaign-files.md. Each "
            "may also be given at the top level, as before.",
        )
        systems = serializers.ListField(
            child=serializers.CharField(max_length=200),
            required=False,
            max_length=1000,
            help_text="System names; all systems when absent.",
        )
        criteria_config = CriterionSerializer(many=True, required=False, max_length=50)
        units_per_batch = serializers.IntegerField(required=False, min_value=1, max_value=10_000)
        show_source = serializers.BooleanField(required=False)
        show_reference = serializers.BooleanField(required=False)
        assignment_timeout_minutes = serializers.IntegerField(required=False, min_value=1, max_value=7 * 24 * 60)
        seed = serializers.IntegerField(required=False, min_value=0, max_value=2**62)
        allocation = serializers.ChoiceField(
            choices=Campaign.Allocation.choices,
            required=False,
            help_text="How units are handed out (default overlap-first).",
        )
        allocation_params = serializers.DictField(
            required=False, help_text="Adaptive only: min_per_system, alpha, stable_checks, check_every."
        )
        prefill_run = serializers.IntegerField(
            required=False,
            allow_null=True,
            min_value=1,
            help_text="Span protocols (ESA^AI): a done run whose spans become suggestions (llm-judge spans mode, "
            "minwed/mincer, nli).",
        )
        prefill_holdout = serializers.FloatField(
            required=False,
            min_value=0,
            max_value=0.999999,
            help_text="With prefill_run: the random share of outputs shown without suggestions.",
        )

        class Meta:
            ref_name = "CampaignCreate"

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # Registered protocols are a setting (WORKBENCH_PROTOCOLS), read when the request comes.
            self.fields["protocol"].choices = protocols.choices()

        def to_internal_value(self, data):
            value = super().to_internal_value(data)
            # Options at the top level (as before `options`): moved into it; the protocol checks them.
            legacy = {o.name for o in protocols.option_union()} & set(data)
            if legacy:
                value["options"] = {**{k: data[k] for k in legacy}, **value.get("options", {})}
            return value

    @extend_schema(
        operation_id="campaigns_list", parameters=[FilterSerializer], responses=paginated(CampaignOutputSerializer)
    )
    def get(self, request: Request) -> Response:
        filters = validated_filters(self.FilterSerializer, request)
        campaigns = campaign_list(user=request.user, dataset_id=filters.get("dataset"))
        return paginated_response(
            queryset=campaigns.prefetch_related("systems"),
            serializer_class=CampaignOutputSerializer,
            request=request,
            view=self,
            context={"blind": blind_project_ids(user=request.user)},
        )

    @extend_schema(operation_id="campaigns_create", request=InputSerializer, responses={201: CampaignOutputSerializer})
    def post(self, request: Request) -> Response:
        """Create a campaign on a dataset (owners and researchers of its project). A campaign file
        (export_dataset's campaign.json, whose `dataset` is a name, not an id) is taken as well."""
        if isinstance(request.data, dict) and isinstance(request.data.get("dataset"), str):
            return self._from_file(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        dataset = dataset_list(user=request.user).filter(pk=data.pop("dataset")).first()
        if dataset is None:
            raise NotFound()
        require_staff(user=request.user, project=dataset.project)
        if "criteria_config" in data:
            data["criteria_config"] = [dict(c) for c in data["criteria_config"]]
        campaign = campaign_create(dataset=dataset, **data)
        return Response(CampaignOutputSerializer(campaign).data, status=status.HTTP_201_CREATED)

    def _from_file(self, request: Request) -> Response:
        datasets = dataset_list(user=request.user)
        dataset = datasets.filter(name=request.data["dataset"]).first()
        if dataset is None:
            raise NotFound()
        require_staff(user=request.user, project=dataset.project)
        campaign = campaign_create_from_file(config=request.data, datasets=datasets.filter(pk=dataset.pk))
        return Response(CampaignOutputSerializer(campaign).data, status=status.HTTP_201_CREATED)


class CampaignSchemaApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="campaigns_schema", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        """The JSON Schema of campaign files (what POST /api/campaigns/ takes as a campaign.json), for
        those who may set up campaigns (owners and researchers); annotators reach only their work."""
        if not staff_project_list(user=request.user).exists():
            raise NotFound()
        return Response(campaign_file_schema())


class CampaignDetailApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="campaigns_retrieve", responses=CampaignOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        campaign = get_object_or_404(campaign_list(user=request.user), pk=pk)
        context = {"blind": blind_project_ids(user=request.user)}
        return Response(CampaignOutputSerializer(campaign, context=context).data)


class BlindOutputSerializer(serializers.Serializer):
    """An output as shown to annotators: no system name, so judging stays blind."""

    id = OutputRefField(
        help_text="Annotators: an opaque handle, valid in this assignment only; owners and "
        "researchers: the output id. Send it back as is."
    )
    text = serializers.CharField()
    suggestions = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="ESA^AI campaigns: suggested spans ({start, end, severity, missing}); name one in an answered "
        'span as "suggestion": its index, to accept or edit it; a suggestion no span names is deleted.',
    )

    class Meta:
        ref_name = "BlindOutput"


class AssignmentItemSerializer(serializers.Serializer):
    id = OutputRefField(help_text="Annotators: an opaque handle; owners and researchers: the item id.")
    external_id = serializers.CharField(allow_blank=True, help_text="Empty for annotators.")
    source = serializers.CharField(help_text="Empty when the campaign does not show the input.")
    data = serializers.JSONField()
    references = ReferenceOutputSerializer(many=True, help_text="Empty unless the campaign shows references.")
    outputs = BlindOutputSerializer(many=True, help_text="The unit's outputs, in the order to show them.")
    media = serializers.JSONField(
        required=False,
        help_text="The item's media the campaign shows, by role (source, reference): type, mime, alt; the "
        "file is GET /annotate/assignments/{id}/media/{role}/ (range requests answered). Empty: none.",
    )

    class Meta:
        ref_name = "AssignmentItem"


class AssignmentOutputSerializer(serializers.ModelSerializer):
    campaign = serializers.IntegerField(source="campaign_id", read_only=True)
    annotator = serializers.IntegerField(source="annotator_id", read_only=True)
    annotator_name = serializers.CharField(source="annotator.name", read_only=True)
    item = serializers.IntegerField(source="item_id", read_only=True)
    # Researchers only: control units (annotations.quality) are created during the campaign, so their
    # ids would tell an annotator which units are controls.
    unit = serializers.SerializerMethodField()

    class Meta:
        model = Assignment
        fields = [
            "id",
            "campaign",
            "annotator",
            "annotator_name",
            "item",
            "unit",
            "status",
            "seq",
            "shown_order",
            "expires_at",
            "completed_at",
            "time_spent_ms",
            "created_at",
        ]
        ref_name = "Assignment"

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_unit(self, assignment: Assignment) -> int | None:
        staff = self.context.get("staff_projects") or ()
        return assignment.unit_id if assignment.campaign.dataset.project_id in staff else None


class AnchorSerializer(serializers.Serializer):
    text = serializers.CharField()
    value = serializers.FloatField()

    class Meta:
        ref_name = "RankMEAnchor"


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField(help_text="Units you finished in this campaign.")
    batch = serializers.IntegerField()
    batch_done = serializers.IntegerField()
    batch_size = serializers.IntegerField()

    class Meta:
        ref_name = "AnnotatorProgress"


class ContextSegmentSerializer(serializers.Serializer):
    source = serializers.CharField(allow_blank=True, help_text="Empty when the campaign does not show the input.")
    references = serializers.ListField(
        child=serializers.CharField(), help_text="Empty unless the campaign shows references."
    )
    outputs = serializers.ListField(
        child=serializers.CharField(allow_null=True),
        help_text="The segment's outputs of the systems of the unit's outputs, in the unit's order "
        "(null: that system has none).",
    )

    class Meta:
        ref_name = "ContextSegment"


class DocumentContextSerializer(serializers.Serializer):
    before = ContextSegmentSerializer(many=True, help_text="The previous segments of the document, in order.")
    after = ContextSegmentSerializer(many=True, help_text="The next segments of the document, in order.")

    class Meta:
        ref_name = "DocumentContext"


class DocumentSegmentSerializer(serializers.Serializer):
    source = serializers.CharField(allow_blank=True, help_text="Empty when the campaign does not show the input.")
    references = serializers.ListField(
        child=serializers.CharField(), help_text="Empty unless the campaign shows references."
    )
    outputs = output_ref_list(
        help_text="The segment's outputs (as in `item.outputs`) in the order to show them; each is judged."
    )

    class Meta:
        ref_name = "DocumentSegment"


class NextAssignmentOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    campaign = serializers.IntegerField()
    unit = serializers.IntegerField(allow_null=True)
    annotator = serializers.IntegerField()
    annotator_name = serializers.CharField()
    status = serializers.CharField()
    seq = serializers.IntegerField(help_text="Your n-th unit in this campaign (0-based).")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    shown_order = output_ref_list(
        help_text="The outputs (handles or ids, as in `item.outputs`) in the order to show them (report it back as is)."
    )
    item = AssignmentItemSerializer()
    anchor = AnchorSerializer(allow_null=True, help_text="RankME: the reference shown with its fixed magnitude.")
    context = DocumentContextSerializer(
        allow_null=True,
        help_text="Campaigns with context window: the neighbouring segments of the item's document, "
        "shown but not judged; null otherwise.",
    )
    document = DocumentSegmentSerializer(
        many=True,
        allow_null=True,
        help_text="Campaigns with context document, a unit of several segments: its segments in document "
        "order, every output judged (answered per output, as in `item.outputs`); null otherwise.",
    )
    draft = serializers.JSONField()
    progress = ProgressSerializer()

    class Meta:
        ref_name = "NextAssignment"


class NextAssignmentApi(JsonOnlyMixin, ApiAuthMixin, APIView):
    @extend_schema(
        operation_id="campaigns_next_assignment",
        request=None,
        responses={
            201: NextAssignmentOutputSerializer,
            200: OpenApiResponse(NextAssignmentOutputSerializer, description="Your pending assignment, unchanged."),
            204: OpenApiResponse(description="Nothing left for you in this campaign."),
        },
    )
    @clock_after_response
    @unit_response_floor
    def post(self, request: Request, pk: int) -> Response:
        """Hand the next unit of the campaign to the requesting member.

        Your pending assignment if you have one (200), else a new one (201);
        204 when every unit has its k annotators or was already yours. The
        outputs come in the order to show them, without system names.
        """
        data, code = next_assignment_answer(user=request.user, campaign_id=pk)
        return Response(data, status=code)


def next_assignment_answer(*, user, campaign_id: int) -> tuple[dict | None, int]:
    """NextAssignmentApi's answer (body or None, status); also served by `annotations.apis.fastlane`."""
    # The campaign, the caller's role and annotator in one query (404 for non-members).
    campaign = campaign_for_member(user=user, campaign_id=campaign_id)
    if campaign is None or campaign.member_role is None:
        raise NotFound()
    annotator = campaign.member_annotator or annotator_get_or_create(
        project=campaign.project, name=user.get_username(), user=user
    )
    assignment, created = assignment_next(campaign=campaign, annotator=annotator)
    if assignment is None:
        # Nothing left: the last (partial) batch gets its completion code now, in this write,
        # so that reading it (GET .../completion-code/) never has to write.
        completion_code_at_batch_end(campaign=campaign, annotator=annotator, finished=True)
        return None, status.HTTP_204_NO_CONTENT
    payload = _assignment_payload(assignment, campaign=campaign, annotator=annotator, role=campaign.member_role)
    return payload, status.HTTP_201_CREATED if created else status.HTTP_200_OK


def _assignment_payload(assignment: Assignment, *, campaign: Campaign, annotator, role) -> dict:
    # Built field by field to the documented shape (NextAssignmentOutputSerializer, checked in the
    # tests); rendering it directly saves running the nested serializers per request.
    assignment.campaign, assignment.annotator = campaign, annotator
    enrolment = getattr(assignment, "enrolment", None) or enrolment_for(campaign=campaign, annotator=annotator)
    staff = role in STAFF_ROLES
    payload = assignment_payload(assignment=assignment, enrolment=enrolment, show_unit=staff)
    # Annotators see handles, never output or item ids (annotations.services.handles).
    return payload if staff else payload_for_annotator(payload)


def _next_payload(*, campaign: Campaign, annotator, role) -> dict | None:
    """The annotator's next unit for a submit with `next`, or None when nothing is left."""
    assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
    if assignment is None:
        return None
    return _assignment_payload(assignment, campaign=campaign, annotator=annotator, role=role)


def _own_assignment(user, pk: int) -> Assignment:
    """The caller's own assignment (404 for anyone else's), still in a project they belong to."""
    assignment = own_assignment(user=user, assignment_id=pk)
    if assignment is None or assignment.member_role is None:
        raise NotFound()
    return assignment


def _submit_body_plain(data) -> dict | None:
    """The submit body as `UnitSubmitApi.InputSerializer` validates it, checked by hand for the shape
    every client sends (JSON types, nothing to coerce), or None for anything else, which the
    serializer then checks (and words the refusal). Running the serializer was a tenth of a worker's
    CPU on the annotation hot path (issue 25's profile): it deep-copies its fields on every request."""
    if type(data) is not dict:
        return None
    judgements = data.get("judgements")
    if type(judgements) is not list or not 1 <= len(judgements) <= 500:
        return None
    if any(type(answer) is not dict for answer in judgements):
        return None
    body = {"judgements": [dict(answer) for answer in judgements], "next": False}
    if "shown_order" in data:
        order = data["shown_order"]
        if order is not None:
            if type(order) is not list or len(order) > 100:
                return None
            for ref in order:
                if not ((type(ref) is int and 1 <= ref <= MAX_ID) or (type(ref) is str and len(ref) <= 64)):
                    return None
            order = list(order)
        body["shown_order"] = order
    if "time_spent_ms" in data:
        spent = data["time_spent_ms"]
        if spent is not None and not (type(spent) is int and 0 <= spent <= 2**31 - 1):
            return None
        body["time_spent_ms"] = spent
    if "listened_ms" in data:
        listened = data["listened_ms"]
        if listened is not None and not (type(listened) is int and 0 <= listened <= LISTENED_MAX_MS):
            return None
        body["listened_ms"] = listened
    if "next" in data:
        if type(data["next"]) is not bool:
            return None
        body["next"] = data["next"]
    return body


def _submit_body(data, serializer_class) -> dict:
    """The validated submit body (`_submit_body_plain`, else the serializer's verdict)."""
    body = _submit_body_plain(data)
    if body is None:
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        body = serializer.validated_data
    return body


class UnitSubmitApi(JsonOnlyMixin, ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        judgements = serializers.ListField(
            child=serializers.DictField(),
            min_length=1,
            max_length=500,
            help_text=(
                "One object per answer. Likert / RankME: {criterion, output, score}; ESA: {criterion, output, "
                "score, spans: [{start, end, severity} | {missing: true, severity}]}; pairwise: {criterion, "
                "winner: a|b|tie} (a = the output shown first); best-worst: {criterion, best, worst}."
            ),
        )
        shown_order = output_ref_list(required=False, allow_null=True, max_length=100)
        time_spent_ms = serializers.IntegerField(
            required=False, allow_null=True, min_value=0, max_value=2**31 - 1, help_text=TIME_SPENT_HELP
        )
        listened_ms = serializers.IntegerField(
            required=False,
            allow_null=True,
            min_value=0,
            max_value=LISTENED_MAX_MS,
            help_text="Milliseconds of the unit's audio the annotator played (media items); kept with the unit "
            "when no more than the time on it allows at 1.5x speed.",
        )
        next = serializers.BooleanField(
            required=False,
            default=False,
            help_text="Also hand out your next unit, as next-assignment does, in the answer's `next`: "
            "one request per unit instead of two.",
        )

        class Meta:
            ref_name = "UnitSubmit"

    class OutputSerializer(serializers.Serializer):
        assignment = AssignmentOutputSerializer()
        judgements = serializers.IntegerField(help_text="Judgements stored.")
        retry = serializers.BooleanField(
            help_text="A tutorial unit answered wrongly: read the explanation and answer again (nothing was counted)."
        )
        explanation = serializers.CharField(allow_blank=True, help_text="Why the answer was not accepted (tutorial).")
        problems = serializers.ListField(child=serializers.CharField())
        completion_code = serializers.CharField(
            allow_null=True, help_text="The code to paste into the crowd platform, at the end of a batch."
        )
        next = serializers.JSONField(
            required=False,  # no allow_null: DRF would then add the key (null) to every answer
            help_text="With `next: true`: your next unit, shaped as next-assignment's answer "
            "(NextAssignment), or null when nothing is left for you; absent otherwise.",
        )

        class Meta:
            ref_name = "UnitSubmitResult"

    @extend_schema(operation_id="assignments_submit", request=InputSerializer, responses={201: OutputSerializer})
    @clock_after_response
    @unit_response_floor
    def post(self, request: Request, pk: int) -> Response:
        """Submit every judgement of one of your units in one atomic request.

        Every criterion must be answered (for every output of the unit, for
        rating and ESA protocols); the unit is then done. 400 names the first
        problem and stores nothing.
        """
        body = _submit_body(request.data, self.InputSerializer)
        data, code = unit_submit_answer(user=request.user, assignment_id=pk, body=body)
        return Response(data, status=code)


def unit_submit_answer(*, user, assignment_id: int, body: dict) -> tuple[dict, int]:
    """UnitSubmitApi's answer (body, status) to a validated body; also served by
    `annotations.apis.fastlane`."""

    def answer(assignment):
        # Handles (and, for owners and researchers, ids) to ids, here at the boundary.
        return unit_submission_translate(
            handles_for(assignment, allow_ids=assignment.member_role in STAFF_ROLES),
            judgements=body["judgements"],
            shown_order=body.get("shown_order"),
        )

    # Found, checked as the caller's (404 otherwise) and locked by the submit's first statement.
    result = unit_submit_own(
        user=user,
        assignment_id=assignment_id,
        answer=answer,
        time_spent_ms=body.get("time_spent_ms"),
        listened_ms=body.get("listened_ms"),
        origin=JudgementBase.Origin.API,
        and_next=body["next"],
    )
    assignment = result.assignment
    staff = assignment.member_role in STAFF_ROLES
    code = None
    if assignment.codes_on and not result.retry:
        code = completion_code_at_batch_end(campaign=assignment.campaign, annotator=assignment.annotator)
    # Built to the documented shape (OutputSerializer, checked in the tests) without running the
    # nested model serializer, which introspected the model's fields on every submit.
    brief = assignment_brief(assignment=assignment, show_unit=staff)
    data = {
        "assignment": brief if staff else brief_for_annotator(brief),
        "judgements": result.judgements,
        "retry": result.retry,
        "explanation": result.explanation,
        "problems": [str(problem) for problem in result.problems],
        "completion_code": code.code if code else None,
    }
    if body["next"] and result.next_assignment is not None:
        # Handed out by the submit's own transaction (`unit_submit_own`'s `and_next`).
        data["next"] = _assignment_payload(
            result.next_assignment,
            campaign=assignment.campaign,
            annotator=assignment.annotator,
            role=assignment.member_role,
        )
    elif body["next"]:
        # A tutorial unit answered wrongly stays the pending one: `next` hands it out again.
        data["next"] = _next_payload(
            campaign=assignment.campaign, annotator=assignment.annotator, role=assignment.member_role
        )
    return data, status.HTTP_200_OK if result.retry else status.HTTP_201_CREATED


class AssignmentReleaseApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="assignments_release", request=None, responses={200: AssignmentOutputSerializer})
    def post(self, request: Request, pk: int) -> Response:
        """Give one of your pending units back (skip it): it returns to the pool,
        answers already sent for it are kept as abandoned, and you will not get
        it again."""
        assignment = _own_assignment(request.user, pk)
        staff = assignment.member_role in STAFF_ROLES
        assignment = assignment_release(assignment_id=assignment.pk, annotator=assignment.annotator)
        assignment = Assignment.objects.select_related("annotator").get(pk=assignment.pk)
        data = AssignmentOutputSerializer(assignment).data
        return Response(data if staff else brief_for_annotator(data))


class AssignmentDraftApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        draft = serializers.JSONField(help_text="Anything the client needs to restore a half-finished unit.")

        class Meta:
            ref_name = "AssignmentDraft"

    @extend_schema(operation_id="assignments_draft", request=InputSerializer, responses={204: None})
    def put(self, request: Request, pk: int) -> Response:
        """Save the half-finished answers of one of your pending units (and keep it from timing out)."""
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        draft = serializer.validated_data["draft"]
        if len(json.dumps(draft)) > DRAFT_MAX_BYTES:
            raise ValidationError({"draft": f"A draft holds at most {DRAFT_MAX_BYTES} bytes."})
        assignment = _own_assignment(request.user, pk)
        assignment_draft_save(assignment_id=assignment.pk, annotator=assignment.annotator, draft=draft)
        return Response(status=status.HTTP_204_NO_CONTENT)


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
        assignments = assignment_list(
            user=request.user, campaign_id=filters.get("campaign"), status=filters.get("status")
        )
        # Counted up to LIST_COUNT_CAP: a full count of a million assignments took 3.8-5.9 s (bench_pages at 1M).
        paginator = BoundedPagination()
        page = paginator.paginate_queryset(
            assignments.select_related("campaign__dataset").order_by("campaign_id", "id"), request, view=self
        )
        staff = set(staff_project_list(user=request.user).values_list("id", flat=True))
        rows = AssignmentOutputSerializer(page, many=True, context={"staff_projects": staff}).data
        # An annotator's own assignments: handles, never output or item ids.
        rows = [
            row if assignment.campaign.dataset.project_id in staff else brief_for_annotator(row)
            for row, assignment in zip(rows, page)
        ]
        return paginator.get_paginated_response(rows)


class CampaignProgressApi(ApiAuthMixin, APIView):
    @extend_schema(
        operation_id="campaigns_progress",
        responses={
            200: OpenApiResponse(
                description="Live progress for researchers: units, units by judgements done (0..k), units with k "
                "judgements (agreement), allocation policy and, under adaptive, the decided system pairs."
            )
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        """The campaign's progress (owners and researchers; 404 for annotators)."""

        campaign = campaign_for_staff(user=request.user, pk=pk)
        return Response(campaign_progress(campaign=campaign))


class CampaignStopApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=2000, help_text="Why the campaign stops (goes into the card).")

        class Meta:
            ref_name = "CampaignStop"

    @extend_schema(operation_id="campaigns_stop", request=InputSerializer, responses=CampaignOutputSerializer)
    def post(self, request: Request, pk: int) -> Response:
        """Stop the campaign early (owners and researchers): no new unit is handed out; pending units can
        still be submitted. The time and reason are recorded for the dataset card."""

        campaign = campaign_for_staff(user=request.user, pk=pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        campaign = campaign_stop(campaign=campaign, reason=serializer.validated_data["reason"])
        context = {"blind": blind_project_ids(user=request.user)}
        return Response(CampaignOutputSerializer(campaign, context=context).data)
