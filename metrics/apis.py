"""REST API of metric runs: start, list, read (with progress), cancel, re-run,
and the per-output scores. Owners and researchers of the dataset's project
only: annotators and non-members get 404 (annotators never see scores)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import dataset_for_staff, require_staff
from annotations.apis.common import paginated, paginated_response
from annotations.permissions import ApiAuthMixin
from annotations.selectors import dataset_list
from metrics.models import MetricRun, OutputScore, RunStatus
from metrics.selectors import run_list, run_scores, run_waiting, system_scores, with_progress
from metrics.services import run_cancel, run_create, run_rerun
from metrics.services.runs import MAX_CHUNK_SIZE


class MetricRunOutputSerializer(serializers.ModelSerializer):
    dataset = serializers.IntegerField(source="dataset_id", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    percent = serializers.SerializerMethodField()
    scoring = serializers.SerializerMethodField(
        help_text="Outputs scored so far in chunks still running (model metrics report each batch); "
        "not yet stored, so not in `done`."
    )
    progress_percent = serializers.SerializerMethodField(
        help_text="Share of the outputs scored, stored or still in a running chunk (`done` + `scoring`)."
    )
    waiting = serializers.SerializerMethodField(
        help_text='Why an active run is not being scored, e.g. "queued: waiting for a worker of the gpu '
        'queue; 3 tasks of earlier runs ahead"; null while a chunk is scored or once it ended.'
    )
    system_scores = serializers.SerializerMethodField(
        help_text="Done runs: each system's score, the metric's own corpus-level score over the system's "
        "outputs (what the rankings page, `correlate --level system` and the export's card show), "
        "with `label` saying what it is; null before the run is done."
    )

    class Meta:
        model = MetricRun
        fields = [
            "id",
            "dataset",
            "metric",
            "options",
            "signature",
            "higher_is_better",
            "status",
            "sync",
            "total",
            "done",
            "percent",
            "scoring",
            "progress_percent",
            "waiting",
            "chunk_size",
            "corpus",
            "system_scores",
            "error",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]
        ref_name = "MetricRun"

    def get_percent(self, run: MetricRun) -> float:
        return round(100 * run.done / run.total, 1) if run.total else 0.0

    def get_scoring(self, run: MetricRun) -> int:
        if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return 0
        scoring = getattr(run, "scoring", None)
        return scoring if scoring is not None else with_progress(MetricRun.objects.filter(pk=run.pk)).get().scoring

    def get_progress_percent(self, run: MetricRun) -> float:
        scored = min(run.total, run.done + self.get_scoring(run))
        return round(100 * scored / run.total, 1) if run.total else 0.0

    def get_waiting(self, run: MetricRun) -> str | None:
        return run_waiting(run=run)

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "label": {"type": "string"},
                "aggregate": {"type": "string"},
                "scores": {"type": "object", "additionalProperties": {"type": "number", "nullable": True}},
            },
        }
    )
    def get_system_scores(self, run: MetricRun) -> dict | None:
        return system_scores(run=run).as_dict() if run.status == RunStatus.DONE else None


class OutputScoreSerializer(serializers.ModelSerializer):
    item = serializers.IntegerField(source="output.item_id", read_only=True)
    external_id = serializers.CharField(source="output.item.external_id", read_only=True)
    system = serializers.CharField(source="output.system.name", read_only=True)

    class Meta:
        model = OutputScore
        fields = ["output", "item", "external_id", "system", "score", "extra"]
        ref_name = "OutputScore"


def _staff_dataset(request: Request, pk: int):
    return dataset_for_staff(user=request.user, pk=pk)


def _staff_run(request: Request, pk: int) -> MetricRun:
    run = get_object_or_404(
        with_progress(
            MetricRun.objects.filter(dataset__in=dataset_list(user=request.user)).select_related(
                "dataset__project", "created_by"
            )
        ),
        pk=pk,
    )
    require_staff(user=request.user, project=run.dataset.project)
    return run


class MetricRunListApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        metric = serializers.CharField(max_length=64)
        options = serializers.DictField(
            child=serializers.JSONField(),
            required=False,
            default=dict,
            help_text='Metric options, e.g. {"model": "all-MiniLM-L6-v2", "idf": true}.',
        )
        chunk_size = serializers.IntegerField(min_value=1, max_value=MAX_CHUNK_SIZE, required=False)
        rerun = serializers.BooleanField(
            required=False, default=False, help_text="Compute again even if an identical run is done."
        )

        class Meta:
            ref_name = "MetricRunStart"

    @extend_schema(operation_id="metric_runs_list", responses=paginated(MetricRunOutputSerializer))
    def get(self, request: Request, pk: int) -> Response:
        dataset = _staff_dataset(request, pk)
        return paginated_response(
            queryset=run_list(dataset=dataset), serializer_class=MetricRunOutputSerializer, request=request, view=self
        )

    @extend_schema(
        operation_id="metric_runs_start",
        request=InputSerializer,
        responses={201: MetricRunOutputSerializer, 200: MetricRunOutputSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        """Start a run over every output of the dataset (201), or answer the
        identical done run (200) unless `rerun`. Bad metric names or options: 400."""
        dataset = _staff_dataset(request, pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if len(data["options"]) > 50:
            raise ValidationError({"options": ["too many options"]})
        # A RunInputError is a DomainError: the API's exception handler answers it 400.
        run, reused = run_create(
            dataset=dataset,
            metric=data["metric"],
            options=data["options"],
            user=request.user,
            chunk_size=data.get("chunk_size"),
            reuse=not data["rerun"],
        )
        return Response(
            MetricRunOutputSerializer(run).data, status=status.HTTP_200_OK if reused else status.HTTP_201_CREATED
        )


class MetricRunDetailApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="metric_runs_retrieve", responses=MetricRunOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(MetricRunOutputSerializer(_staff_run(request, pk)).data)


class MetricRunCancelApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="metric_runs_cancel", request=None, responses=MetricRunOutputSerializer)
    def post(self, request: Request, pk: int) -> Response:
        """Cancel a queued or running run (409 if it has already ended)."""
        run = _staff_run(request, pk)
        if not run_cancel(run=run):
            return Response({"detail": f"run {run.pk} is already {run.status}"}, status=status.HTTP_409_CONFLICT)
        return Response(MetricRunOutputSerializer(run).data)


class MetricRunRerunApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="metric_runs_rerun", request=None, responses={201: MetricRunOutputSerializer})
    def post(self, request: Request, pk: int) -> Response:
        """A new run with the same metric and options (never reused)."""
        run = _staff_run(request, pk)
        new = run_rerun(run=run, user=request.user)
        return Response(MetricRunOutputSerializer(new).data, status=status.HTTP_201_CREATED)


class MetricRunScoresApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="metric_runs_scores", responses=paginated(OutputScoreSerializer))
    def get(self, request: Request, pk: int) -> Response:
        """Per-output scores of the run, in the dataset's order (50 a page)."""
        run = _staff_run(request, pk)
        return paginated_response(
            queryset=run_scores(run=run), serializer_class=OutputScoreSerializer, request=request, view=self
        )
