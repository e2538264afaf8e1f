"""The unit page with media (issue 41): the player's markup and script, the URL that names no file
and no system, and the seconds listened stored with the unit (`Assignment.listened_ms`)."""

import json
import re

import pytest
from django.urls import reverse

from annotations.models import Assignment

pytestmark = pytest.mark.django_db


def _config(html: str) -> dict:
    return json.loads(
        re.search(r'<script id="unit-config" type="application/json">(.*?)</script>', html, re.S).group(1)
    )


def _submit(client, config, **extra):
    answer = {"criterion": "quality", "output": config["outputs"][0]["id"], "score": 70, "spans": []}
    return client.post(
        config["submit_url"],
        json.dumps({"judgements": [answer], "shown_order": config["shown_order"], **extra}),
        content_type="application/json",
    )


def test_the_unit_page_plays_the_audio_and_stores_the_seconds_listened(client, media_world):
    anna = media_world["assignments"]["anna"]
    client.force_login(media_world["users"]["anna"])
    html = client.get(reverse("annotate-unit", args=[anna.campaign_id])).content.decode()
    media_url = reverse("annotate-media", args=[anna.pk, "source"])
    assert f'<audio src="{media_url}"' in html
    assert "js/media_player.js" in html and "data-audio-play" in html and "Replay last 3 s" in html
    assert "talk.wav" not in html and "asr-a" not in html  # no file name, no system name
    assert _submit(client, _config(html), listened_ms=900).status_code == 201
    anna.refresh_from_db()
    assert anna.status == Assignment.Status.DONE and anna.listened_ms == 900


@pytest.mark.parametrize("value", [-1, "12", 1.5, True, 10**12])
def test_a_bad_listening_time_is_refused(client, media_world, value):
    anna = media_world["assignments"]["anna"]
    client.force_login(media_world["users"]["anna"])
    config = _config(client.get(reverse("annotate-unit", args=[anna.campaign_id])).content.decode())
    response = _submit(client, config, listened_ms=value)
    assert response.status_code == 400
    assert "listened_ms must be a whole number of milliseconds" in " ".join(response.json()["errors"])


def test_more_audio_than_the_time_on_the_unit_allows_is_not_kept(client, media_world):
    anna = media_world["assignments"]["anna"]
    client.force_login(media_world["users"]["anna"])
    config = _config(client.get(reverse("annotate-unit", args=[anna.campaign_id])).content.decode())
    assert _submit(client, config, listened_ms=3_600_000).status_code == 201  # an hour, seconds after hand-out
    anna.refresh_from_db()
    assert anna.status == Assignment.Status.DONE and anna.listened_ms is None


def test_a_unit_without_media_loads_no_player(client, media_world, media_root):
    anna = media_world["assignments"]["anna"]
    anna.item.media = {}
    anna.item.save()
    client.force_login(media_world["users"]["anna"])
    html = client.get(reverse("annotate-unit", args=[anna.campaign_id])).content.decode()
    assert "media_player.js" not in html and "<audio" not in html
