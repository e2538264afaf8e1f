"""REST API routes of metric runs (mounted under /api/)."""

from django.urls import path

from metrics import apis

urlpatterns = [
    path("datasets/<int:pk>/metric-runs/", apis.MetricRunListApi.as_view(), name="api-metric-run-list"),
    path("metric-runs/<int:pk>/", apis.MetricRunDetailApi.as_view(), name="api-metric-run-detail"),
    path("metric-runs/<int:pk>/cancel/", apis.MetricRunCancelApi.as_view(), name="api-metric-run-cancel"),
    path("metric-runs/<int:pk>/rerun/", apis.MetricRunRerunApi.as_view(), name="api-metric-run-rerun"),
    path("metric-runs/<int:pk>/scores/", apis.MetricRunScoresApi.as_view(), name="api-metric-run-scores"),
]
