"""HTML pages."""
from django.urls import path

from annotations import views

urlpatterns = [
    path("", views.project_list, name="project-list"),
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path("datasets/upload/", views.dataset_upload, name="dataset-upload"),
    path("datasets/<int:pk>/", views.dataset_detail, name="dataset-detail"),
    path("items/<int:pk>/", views.item_detail, name="item-detail"),
    path("imports/<int:pk>/", views.import_job_detail, name="import-job-detail"),
]
