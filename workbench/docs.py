"""API documentation pages that work offline and under the Content-Security-Policy.

Swagger UI: drf-spectacular's split view, whose start-up script is a file of
its own (the default view inlines it, which `script-src 'self'` forbids).
ReDoc: the sidecar's bundle, except that its "API docs by Redocly" footer
loads a logo from a CDN; the bundle is served with that one URL pointing at
the workbench's own icon instead (patched in memory, the package untouched).
"""
from __future__ import annotations

from functools import lru_cache

from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

REDOC_BUNDLE = "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"
REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
FAVICON = "img/favicon.ico"


class SwaggerView(SpectacularSwaggerSplitView):
    pass


class RedocView(SpectacularRedocView):
    @staticmethod
    def _redoc_standalone() -> str:
        return reverse("api-redoc-bundle")


@lru_cache(maxsize=1)
def _redoc_bundle() -> bytes:
    with open(finders.find(REDOC_BUNDLE), "rb") as bundle:
        source = bundle.read()
    return source.replace(REDOC_CDN_LOGO.encode(), staticfiles_storage.url("img/favicon.svg").encode())


def redoc_bundle(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(_redoc_bundle(), content_type="application/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=86400"
    return response


def favicon(request: HttpRequest) -> HttpResponse:
    """`/favicon.ico`, which browsers ask for on pages without an icon link (API, admin)."""
    return HttpResponseRedirect(staticfiles_storage.url(FAVICON))
