"""The unit page with media (issue 41): the player's markup and script, the URL that names no file
and no system, and the seconds listened stored with the unit (`Assignment.listened_ms`)."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Assignment, Campaign, Item, PairwiseJudgement
from annotations.services.campaigns import campaign_create
from tests.annotations.media.conftest import MP4, PNG, wav_bytes, zip_bytes

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


def test_images_and_video_are_shown_with_their_alt_text(client, media_world, media_root):
    anna = media_world["assignments"]["anna"]
    (media_root / "pic.png").write_bytes(PNG)
    (media_root / "clip.mp4").write_bytes(MP4)
    anna.item.media = {
        "source": {"type": "image", "path": "pic.png", "mime": "image/png", "alt": "A <b>red</b> bus"},
        "reference": {"type": "video", "path": "clip.mp4", "mime": "video/mp4"},
    }
    anna.item.save()
    Campaign.objects.filter(pk=anna.campaign_id).update(show_reference=True)
    client.force_login(media_world["users"]["anna"])
    html = client.get(reverse("annotate-unit", args=[anna.campaign_id])).content.decode()
    image_url = reverse("annotate-media", args=[anna.pk, "source"])
    video_url = reverse("annotate-media", args=[anna.pk, "reference"])
    assert f'<img src="{image_url}" alt="A &lt;b&gt;red&lt;/b&gt; bus"' in html  # escaped
    assert f'<video src="{video_url}" controls' in html and 'aria-label="Reference video"' in html
    assert "media_player.js" in html  # loaded with any media; it finds no audio and stays idle
    response = client.get(video_url)
    assert response.status_code == 200 and response["Content-Type"] == "video/mp4"
    assert client.get(image_url)["Content-Type"] == "image/png"


def test_side_by_side_transcripts_with_the_audio(client, media_world):
    """HATS-style: two transcripts of the audio side by side (pairwise), the audio above them."""
    campaign = campaign_create(
        dataset=media_world["assignments"]["anna"].campaign.dataset,
        name="hats",
        protocol="pairwise",
        criteria=["accuracy"],
        redundancy=1,
    )
    client.force_login(media_world["users"]["anna"])
    client.post(reverse("annotate-campaign", args=[campaign.pk]))
    html = client.get(reverse("annotate-unit", args=[campaign.pk])).content.decode()
    assignment = Assignment.objects.get(campaign=campaign)
    assert f'<audio src="{reverse("annotate-media", args=[assignment.pk, "source"])}"' in html
    config = _config(html)
    answer = {"criterion": "accuracy", "winner": "a"}
    response = client.post(
        config["submit_url"],
        json.dumps({"judgements": [answer], "shown_order": config["shown_order"], "listened_ms": 1200}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assignment.refresh_from_db()
    assert assignment.listened_ms == 1200
    assert PairwiseJudgement.objects.filter(campaign=campaign).count() == 1


def test_a_zip_uploaded_on_the_dataset_page(client, media_world):
    lines = json.dumps({"item": "z1", "outputs": {"s": "t"}, "media": {"source": {"type": "audio", "path": "a.wav"}}})
    upload = SimpleUploadedFile("speech.zip", zip_bytes({"d.jsonl": lines.encode(), "a.wav": wav_bytes()}))
    client.force_login(media_world["owner"])
    project = media_world["assignments"]["anna"].campaign.dataset.project
    response = client.post(
        reverse("dataset-upload"), {"file": upload, "dataset_name": "zipped", "project": project.pk, "format": "auto"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Item.objects.get(dataset__name="zipped").media["source"]["path"].endswith("/a.wav")


def test_the_api_submit_takes_the_listening_time(media_world):
    anna = media_world["assignments"]["anna"]
    api = APIClient()
    api.force_authenticate(media_world["users"]["anna"])
    body = api.post(f"/api/campaigns/{anna.campaign_id}/next-assignment/").json()
    assert body["item"]["media"] == {"source": {"type": "audio", "mime": "audio/wav", "alt": ""}}
    answer = {"criterion": "quality", "output": body["item"]["outputs"][0]["id"], "score": 40, "spans": []}
    bad = api.post(f"/api/assignments/{anna.pk}/submit/", {"judgements": [answer], "listened_ms": -5}, format="json")
    assert bad.status_code == 400
    sent = api.post(
        f"/api/assignments/{anna.pk}/submit/",
        {"judgements": [answer], "shown_order": body["shown_order"], "listened_ms": 700},
        format="json",
    )
    assert sent.status_code == 201, sent.content
    anna.refresh_from_db()
    assert anna.listened_ms == 700
