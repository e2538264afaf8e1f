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
def test_doc_pages_load_only_local_static_files(url, settings):
    response = APIClient().get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert "/api/schema/" in html
    # No CDN: nothing absolute, not even a font or preconnect hint.
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", html), html
    assert "https://" not in html and "http://" not in html
    assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    assert any(a.endswith(".js") for a in assets)
    for asset in assets:
        assert asset.startswith("/" + settings.STATIC_URL.strip("/") + "/"), asset
        # ... and each is a file the project actually ships (from the sidecar package).
        relative = asset.split("/", 2)[2]
        assert finders.find(relative), asset
