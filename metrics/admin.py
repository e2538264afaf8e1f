from django.contrib import admin

from .models import MetricChunk, MetricRun, OutputScore


class MetricChunkInline(admin.TabularInline):
    model = MetricChunk
    extra = 0
    fields = ("index", "status", "attempts", "worker", "error", "started_at", "finished_at")
    readonly_fields = fields
    can_delete = False


@admin.register(MetricRun)
class MetricRunAdmin(admin.ModelAdmin):
    list_display = ("id", "metric", "dataset", "status", "done", "total", "created_by", "created_at")
    list_filter = ("status", "metric")
    search_fields = ("metric", "signature", "dataset__name")
    raw_id_fields = ("dataset", "created_by")
    inlines = [MetricChunkInline]


@admin.register(MetricChunk)
class MetricChunkAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "index", "status", "attempts", "worker")
    list_filter = ("status",)
    raw_id_fields = ("run",)


@admin.register(OutputScore)
class OutputScoreAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "output", "score")
    raw_id_fields = ("run", "output")
