"""A unit's media served (issue 41): only to those who may see the unit, with HTTP range requests
(RFC 9110 §14: 206 and Content-Range, 416 with `bytes */size`), its type and `nosniff`."""

import pytest
from django.urls import reverse

from annotations.models import Assignment
from annotations.studies.services import join_link_create, join_link_revoke
from annotations.views.media import byte_range

pytestmark = pytest.mark.django_db


def url(assignment, role="source") -> str:
    return reverse("annotate-media", args=[assignment.pk, role])


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_the_assigned_annotator_and_staff_get_the_file(client, media_world):
    anna = media_world["assignments"]["anna"]
    for user in (media_world["users"]["anna"], media_world["owner"]):
        client.force_login(user)
        response = client.get(url(anna))
        assert response.status_code == 200
        assert body(response) == media_world["wav"]
        assert response["Content-Type"] == "audio/wav"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Accept-Ranges"] == "bytes"
        assert response["Content-Length"] == str(len(media_world["wav"]))
        assert "talk.wav" not in response.get("Content-Disposition", "")


def test_everyone_else_gets_404(client, media_world):
    anna = media_world["assignments"]["anna"]
    assert client.get(url(anna)).status_code in (302, 404)  # anonymous: to the login page, or 404
    # Another campaign's annotator (same project), an outsider: 404, as for a unit that does not exist.
    for user in (media_world["users"]["bert"], media_world["outsider"]):
        client.force_login(user)
        assert client.get(url(anna)).status_code == 404
    client.force_login(media_world["users"]["anna"])
    assert client.get(url(anna, "reference")).status_code == 404  # the item has no reference media
    assert client.get(url(anna, "..%2Fsecret")).status_code == 404
    assert client.get(reverse("annotate-media", args=[anna.pk + 1000, "source"])).status_code == 404


@pytest.mark.parametrize(
    "header,first,last",
    [("bytes=0-99", 0, 99), ("bytes=100-", 100, None), ("bytes=-50", -50, None), ("bytes=10-10", 10, 10)],
)
def test_range_requests(client, media_world, header, first, last):
    wav = media_world["wav"]
    client.force_login(media_world["users"]["anna"])
    response = client.get(url(media_world["assignments"]["anna"]), HTTP_RANGE=header)
    assert response.status_code == 206
    expected = wav[first:] if last is None else wav[first : last + 1]
    assert body(response) == expected
    start = first if first >= 0 else len(wav) + first
    assert response["Content-Range"] == f"bytes {start}-{start + len(expected) - 1}/{len(wav)}"
    assert response["Content-Length"] == str(len(expected))


@pytest.mark.parametrize("header", ["bytes=99999999-", "bytes=5-2", "bytes=-0", "bytes=abc", "items=0-1", "bytes=-"])
def test_bad_ranges_answer_416(client, media_world, header):
    client.force_login(media_world["users"]["anna"])
    response = client.get(url(media_world["assignments"]["anna"]), HTTP_RANGE=header)
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{len(media_world['wav'])}"


def test_byte_range_parsing():
    assert byte_range("", 10) is None
    assert byte_range("bytes=0-1,4-5", 10) is None  # several ranges: the whole file
    assert byte_range("bytes=0-100", 10) == (0, 9)  # clipped to the file
    assert byte_range("bytes=-100", 10) == (0, 9)


def test_a_join_participant_gets_their_own_units_media_only(client, media_world):
    campaign = media_world["assignments"]["bert"].campaign
    link = join_link_create(campaign=campaign, completion_url="https://app.prolific.com/submissions/complete?cc={code}")
    client.post(reverse("join", args=[link.token]), {"PROLIFIC_PID": "5f0c1e2d3b4a596877665544"})
    client.post(reverse("annotate-campaign", args=[campaign.pk]))  # hands the unit out
    own = Assignment.objects.filter(campaign=campaign, annotator__namespace="import").get()
    response = client.get(url(own))
    assert response.status_code == 200 and body(response) == media_world["wav"]
    # Anna's unit of the other campaign: 404 for this participant.
    assert client.get(url(media_world["assignments"]["anna"])).status_code == 404
    join_link_revoke(link=link)
    assert client.get(url(own)).status_code == 404


def test_the_item_page_shows_and_serves_the_media_to_staff(client, media_world):
    item = media_world["assignments"]["anna"].item
    client.force_login(media_world["owner"])
    html = client.get(reverse("item-detail", args=[item.pk])).content.decode()
    media_url = reverse("item-media", args=[item.pk, "source"])
    assert f'<audio src="{media_url}" controls' in html and "talk.wav" in html
    response = client.get(media_url, HTTP_RANGE="bytes=4-11")
    assert response.status_code == 206 and body(response) == media_world["wav"][4:12]
    client.force_login(media_world["outsider"])
    assert client.get(media_url).status_code == 404
