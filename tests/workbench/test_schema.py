"""The OpenAPI document and the two documentation pages."""

import re

import pytest
import schemathesis
from django.contrib.staticfiles import finders
from django.urls import get_resolver
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema() -> dict:
    response = APIClient().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_schema_is_a_valid_openapi_3_document(schema):
    assert schema["openapi"].startswith("3.")
    # Validates against the official OpenAPI 3.0 JSON Schema (bundled with drf-spectacular).
    validate_schema(schema)
    # schemathesis, which the fuzz tests use, loads it and finds every operation.
    loaded = schemathesis.openapi.from_dict(schema)
    operations = [result.ok() for result in loaded.get_all_operations()]
    assert len(operations) == sum(len(methods) for methods in schema["paths"].values())


def test_schema_documents_every_api_route(schema):
    api = get_resolver().url_patterns
    expected = set()
    for pattern in api:
        if str(pattern.pattern) == "api/":
            for sub in pattern.url_patterns:
                expected.add("/api/" + re.sub(r"<int:(\w+)>", r"{\1}", str(sub.pattern)))
    documented = {p.replace("{id}", "{pk}") for p in schema["paths"]}
    assert expected and expected <= documented


def test_every_operation_but_login_requires_authentication(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            schemes = {name for requirement in operation.get("security", []) for name in requirement}
            if path == "/api/auth/token/":
                continue
            assert schemes == {"tokenAuth", "cookieAuth"}, (method, path)


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_doc_pages_load_only_local_files_and_no_inline_script(url, settings):
    client = APIClient()
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    # No CDN: nothing absolute, not even a font or preconnect hint.
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", html), html
    assert "https://" not in html and "http://" not in html
    # No inline script: the Content-Security-Policy (script-src 'self') would block it.
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), html
    assets = [a.replace("&amp;", "&") for a in re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)]
    assert any(".js" in a or "script" in a for a in assets)
    static_prefix = "/" + settings.STATIC_URL.strip("/") + "/"
    for asset in assets:
        assert asset.startswith("/"), asset
        if asset.startswith(static_prefix):
            # ... a file the project actually ships (from the sidecar package).
            path = finders.find(asset[len(static_prefix) :])
            assert path, asset
            body = open(path, "rb").read()
        else:
            served = client.get(asset)
            assert served.status_code == 200, asset
            body = b"".join(served.streaming_content) if served.streaming else served.content
            # The schema URL is set in the start-up script (Swagger) or the page (ReDoc).
            html += body.decode()
        # Nothing the scripts fetch by themselves either: ReDoc's bundle is served with its
        # CDN logo replaced by the workbench's icon.
        assert b"cdn.redoc.ly" not in body, asset
    assert "/api/schema/" in html


def test_favicon_is_served():
    response = APIClient().get("/favicon.ico")
    assert response.status_code == 302
    icon = finders.find(response["Location"].split("/static/", 1)[1])
    assert icon and open(icon, "rb").read(4) == b"\x00\x00\x01\x00"  # an ICO file
