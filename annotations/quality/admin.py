"""Admin pages of the quality-control models (imported by annotations.admin)."""

from django.contrib import admin

from annotations.models import quality as models


@admin.register(models.QualitySettings)
class QualitySettingsAdmin(admin.ModelAdmin):
    list_display = ["campaign", "degraded_share", "repeat_share", "degrade_strength", "completion_codes"]
    list_select_related = ["campaign"]


@admin.register(models.GoldUnit)
class GoldUnitAdmin(admin.ModelAdmin):
    list_display = ["campaign", "item", "mode", "position"]
    list_filter = ["mode"]
    raw_id_fields = ["item"]
    list_select_related = ["campaign", "item"]


@admin.register(models.ControlUnit)
class ControlUnitAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "kind", "batch", "unit"]
    list_filter = ["kind"]
    raw_id_fields = ["unit", "annotator", "source", "gold"]
    list_select_related = ["campaign", "annotator"]


@admin.register(models.ControlJudgement)
class ControlJudgementAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "kind", "criterion", "passed", "attempt", "origin", "created_at"]
    list_filter = ["kind", "origin", "passed"]
    raw_id_fields = ["annotator", "control", "assignment", "item", "output"]
    list_select_related = ["campaign", "annotator"]


@admin.register(models.AnnotatorDecision)
class AnnotatorDecisionAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "included", "reason", "decided_by", "created_at"]
    raw_id_fields = ["annotator", "decided_by"]
    list_select_related = ["campaign", "annotator", "decided_by"]


@admin.register(models.CompletionCode)
class CompletionCodeAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "batch", "code", "passed", "created_at"]
    list_filter = ["passed"]
    raw_id_fields = ["annotator"]
    list_select_related = ["campaign", "annotator"]
