"""Admin pages of study links and their visitors (imported by annotations.admin)."""

from django.contrib import admin

from annotations.models import studies as models


@admin.register(models.JoinLink)
class JoinLinkAdmin(admin.ModelAdmin):
    list_display = ["campaign", "created_at", "max_annotators", "expires_at", "revoked_at"]
    list_select_related = ["campaign"]
    # The token is the link's only secret: shown, never edited.
    readonly_fields = ["token", "created_at"]
    raw_id_fields = ["campaign", "created_by"]


@admin.register(models.JoinParticipant)
class JoinParticipantAdmin(admin.ModelAdmin):
    list_display = ["campaign", "annotator", "platform", "first_seen", "last_seen"]
    list_filter = ["platform"]
    list_select_related = ["campaign", "annotator"]
    raw_id_fields = ["link", "campaign", "annotator"]
