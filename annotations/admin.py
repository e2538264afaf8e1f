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


@admin.register(models.Annotator)
class AnnotatorAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "user"]
    search_fields = ["name"]
    list_select_related = ["project", "user"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "item", "status"]
    list_filter = ["status"]
    raw_id_fields = ["item", "annotator"]
    list_select_related = ["campaign", "annotator", "item"]


class JudgementAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "item", "criterion", "origin", "created_at"]
    list_filter = ["origin", "criterion"]
    list_select_related = ["campaign", "annotator", "item"]


@admin.register(models.RatingJudgement)
class RatingJudgementAdmin(JudgementAdmin):
    list_display = JudgementAdmin.list_display + ["score", "rank"]
    raw_id_fields = ["item", "output", "annotator"]


@admin.register(models.PairwiseJudgement)
class PairwiseJudgementAdmin(JudgementAdmin):
    list_display = JudgementAdmin.list_display + ["winner"]
    raw_id_fields = ["item", "output_a", "output_b", "annotator"]


@admin.register(models.BestWorstJudgement)
class BestWorstJudgementAdmin(JudgementAdmin):
    raw_id_fields = ["item", "best", "worst", "annotator"]


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["filename", "kind", "project", "user", "status", "phase", "created_at"]
    list_filter = ["status", "kind"]
    list_select_related = ["project", "user"]
    readonly_fields = ["errors", "result", "started_at", "finished_at"]
