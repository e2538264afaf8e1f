"""The annotator page's JSON endpoints answer 400 with a message to every body
`workbench.strictjson` refuses, instead of a 500 or a silently accepted value."""

import json

import pytest
from django.urls import reverse

from annotations.models import Assignment, RatingJudgement
from annotations.services.campaigns import campaign_create

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000  # 100 KB: under the draft limit (200 KB), far past any sane nesting


@pytest.fixture
def pending(client, annotator, dataset):
    campaign = campaign_create(
        dataset=dataset, name="Rate me", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5, redundancy=2
    )
    client.force_login(annotator)
    assert client.post(reverse("annotate-campaign", args=[campaign.pk]), follow=True).status_code == 200
    return Assignment.objects.get(annotator__user=annotator)


def _submit_body(assignment, score_literal: str) -> str:
    output = assignment.unit.outputs[0]
    return '{"judgements": [{"criterion": "fluency", "output": %d, "score": %s}], "shown_order": %s}' % (
        output,
        score_literal,
        json.dumps(assignment.shown_order),
    )


def _bad_bodies(assignment) -> dict[str, tuple[str, str]]:
    """name: (submit body, draft body), each with the word the message must hold."""
    return {
        "deep": ("[" * 200_000, DEEP),
        "deep object": ('{"a":' * 40_000, '{"draft": ' + '{"a":' * 30_000),
        "400 digits": (_submit_body(assignment, "9" * 400), '{"draft": {"score": %s}}' % ("9" * 400)),
        "duplicate key": ('{"judgements": [], "judgements": []}', '{"draft": {}, "draft": {"a": 1}}'),
        "NaN": (_submit_body(assignment, "NaN"), '{"draft": {"score": NaN}}'),
        "Infinity": (_submit_body(assignment, "-Infinity"), '{"draft": {"score": Infinity}}'),
        "1e999": (_submit_body(assignment, "1e999"), '{"draft": {"score": 1e999}}'),
        "lone surrogate": ('{"judgements": [{"criterion": "\\ud800"}]}', '{"draft": {"note": "\\udfff"}}'),
    }


EXPECTED_WORD = {
    "deep": "nested",
    "deep object": "nested",
    "400 digits": "out of range",
    "duplicate key": "duplicate key",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "1e999": "out of range",
    "lone surrogate": "surrogate",
}


@pytest.mark.parametrize("name", list(EXPECTED_WORD))
def test_submit_and_draft_refuse_bad_json_with_400(client, pending, name):
    submit_body, draft_body = _bad_bodies(pending)[name]
    for url_name, body in (("annotate-submit", submit_body), ("annotate-draft", draft_body)):
        response = client.post(reverse(url_name, args=[pending.pk]), body, content_type="application/json")
        assert response.status_code == 400, (url_name, response.content[:200])
        message = " ".join(response.json()["errors"])
        assert "not valid JSON" in message and EXPECTED_WORD[name] in message, message
    assert not RatingJudgement.objects.exists()
    pending.refresh_from_db()
    assert pending.status == Assignment.Status.PENDING and not pending.draft


def test_submit_body_that_is_not_utf8_is_400(client, pending):
    response = client.post(
        reverse("annotate-submit", args=[pending.pk]), b'{"judgements": "\xff"}', content_type="application/json"
    )
    assert response.status_code == 400 and "not valid JSON" in response.json()["errors"][0]


def test_good_draft_still_saves(client, pending):
    response = client.post(
        reverse("annotate-draft", args=[pending.pk]), '{"draft": {"score": 3}}', content_type="application/json"
    )
    assert response.status_code == 200
    pending.refresh_from_db()
    assert pending.draft == {"score": 3}


def test_someone_elses_unit_is_a_404_whatever_the_body(client, pending, researcher):
    """Ownership is answered before the body: a unit that is not yours (or does not exist) is the
    page's 404, with a good body or a bad one, and its owner's unit is left as it was."""
    client.force_login(researcher)
    good = _submit_body(pending, "3")
    for pk in (pending.pk, pending.pk + 1000):
        for body in (good, "[" * 200_000, '{"judgements": [], "judgements": []}'):
            response = client.post(reverse("annotate-submit", args=[pk]), body, content_type="application/json")
            assert response.status_code == 404, (pk, response.content[:200])
            assert response["Content-Type"].startswith("text/html")
    pending.refresh_from_db()
    assert pending.status == Assignment.Status.PENDING and not RatingJudgement.objects.exists()
