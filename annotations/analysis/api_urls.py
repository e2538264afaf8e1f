"""Analysis endpoints, mounted under /api/."""

from django.urls import path

from annotations.analysis import apis

urlpatterns = [
    path("campaigns/<int:pk>/agreement/", apis.AgreementApi.as_view(), name="api-campaign-agreement"),
    path("campaigns/<int:pk>/correlation/", apis.CorrelationApi.as_view(), name="api-campaign-correlation"),
    path("campaigns/<int:pk>/rankings/", apis.RankingsApi.as_view(), name="api-campaign-rankings"),
    path("campaigns/<int:pk>/mqm-errors/", apis.MqmErrorsApi.as_view(), name="api-campaign-mqm-errors"),
]
