"""HTML pages."""

from django.urls import path

from annotations import views
from annotations.quality import views as quality
from annotations.studies import views as studies
from annotations.views import background, exports, figures, login_links, media, revise, waves

urlpatterns = [
    path("", views.project_list, name="project-list"),
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path("datasets/upload/", views.dataset_upload, name="dataset-upload"),
    path("datasets/<int:pk>/", views.dataset_detail, name="dataset-detail"),
    path("items/<int:pk>/", views.item_detail, name="item-detail"),
    path("items/<int:pk>/media/<str:role>/", media.item_media, name="item-media"),
    path("projects/<int:pk>/members/", views.project_members, name="project-members"),
    path("projects/<int:pk>/campaigns/new/", views.campaign_new, name="campaign-new"),
    path("campaigns/<int:pk>/", views.campaign_detail, name="campaign-detail"),
    path("campaigns/<int:pk>/progress.json", views.campaign_progress_json, name="campaign-progress"),
    path("campaigns/<int:pk>/figures/status.json", figures.figures_status, name="campaign-figures-status"),
    path("campaigns/<int:pk>/stop/", views.campaign_stop_view, name="campaign-stop"),
    path("campaigns/<int:pk>/judgements/", views.campaign_judgements, name="campaign-judgements"),
    path("campaigns/<int:pk>/judgements/import/", views.judgement_upload, name="campaign-judgements-import"),
    path("annotate/", views.annotate_home, name="annotate-home"),
    path("annotate/campaigns/<int:pk>/", views.annotate_campaign, name="annotate-campaign"),
    path("annotate/campaigns/<int:pk>/background/", background.annotate_background, name="annotate-background"),
    path("annotate/campaigns/<int:pk>/unit/", views.annotate_unit, name="annotate-unit"),
    path("annotate/assignments/<int:pk>/submit/", views.annotate_submit, name="annotate-submit"),
    path("annotate/assignments/<int:pk>/draft/", views.annotate_draft, name="annotate-draft"),
    path("annotate/assignments/<int:pk>/release/", views.annotate_release, name="annotate-release"),
    path("annotate/assignments/<int:pk>/media/<str:role>/", media.annotate_media, name="annotate-media"),
    # Reopening a finished unit of the batch in progress (annotations.services.revisions).
    path("annotate/assignments/<int:pk>/revise/", revise.annotate_revise, name="annotate-revise"),
    path("annotate/assignments/<int:pk>/revise/submit/", revise.annotate_revise_submit, name="annotate-revise-submit"),
    # Quality control (annotations.quality)
    path("campaigns/<int:pk>/quality/", quality.quality_page, name="campaign-quality"),
    path("campaigns/<int:pk>/quality/decide/", quality.quality_decide, name="campaign-quality-decide"),
    path("campaigns/<int:pk>/quality/settings/", quality.quality_settings, name="campaign-quality-settings"),
    path("campaigns/<int:pk>/quality/gold/", quality.quality_gold, name="campaign-quality-gold"),
    path("campaigns/<int:pk>/quality/verify/", quality.quality_verify_code, name="campaign-quality-verify"),
    path("campaigns/<int:pk>/quality/codes.csv", quality.quality_codes_csv, name="campaign-completion-codes-csv"),
    path("annotate/campaigns/<int:pk>/code/", quality.annotate_completion_code, name="annotate-completion-code"),
    # Crowd studies (annotations.studies): join links and the researchers' study-link section.
    path("join/done/", studies.join_done, name="join-done"),
    path("join/leave/", studies.join_leave_view, name="join-leave"),
    path("join/<str:token>/", studies.join, name="join"),
    path("campaigns/<int:pk>/join-links/new/", studies.join_link_new, name="campaign-join-link-new"),
    path("join-links/<int:pk>/revoke/", studies.join_link_revoke_view, name="join-link-revoke"),
    # Second waves (annotations.services.waves): researchers only.
    path("campaigns/<int:pk>/waves/new/", waves.wave_new, name="campaign-wave-new"),
    path("imports/<int:pk>/", views.import_job_detail, name="import-job-detail"),
    # One-time login links for accounts made by owners (annotations.services.login_links).
    path("login/<str:token>/", login_links.login_link, name="login-link"),
    path("accounts/password/set/", login_links.password_set, name="password-set"),
    # Exports (annotations.export): researchers only.
    path("campaigns/<int:pk>/export/", exports.campaign_export, name="campaign-export"),
    path("exports/<int:pk>/", exports.export_job_detail, name="export-job-detail"),
    path("exports/<int:pk>/download/", exports.export_job_download, name="export-job-download"),
]
