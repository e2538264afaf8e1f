"""One domain-error hierarchy, mapped once for the API and once for pages.

Views here raise each domain error as the services do; the answers come from
`workbench.exceptions.api_exception_handler` (API) and
`workbench.middleware.DomainErrorMiddleware` (pages), not from the views.
"""

import pytest
from django.test import override_settings
from django.urls import path
from rest_framework.test import APIClient
from rest_framework.views import APIView

from annotations.analysis.report import AnalysisError
from annotations.export import ExportFailed
from annotations.permissions import ApiAuthMixin
from annotations.quality.gold import InvalidExpectation
from annotations.services.imports import ImportFailed, LineError
from annotations.services.judgements import DuplicateJudgement
from metrics.scorers.errors import MetricError, ModelNotAvailable, OptionError
from metrics.services import RunInputError
from tests.annotations.factories import UserFactory
from workbench import urls as workbench_urls
from workbench.exceptions import DomainError

pytestmark = pytest.mark.django_db

ERRORS = {
    "export": lambda: ExportFailed(["--systems: campaign 'c' has no system '<b>x</b>'", "--format: unknown format"]),
    "analysis": lambda: AnalysisError("criterion 'nope' is not one of the campaign's: fluency"),
    "run": lambda: RunInputError("unknown metric 'nope'"),
    "metric": lambda: OptionError("option n=x: expected int"),
    "import": lambda: ImportFailed(
        [LineError(1, "not JSON (duplicate key 'a' in one object)"), LineError(3, "unknown item 'x'")]
    ),
    "gold": lambda: InvalidExpectation("min must be a number"),
}


def _page_view(request, kind):
    raise ERRORS[kind]()


def _other_view(request):
    raise KeyError("a bug, not the user's fault")


class _Api(ApiAuthMixin, APIView):
    def get(self, request, kind):
        raise ERRORS[kind]()


urlpatterns = [
    path("test-domain-error/<str:kind>/", _page_view),
    path("test-bug/", _other_view),
    path("api/test-domain-error/<str:kind>/", _Api.as_view()),
    *workbench_urls.urlpatterns,
]


@pytest.fixture
def client(client):
    client.force_login(UserFactory())
    return client


def test_every_local_error_class_is_a_domain_error_and_keeps_its_attributes():
    for cls in (
        ExportFailed,
        AnalysisError,
        RunInputError,
        MetricError,
        OptionError,
        ModelNotAvailable,
        ImportFailed,
        DuplicateJudgement,
        InvalidExpectation,
    ):
        assert issubclass(cls, DomainError), cls
    # Callers that caught ValueError still do.
    assert issubclass(AnalysisError, ValueError) and issubclass(RunInputError, ValueError)
    failed = ERRORS["export"]()
    assert failed.problems == failed.messages() and len(failed.problems) == 2
    assert ERRORS["import"]().errors[1].line == 3


@override_settings(ROOT_URLCONF=__name__)
@pytest.mark.parametrize("kind", list(ERRORS))
def test_a_page_view_raising_a_domain_error_answers_a_400_page_with_the_message(client, kind):
    response = client.get(f"/test-domain-error/{kind}/", HTTP_REFERER="http://testserver/campaigns/1/export/")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    for line in ERRORS[kind]().messages():
        assert line.replace("'", "&#x27;").replace("<", "&lt;").replace(">", "&gt;") in html
    assert "<b>x</b>" not in html  # escaped
    assert 'href="http://testserver/campaigns/1/export/"' in html  # a way back to the form


@override_settings(ROOT_URLCONF=__name__)
def test_the_way_back_never_leads_off_site(client):
    html = client.get("/test-domain-error/run/", HTTP_REFERER="https://evil.example/x").content.decode()
    assert "evil.example" not in html


@override_settings(ROOT_URLCONF=__name__)
@pytest.mark.parametrize("headers", [{"HTTP_ACCEPT": "application/json"}, {"CONTENT_TYPE": "application/json"}])
def test_a_script_gets_json_with_the_messages(client, headers):
    response = client.get("/test-domain-error/import/", **headers)
    assert response.status_code == 400
    body = response.json()
    assert body["errors"] == ["line 1: not JSON (duplicate key 'a' in one object)", "line 3: unknown item 'x'"]
    assert "line 1" in body["detail"]


@override_settings(ROOT_URLCONF=__name__)
def test_other_exceptions_are_not_turned_into_400(client):
    client.raise_request_exception = True
    with pytest.raises(KeyError):
        client.get("/test-bug/")


@override_settings(ROOT_URLCONF=__name__)
@pytest.mark.parametrize("kind", list(ERRORS))
def test_the_api_maps_every_domain_error_to_400_detail(kind):
    api = APIClient()
    api.force_authenticate(UserFactory())
    response = api.get(f"/api/test-domain-error/{kind}/")
    assert response.status_code == 400
    body = response.json()
    error = ERRORS[kind]()
    if kind == "export":  # the export API has always answered the list of problems
        assert body == {"detail": error.problems}
    elif kind == "import":  # and the import API the list of line errors
        assert body == {"detail": str(error), "errors": error.messages()}
    else:
        assert body == {"detail": str(error)}
