"""Property-based fuzzing of the whole API against its own OpenAPI schema.

schemathesis generates requests for every operation from the schema that
drf-spectacular serves, sends them in-process through the Django WSGI app,
authenticated as the owner of a project with data, and fails on any 5xx.
Most generated ids are swapped for ids of real rows (and some names for
real criteria and usernames), so requests get past the 404s and into the
services.

Bounded and deterministic: `FUZZ_EXAMPLES` (default 25) examples per
operation, derandomized. For a longer run:
    FUZZ_EXAMPLES=300 pytest tests/annotations/apis/test_fuzz.py
"""

import os

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error

from annotations.models import Membership
from annotations.services.assignments import assignment_next
from annotations.services.projects import annotator_get_or_create
from tests.annotations.factories import (
    CampaignFactory,
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ReferenceFactory,
    SystemFactory,
    UserFactory,
)

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())

VALID_JSONL = b'{"item": "f1", "source": "s", "references": ["r"], "outputs": {"sysA": "t"}}\n'

# Ids of the rows made by the `fuzz_data` fixture, by resource, for the hooks below.
KNOWN: dict[str, list[int]] = {}
PATH_RESOURCE = {"projects": "project", "datasets": "dataset", "items": "item", "campaigns": "campaign"}
BODY_RESOURCE = {
    "project": "project",
    "dataset": "dataset",
    "campaign": "campaign",
    "item": "item",
    "system": "system",
    "output": "output",
    "output_a": "output",
    "output_b": "output",
    "best": "output",
    "worst": "output",
}


def _known(resource: str, value):
    """Most generated ints become a real id (deterministically); every fourth stays."""
    ids = KNOWN.get(resource)
    if ids and isinstance(value, int) and not isinstance(value, bool) and value % 4 != 3:
        return ids[value % len(ids)]
    return value


def _known_name(resource: str, value):
    """Strings of odd length become a real name (criterion, username)."""
    names = KNOWN.get(resource)
    if names and isinstance(value, str) and len(value) % 2 == 1:
        return names[len(value) % len(names)]
    return value


def _map_body(path: str, body):
    if isinstance(body, dict):
        for key, resource in BODY_RESOURCE.items():
            if key in body:
                # Judgement endpoints get campaigns of their own protocol.
                specific = f"{resource}:{path}"
                body[key] = _known(specific if specific in KNOWN else resource, body[key])
        if isinstance(body.get("outputs"), list):
            body["outputs"] = [_known("output", v) for v in body["outputs"]]
        if "criterion" in body:
            body["criterion"] = _known_name("criterion", body["criterion"])
        if "username" in body:
            body["username"] = _known_name("username", body["username"])
        if "file" in body and isinstance(body.get("name"), str) and len(body["name"]) % 2 == 1:
            body["file"] = VALID_JSONL  # so some uploads get through to the importer
    return body


def _swap_in_real_ids(case) -> None:
    """Done just before sending, so it also reaches the cases of
    schemathesis's coverage phase, which `map_*` hooks do not see."""
    path = case.operation.path
    resource = PATH_RESOURCE.get(path.split("/")[2])
    if resource and case.path_parameters and "id" in case.path_parameters:
        case.path_parameters["id"] = _known(resource, case.path_parameters["id"])
    for key in case.query or ():
        if key in BODY_RESOURCE:
            case.query[key] = _known(BODY_RESOURCE[key], case.query[key])
    case.body = _map_body(path, case.body)


@pytest.fixture
def wsgi_keeps_test_connection():
    """Requests go through Django's real WSGI handler, which closes the
    database connection after each request; inside the test's transaction
    that would lose it. Django's own test client disconnects the same hooks."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_token(db, wsgi_keeps_test_connection) -> str:
    owner = UserFactory(username="fuzz-owner")
    dataset = DatasetFactory(name="fuzz-data")
    project = dataset.project
    MembershipFactory(project=project, user=owner, role=Membership.Role.OWNER)
    MembershipFactory(project=project, user=UserFactory(username="fuzz-annotator"), role="annotator")
    systems = [SystemFactory(dataset=dataset) for _ in range(3)]
    outputs = []  # item 0 first: the one the owner is assigned in every campaign
    for i in range(3):
        item = ItemFactory(dataset=dataset, position=i, data=[["A", "b", "c"]])
        ReferenceFactory(item=item, position=0)
        outputs += [OutputFactory(item=item, system=s).pk for s in systems]
    campaigns = [
        CampaignFactory(dataset=dataset, criteria=["fluency"], scale_min=0, scale_max=100),
        CampaignFactory(dataset=dataset, protocol="rankme", scale_min=None, scale_max=None),
        CampaignFactory(dataset=dataset, protocol="pairwise", scale_min=None, scale_max=None),
        CampaignFactory(dataset=dataset, protocol="bws", scale_min=None, scale_max=None),
    ]
    annotator = annotator_get_or_create(project=project, name=owner.username, user=owner)
    for campaign in campaigns:
        assignment_next(campaign=campaign, annotator=annotator)  # so the owner may judge item 0
    KNOWN.clear()
    KNOWN.update(
        project=[project.pk],
        dataset=[dataset.pk],
        item=list(dataset.items.values_list("pk", flat=True)),
        system=[s.pk for s in systems],
        output=outputs,
        campaign=[c.pk for c in campaigns],
        **{
            "campaign:/api/judgements/ratings/": [campaigns[0].pk, campaigns[1].pk],
            "campaign:/api/judgements/pairwise/": [campaigns[2].pk],
            "campaign:/api/judgements/bestworst/": [campaigns[3].pk],
        },
        criterion=["fluency"],
        username=["fuzz-annotator", "fuzz-owner"],
    )
    return Token.objects.create(user=owner).key


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_api_never_answers_with_a_server_error(case, fuzz_token):
    _swap_in_real_ids(case)
    response = case.call(headers={"Authorization": f"Token {fuzz_token}"})
    case.validate_response(response, checks=[not_a_server_error])
