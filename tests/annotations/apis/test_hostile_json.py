"""Bodies that Python's json accepts but that crashed the API (500s before):
deep nesting, numbers past a float, lone surrogates; and duplicate keys,
which silently kept the last value. Each is now a 400 that says what is
wrong, on every JSON endpoint, and nothing is written."""

import json

import pytest
from rest_framework.test import APIClient

from annotations.models import Campaign, Membership, Project, RatingJudgement
from tests.annotations.services.dbstate import table_counts

pytestmark = pytest.mark.usefixtures("fresh_throttles")

DEEP = "[" * 5000 + "]" * 5000  # ~10 KB


def raw_post(client, url, text):
    return client.generic("POST", url, text.encode("utf-8", "surrogatepass"), content_type="application/json")


def json_post_paths() -> list[str]:
    schema = APIClient().get("/api/schema/", {"format": "json"}).json()
    paths = []
    for path, methods in schema["paths"].items():
        body = methods.get("post", {}).get("requestBody", {}).get("content", {})
        if "application/json" in body:
            paths.append(path)
    return paths


@pytest.mark.django_db
def test_every_json_endpoint_answers_deep_nesting_with_a_400(world):
    paths = json_post_paths()
    assert "/api/auth/token/" in paths and "/api/judgements/ratings/" in paths and len(paths) >= 6
    before = table_counts()
    for path in paths:
        target = (
            world.mine.project
            if "projects" in path
            else world.mine.dataset
            if "datasets" in path
            else world.mine.campaign
        )
        url = path.replace("{id}", str(target.pk))
        client = APIClient() if path == "/api/auth/token/" else world.client("owner")
        for body in (DEEP, '{"a": ' + DEEP + "}"):
            response = raw_post(client, url, body)
            assert response.status_code == 400, (url, response.status_code, response.content[:200])
            assert "levels deep; at most 64" in response.json()["detail"], url
    assert table_counts() == before


def test_the_anonymous_token_endpoint_too(db):
    response = raw_post(APIClient(), "/api/auth/token/", '{"username": ' + DEEP + ', "password": "x"}')
    assert response.status_code == 400
    assert "nested" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "field, literal, message",
    [
        ("score", "1e309", "out of range"),
        ("score", "9" * 400, "out of range"),  # a 400-digit integer: float() overflowed -> 500
        ("criterion", '"\\ud800"', "lone surrogate"),
        ("score", "NaN", "not allowed"),
    ],
)
def test_numbers_and_strings_postgresql_refuses_are_a_400(world, field, literal, message):
    output = world.mine.outputs[0]
    fields = {"campaign": world.mine.campaign.pk, "output": output.pk, "criterion": "adequacy", "score": 3}
    text = json.dumps(fields).replace(json.dumps({field: fields[field]})[1:-1], f'"{field}": {literal}')
    assert literal in text
    before = RatingJudgement.objects.count()
    response = raw_post(world.client("annotator"), "/api/judgements/ratings/", text)
    assert response.status_code == 400, response.content
    assert message in response.json()["detail"]
    assert RatingJudgement.objects.count() == before


@pytest.mark.django_db
def test_lone_surrogates_in_names_are_a_400_not_a_500(world):
    before = table_counts()
    client = world.client("owner")
    created = raw_post(client, "/api/projects/", '{"name": "x\\ud800"}')
    assert created.status_code == 400 and "lone surrogate" in created.json()["detail"]
    campaign = raw_post(
        client,
        "/api/campaigns/",
        json.dumps(
            {
                "dataset": world.mine.dataset.pk,
                "name": "PLACEHOLDER",
                "protocol": "likert",
                "criteria": ["fluency"],
                "scale_min": 1,
                "scale_max": 5,
            }
        ).replace("PLACEHOLDER", "\\udfff"),
    )
    assert campaign.status_code == 400
    member = raw_post(
        client, f"/api/projects/{world.mine.project.pk}/members/", '{"username": "\\ud83d", "role": "annotator"}'
    )
    assert member.status_code == 400
    assert table_counts() == before


@pytest.mark.django_db
def test_duplicate_keys_are_refused_not_silently_resolved(world):
    client = world.client("owner")
    body = (
        '{"dataset": %d, "name": "first", "name": "second", "protocol": "likert", "criteria": ["f"], '
        '"scale_min": 1, "scale_max": 5}' % world.mine.dataset.pk
    )
    response = raw_post(client, "/api/campaigns/", body)
    assert response.status_code == 400
    assert "duplicate key 'name'" in response.json()["detail"]
    assert not Campaign.objects.filter(name__in=["first", "second"]).exists()
    assert raw_post(client, "/api/projects/", '{"name": "a", "name": "b"}').status_code == 400
    assert not Project.objects.filter(name__in=["a", "b"]).exists()
    assert Membership.objects.filter(project__name__in=["a", "b"]).count() == 0
