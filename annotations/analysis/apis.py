"""Agreement, metric-human correlation and rankings through the REST API (researchers only).

GET /api/campaigns/{id}/agreement/?criterion=C&annotators=included|all&bootstrap=N
GET /api/campaigns/{id}/correlation/?metric=M&criterion=C&level=&method=&group_by=&normalize=&min_votes=&min_consensus=&compare=
GET /api/campaigns/{id}/rankings/?criterion=C&rule=wmt25|wmt25-ranges|wmt26|pairwise-ranges|mann-whitney&alpha=&resamples=&seed=&system=S...
GET /api/campaigns/{id}/mqm-errors/?criterion=C&annotators=&systems=a,b (MQM: errors by category and
    severity per system); with &system=S[&category=PATH][&severity=minor] the items behind one cell
The JSON is the one the `agreement` and `correlate` commands print. Above WORKBENCH_FIGURES_INLINE_MAX
judgements it is the figure a worker computed, with its status and age (`annotations.apis.figures`).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import campaign_for_staff
from annotations.analysis import cluster_rules, figure_jobs, report
from annotations.apis.figures import FIGURE_RESPONSES_HELP, figures_api, pending_response
from annotations.models import Campaign
from annotations.permissions import ApiAuthMixin


def _campaign(request: Request, pk: int) -> Campaign:
    return campaign_for_staff(user=request.user, pk=pk)


class AgreementQuery(serializers.Serializer):
    criterion = serializers.CharField(required=False, max_length=100)
    annotators = serializers.ChoiceField(choices=["included", "all"], default="included")
    bootstrap = serializers.IntegerField(min_value=0, max_value=1000, default=200)
    seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, default=0)


class CorrelationQuery(serializers.Serializer):
    metric = serializers.CharField(max_length=64)
    criterion = serializers.CharField(max_length=100)
    level = serializers.ChoiceField(choices=["segment", "system"], default="segment")
    method = serializers.ChoiceField(
        choices=report.CORRELATION_METHODS,
        default="pearson",
    )
    group_by = serializers.ChoiceField(choices=["none", "item", "system"], default="none")
    normalize = serializers.ChoiceField(choices=["none", "z"], default="none")
    min_votes = serializers.IntegerField(min_value=0, default=1)
    min_consensus = serializers.FloatField(min_value=0, max_value=1, default=0.0)
    compare = serializers.CharField(required=False, max_length=64)
    annotators = serializers.ChoiceField(choices=["included", "all"], default="included")
    bootstrap = serializers.IntegerField(min_value=0, max_value=1000, default=200)
    seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, default=0)
    # The alternative annotator test (method=alt-test), as `correlate --method alt-test`.
    epsilon = serializers.FloatField(min_value=0, max_value=0.999999, default=0.2)
    alt_scoring = serializers.ChoiceField(choices=["accuracy", "neg_rmse"], required=False)
    q_fdr = serializers.FloatField(min_value=0.000001, max_value=0.999999, default=0.05)
    min_instances = serializers.IntegerField(min_value=2, max_value=1_000_000, default=30)


def _run(campaign: Campaign, name: str, params: dict):
    # An AnalysisError is a DomainError: the API's exception handler answers it 400.
    return figure_jobs.figure(campaign, name, params)


_RESPONSES = {200: OpenApiResponse(dict, description=FIGURE_RESPONSES_HELP)}


class AgreementApi(ApiAuthMixin, APIView):
    @extend_schema(
        parameters=[AgreementQuery],
        responses={**_RESPONSES, 202: pending_response()},
        summary="Inter-annotator agreement",
    )
    @figures_api
    def get(self, request: Request, pk: int) -> Response:
        campaign = _campaign(request, pk)
        q = AgreementQuery(data=request.query_params)
        q.is_valid(raise_exception=True)
        return Response(_run(campaign, "api-agreement", q.validated_data))


class CorrelationApi(ApiAuthMixin, APIView):
    @extend_schema(
        parameters=[CorrelationQuery],
        responses={**_RESPONSES, 202: pending_response()},
        summary="Metric-human correlation",
    )
    @figures_api
    def get(self, request: Request, pk: int) -> Response:
        campaign = _campaign(request, pk)
        q = CorrelationQuery(data=request.query_params)
        q.is_valid(raise_exception=True)
        return Response(_run(campaign, "api-correlation", q.validated_data))


class RankingsQuery(serializers.Serializer):
    criterion = serializers.CharField(required=False, max_length=100)
    rule = serializers.ChoiceField(choices=list(cluster_rules.RULES), default=cluster_rules.DEFAULT_RULE)
    alpha = serializers.FloatField(min_value=0.000001, max_value=0.5, default=cluster_rules.DEFAULT_ALPHA)
    resamples = serializers.IntegerField(min_value=1, max_value=10_000, default=cluster_rules.DEFAULT_RESAMPLES)
    seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, default=0)
    system = serializers.ListField(child=serializers.CharField(max_length=200), required=False)
    annotators = serializers.ChoiceField(choices=["included", "all"], default="included")


class RankingsApi(ApiAuthMixin, APIView):
    @extend_schema(
        parameters=[RankingsQuery],
        responses={**_RESPONSES, 202: pending_response()},
        summary="System rankings by humans and by each metric, with significance clusters; "
        "rank ranges and clusters under a named rule (rule_rankings)",
    )
    @figures_api
    def get(self, request: Request, pk: int) -> Response:
        campaign = _campaign(request, pk)
        data = {k: v for k, v in request.query_params.items() if k != "system"}
        if request.query_params.getlist("system"):
            data["system"] = request.query_params.getlist("system")
        q = RankingsQuery(data=data)
        q.is_valid(raise_exception=True)
        p = q.validated_data
        criterion = p.get("criterion") or None
        if criterion is not None and criterion not in campaign.criteria:
            raise ValidationError({"criterion": f"not one of the campaign's: {', '.join(campaign.criteria)}"})
        systems = sorted(set(p.get("system") or [])) or None
        return Response(_run(campaign, "api-rankings", {**p, "criterion": criterion, "system": systems}))


class MqmErrorsQuery(serializers.Serializer):
    criterion = serializers.CharField(required=False, max_length=100)
    annotators = serializers.ChoiceField(choices=["included", "all"], default="included")
    systems = serializers.CharField(required=False, max_length=10_000)
    system = serializers.CharField(required=False, max_length=200)
    category = serializers.CharField(required=False, max_length=400)
    severity = serializers.ChoiceField(choices=["neutral", "minor", "major", "critical"], required=False)


class MqmErrorsApi(ApiAuthMixin, APIView):
    @extend_schema(
        parameters=[MqmErrorsQuery],
        responses={**_RESPONSES, 202: pending_response()},
        summary="MQM errors by category and severity per system (counts, weighted penalties); "
        "with system=, the items behind one cell",
    )
    @figures_api
    def get(self, request: Request, pk: int) -> Response:
        campaign = _campaign(request, pk)
        q = MqmErrorsQuery(data=request.query_params)
        q.is_valid(raise_exception=True)
        p = q.validated_data
        criterion = p.get("criterion")
        if criterion is not None and criterion not in campaign.criteria:
            raise ValidationError({"criterion": f"not one of the campaign's: {', '.join(campaign.criteria)}"})
        if p.get("system"):
            return Response(_run(campaign, "api-mqm-error-items", p))
        systems = [s.strip() for s in p["systems"].split(",") if s.strip()] if p.get("systems") else None
        return Response(_run(campaign, "api-mqm-errors", {**p, "systems": systems}))
