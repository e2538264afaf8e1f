"""HTML pages."""
from django.urls import path

from annotations import views

urlpatterns = [
    path("", views.project_list, name="project-list"),
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path("datasets/upload/", views.dataset_upload, name="dataset-upload"),
    path("datasets/<int:pk>/", views.dataset_detail, name="dataset-detail"),
    path("items/<int:pk>/", views.item_detail, name="item-detail"),
    path("projects/<int:pk>/members/", views.project_members, name="project-members"),
    path("projects/<int:pk>/campaigns/new/", views.campaign_new, name="campaign-new"),
    path("campaigns/<int:pk>/", views.campaign_detail, name="campaign-detail"),
    path("campaigns/<int:pk>/progress.json", views.campaign_progress_json, name="campaign-progress"),
    path("campaigns/<int:pk>/judgements/", views.campaign_judgements, name="campaign-judgements"),
    path("annotate/", views.annotate_home, name="annotate-home"),
    path("annotate/campaigns/<int:pk>/", views.annotate_campaign, name="annotate-campaign"),
    path("annotate/assignments/<int:pk>/submit/", views.annotate_submit, name="annotate-submit"),
    path("annotate/assignments/<int:pk>/draft/", views.annotate_draft, name="annotate-draft"),
    path("annotate/assignments/<int:pk>/release/", views.annotate_release, name="annotate-release"),
]
