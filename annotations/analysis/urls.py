"""Analysis pages, mounted with the other HTML pages."""

from django.urls import path

from annotations.analysis import views

urlpatterns = [
    path("campaigns/<int:pk>/analysis/", views.dashboard, name="analysis-dashboard"),
    path("campaigns/<int:pk>/analysis/scatter/", views.scatter, name="analysis-scatter"),
    path("campaigns/<int:pk>/analysis/rankings/", views.rankings, name="analysis-rankings"),
    path("campaigns/<int:pk>/analysis/meta/", views.meta, name="analysis-meta"),
    path("campaigns/<int:pk>/analysis/disagreement/", views.disagreement, name="analysis-disagreement"),
    path("campaigns/<int:pk>/analysis/errors/", views.errors, name="analysis-errors"),
    path("campaigns/<int:pk>/analysis/mqm-errors/", views.mqm_error_breakdown, name="analysis-mqm-errors"),
    path("campaigns/<int:pk>/analysis/facts/", views.facts, name="analysis-facts"),
]
