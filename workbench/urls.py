from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from workbench import docs

# A database outage: 503 with Retry-After instead of a 500 (workbench.outage).
handler500 = "workbench.outage.server_error"

urlpatterns = [
    path("favicon.ico", docs.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    # Django's account pages except password reset, which is off: it needs an e-mail server, which
    # the workbench does not configure; a user who lost their password gets a new one-time login
    # link from a project owner (`add_member --links`, the members page) or `manage.py changepassword`.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", docs.SwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", docs.RedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/redoc/redoc.standalone.js", docs.redoc_bundle, name="api-redoc-bundle"),
    path("docs/", docs.docs_site, name="docs"),
    path("docs/<path:path>", docs.docs_site, name="docs-page"),
    path("api/", include("annotations.api_urls")),
    path("api/", include("annotations.analysis.api_urls")),
    path("api/", include("metrics.api_urls")),
    path("", include("annotations.urls")),
    path("", include("annotations.analysis.urls")),
]
