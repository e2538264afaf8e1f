"""Documentation pages that work offline and under the Content-Security-Policy: the API's
(Swagger UI, ReDoc) and the user documentation site at /docs/ (see `docs_site`).

Swagger UI: drf-spectacular's split view, whose start-up script is a file of
its own (the default view inlines it, which `script-src 'self'` forbids).
ReDoc: the sidecar's bundle, except that its "API docs by Redocly" footer
loads a logo from a CDN; the bundle is served with that one URL pointing at
the workbench's own icon instead (patched in memory, the package untouched).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils._os import safe_join
from django.views.static import serve
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


# The user documentation: the MkDocs site that `manage.py build_docs` writes into
# WORKBENCH_DOCS_SITE, served read-only at /docs/ (the pages' Help links), with no external site.
# Django's static-file view does the serving (content type, conditional requests); the path is
# joined under the folder by safe_join first, so no `..` reaches outside it. The site is public
# documentation, the same for everyone.
def docs_site(request: HttpRequest, path: str = "") -> HttpResponse:
    root = Path(settings.WORKBENCH_DOCS_SITE)
    if not (root / "index.html").is_file():
        raise Http404("The documentation is not built here: run `manage.py build_docs` (or `make run`).")
    try:
        target = Path(safe_join(root, path))
    except SuspiciousFileOperation:
        raise Http404("No such documentation page.") from None
    if target.is_dir():
        if path and not path.endswith("/"):
            return HttpResponseRedirect(request.path + "/")
        path = f"{path}index.html"  # MkDocs writes page/index.html for the address page/
    return serve(request, path, document_root=str(root))
