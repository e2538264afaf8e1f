"""Issue 41: revising an audio unit records the audio played while revising, as the first submit does:
checked the same way (a whole number of ms up to a day), kept only when the time since the unit's
answers were last stored allows it at the player's fastest speed (1.5x, 2 s slack), and added to the
unit's listening time, by the statement that marks the revision (no statement more)."""

import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotations.models import Assignment, Membership
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from annotations.services.imports.datasets import dataset_import
from annotations.services.projects import annotator_get_or_create
from annotations.services.revisions import unit_revise
from annotations.services.submissions import unit_submit
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.media.conftest import wav_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def audio(media_root):
    (media_root / "talk.wav").write_bytes(wav_bytes(1.0))
    lines = [
        {
            "item": f"utt-{k}",
            "outputs": {"asr": f"transcript {k}"},
            "media": {"source": {"type": "audio", "path": "talk.wav"}},
        }
        for k in range(3)
    ]
    dataset = dataset_import(
        stream="".join(json.dumps(line) + "\n" for line in lines).encode(),
        dataset_name="speech",
        project_name="Speech",
        filename="d.jsonl",
    ).dataset
    campaign = campaign_create(
        dataset=dataset, name="asr", protocol="esa", criteria=["quality"], redundancy=1, units_per_batch=3
    )
    user = UserFactory(username="anna")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    annotator = annotator_get_or_create(project=dataset.project, name="anna", user=user)
    assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
    answer = [{"criterion": "quality", "output": assignment.unit.outputs[0], "score": 70, "spans": []}]
    unit_submit(annotator=annotator, assignment_id=assignment.pk, judgements=answer, listened_ms=900)
    return {"campaign": campaign, "annotator": annotator, "assignment": assignment, "answer": answer, "user": user}


def _revise(audio, **extra):
    return unit_revise(
        annotator=audio["annotator"],
        assignment_id=audio["assignment"].pk,
        judgements=[{**audio["answer"][0], "score": 40}],
        **extra,
    )


def _listened(audio) -> int | None:
    return Assignment.objects.get(pk=audio["assignment"].pk).listened_ms


def test_a_revision_adds_the_audio_played_while_revising(audio):
    assert _listened(audio) == 900
    _revise(audio, listened_ms=1000)
    assert _listened(audio) == 1900
    _revise(audio)  # no count sent (an API client without a player): the time stays
    assert _listened(audio) == 1900


def test_the_plausibility_rule_is_the_first_submits(audio):
    # Seconds after the answers were stored: an hour of audio is more than 1.5x the time allows.
    _revise(audio, listened_ms=3_600_000)
    assert _listened(audio) == 900
    # Ten seconds since they were stored: up to 10 s x 1.5 + 2 s = 17 s of audio is plausible.
    Assignment.objects.filter(pk=audio["assignment"].pk).update(updated_at=timezone.now() - timedelta(seconds=10))
    _revise(audio, listened_ms=16_000)
    assert _listened(audio) == 16_900
    Assignment.objects.filter(pk=audio["assignment"].pk).update(updated_at=timezone.now() - timedelta(seconds=10))
    _revise(audio, listened_ms=18_000)
    assert _listened(audio) == 16_900


@pytest.mark.parametrize("value", [-1, "12", 1.5, True, 10**12])
def test_a_bad_count_is_refused_and_nothing_changes(audio, value):
    with pytest.raises(ValidationError, match="listened_ms must be a whole number of milliseconds"):
        _revise(audio, listened_ms=value)
    assert _listened(audio) == 900


def test_no_statement_more_for_the_listening_time(audio):
    with CaptureQueriesContext(connection) as without:
        _revise(audio)
    with CaptureQueriesContext(connection) as with_count:
        _revise(audio, listened_ms=500)
    assert len(with_count) == len(without)
    assert _listened(audio) == 1400


def test_the_revision_page_and_the_api_pass_the_count_on(client, audio):
    assignment = audio["assignment"]
    handle = output_handle(assignment.pk, assignment.unit.outputs[0])
    body = {
        "judgements": [{"criterion": "quality", "output": handle, "score": 55, "spans": []}],
        "shown_order": [output_handle(assignment.pk, i) for i in assignment.shown_order],
        "listened_ms": 300,
    }
    client.force_login(audio["user"])
    response = client.post(
        reverse("annotate-revise-submit", args=[assignment.pk]), json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert _listened(audio) == 1200
    api = APIClient()
    api.force_authenticate(audio["user"])
    response = api.post(f"/api/assignments/{assignment.pk}/revise/", {**body, "listened_ms": 200}, format="json")
    assert response.status_code == 200, response.content
    assert _listened(audio) == 1400
