from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from workbench import docs

urlpatterns = [
    path("favicon.ico", docs.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", docs.SwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", docs.RedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/redoc/redoc.standalone.js", docs.redoc_bundle, name="api-redoc-bundle"),
    path("api/", include("annotations.api_urls")),
    path("api/", include("annotations.analysis.api_urls")),
    path("api/", include("metrics.api_urls")),
    path("", include("annotations.urls")),
    path("", include("annotations.analysis.urls")),
]
