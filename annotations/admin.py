from django.contrib import admin

from annotations import models


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]


@admin.register(models.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role"]
    list_filter = ["role"]
    autocomplete_fields = ["project", "user"]


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "created_at"]
    search_fields = ["name"]
    list_select_related = ["project"]


@admin.register(models.Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["external_id", "dataset", "position"]
    search_fields = ["external_id", "source"]
    list_filter = ["dataset"]
    list_select_related = ["dataset"]


@admin.register(models.Reference)
class ReferenceAdmin(admin.ModelAdmin):
    list_display = ["item", "position", "text"]
    raw_id_fields = ["item"]
    list_select_related = ["item"]


@admin.register(models.System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset"]
    list_filter = ["dataset"]
    list_select_related = ["dataset"]


@admin.register(models.Output)
class OutputAdmin(admin.ModelAdmin):
    list_display = ["item", "system", "text"]
    raw_id_fields = ["item", "system"]
    search_fields = ["text", "item__external_id"]
    list_select_related = ["item", "system"]


@admin.register(models.Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "protocol", "redundancy"]
    list_filter = ["protocol"]
    list_select_related = ["dataset"]


@admin.register(models.Unit)
class UnitAdmin(admin.ModelAdmin):
    list_display = ["campaign", "item", "position", "kind", "n_taken", "n_done", "redundancy"]
    list_filter = ["kind"]
    raw_id_fields = ["item"]
    list_select_related = ["campaign", "item"]


@admin.register(models.Enrolment)
class EnrolmentAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "n_assigned", "n_done"]
    raw_id_fields = ["annotator"]
    list_select_related = ["campaign", "annotator"]


@admin.register(models.Annotator)
class AnnotatorAdmin(admin.ModelAdmin):
    list_display = ["name", "namespace", "project", "user"]
    list_filter = ["namespace"]
    search_fields = ["name"]
    list_select_related = ["project", "user"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "item", "unit", "status", "seq", "expires_at"]
    list_filter = ["status"]
    raw_id_fields = ["item", "annotator", "unit"]
    list_select_related = ["campaign", "annotator", "item"]


class JudgementAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "item", "criterion", "origin", "status", "created_at"]
    list_filter = ["origin", "status", "criterion"]
    list_select_related = ["campaign", "annotator", "item"]


@admin.register(models.RatingJudgement)
class RatingJudgementAdmin(JudgementAdmin):
    list_display = JudgementAdmin.list_display + ["score", "rank"]
    raw_id_fields = ["item", "output", "annotator", "assignment"]


@admin.register(models.PairwiseJudgement)
class PairwiseJudgementAdmin(JudgementAdmin):
    list_display = JudgementAdmin.list_display + ["winner"]
    raw_id_fields = ["item", "output_a", "output_b", "annotator", "assignment"]


@admin.register(models.BestWorstJudgement)
class BestWorstJudgementAdmin(JudgementAdmin):
    raw_id_fields = ["item", "best", "worst", "annotator", "assignment"]


class ErrorSpanInline(admin.TabularInline):
    model = models.ErrorSpan
    extra = 0


@admin.register(models.SpanJudgement)
class SpanJudgementAdmin(JudgementAdmin):
    list_display = JudgementAdmin.list_display + ["score"]
    raw_id_fields = ["item", "output", "annotator", "assignment"]
    inlines = [ErrorSpanInline]


@admin.register(models.PostEditJudgement)
class PostEditJudgementAdmin(JudgementAdmin):
    list_display = JudgementAdmin.list_display + ["score", "rating"]  # score: the HTER
    raw_id_fields = ["item", "output", "annotator", "assignment"]


@admin.register(models.ErrorSpan)
class ErrorSpanAdmin(admin.ModelAdmin):
    list_display = ["judgement", "start", "end", "severity", "missing"]
    raw_id_fields = ["judgement"]


@admin.register(models.SpanPrefill)
class SpanPrefillAdmin(admin.ModelAdmin):
    list_display = ["campaign", "metric", "run_id", "holdout", "created_at"]
    raw_id_fields = ["campaign"]


@admin.register(models.SpanSuggestion)
class SpanSuggestionAdmin(admin.ModelAdmin):
    list_display = ["campaign", "output", "position", "start", "end", "severity", "missing", "held_back"]
    raw_id_fields = ["campaign", "output"]


@admin.register(models.SuggestionDecision)
class SuggestionDecisionAdmin(admin.ModelAdmin):
    list_display = ["judgement", "suggestion", "decision", "start", "end", "severity", "missing"]
    list_filter = ["decision"]
    raw_id_fields = ["judgement", "suggestion"]


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["filename", "kind", "project", "user", "status", "phase", "created_at"]
    list_filter = ["status", "kind"]
    list_select_related = ["project", "user"]
    readonly_fields = ["errors", "result", "started_at", "finished_at"]


@admin.register(models.ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ["campaign", "user", "status", "progress", "created_at"]
    list_filter = ["status"]
    list_select_related = ["campaign", "user"]
    readonly_fields = ["options", "errors", "result", "archive", "size", "started_at", "finished_at"]


@admin.register(models.BackgroundAnswer)
class BackgroundAnswerAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "created_at"]
    list_select_related = ["campaign", "annotator"]
    raw_id_fields = ["campaign", "annotator"]


@admin.register(models.UnitNote)
class UnitNoteAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "item", "criterion", "special", "created_at"]
    list_select_related = ["campaign", "annotator", "item"]
    raw_id_fields = ["campaign", "annotator", "item", "assignment"]


class WorkerKeptAdmin(admin.ModelAdmin):
    """Read-only rows the database and the workers keep (issue 45): progress and dataset counters moved by triggers,
    figures computed by workers. A row added or changed by hand would make them wrong."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.UnitCount)
class UnitCountAdmin(WorkerKeptAdmin):
    list_display = ["campaign", "slot", "n_done", "units"]
    list_select_related = ["campaign"]


@admin.register(models.DatasetCount)
class DatasetCountAdmin(WorkerKeptAdmin):
    list_display = ["dataset", "n_items", "n_systems", "n_outputs", "n_references"]
    list_select_related = ["dataset"]


@admin.register(models.FigureSnapshot)
class FigureSnapshotAdmin(WorkerKeptAdmin):
    list_display = ["campaign", "name", "stamp", "computed_at", "wanted_at"]
    list_select_related = ["campaign"]
    exclude = ["value"]


@admin.register(models.FigureState)
class FigureStateAdmin(WorkerKeptAdmin):
    list_display = ["campaign", "queued_at", "running_since", "done", "total"]
    list_select_related = ["campaign"]


@admin.register(models.LoginLink)
class LoginLinkAdmin(admin.ModelAdmin):
    """Read-only: a link is issued where its token can be shown once (the members page,
    `add_member --links`); the admin sees only the hash."""

    list_display = ["user", "project", "created_by", "created_at", "expires_at", "used_at"]
    list_select_related = ["user", "project", "created_by"]
    readonly_fields = ["token_hash", "user", "project", "created_by", "expires_at", "used_at"]

    def has_add_permission(self, request) -> bool:
        return False


# Quality control (annotations.quality)
from annotations.quality import admin as quality_admin  # noqa: E402,F401

# Study links (annotations.studies)
from annotations.studies import admin as studies_admin  # noqa: E402,F401
