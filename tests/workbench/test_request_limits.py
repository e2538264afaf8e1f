"""Request-size limits: small for every JSON endpoint (the anonymous token one
included), large only for file uploads, which go to disk; an oversized body
is refused from its Content-Length, before it is read."""

import json
import socket

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotations.models import Dataset, Membership
from tests.annotations.factories import MembershipFactory
from tests.annotations.services.dbstate import table_counts

MB = 1024 * 1024


def test_limits_are_small_for_json_and_large_only_for_uploads(settings):
    assert settings.WORKBENCH_REQUEST_MAX_BYTES <= 2 * MB
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE <= 2 * MB
    assert settings.WORKBENCH_UPLOAD_MAX_BYTES >= 100 * MB
    assert settings.FILE_UPLOAD_HANDLERS == ["django.core.files.uploadhandler.TemporaryFileUploadHandler"]


@pytest.mark.django_db
def test_anonymous_token_request_declaring_a_huge_body_is_refused_unread():
    # 10 bytes sent, 199 MB declared: refused from the header alone.
    response = APIClient().generic(
        "POST", "/api/auth/token/", b'{"a": "b"}', content_type="application/json", CONTENT_LENGTH=str(199 * MB)
    )
    assert response.status_code == 413
    assert "at most 1 MB" in response.json()["detail"]


@pytest.fixture
def owner_client(db):
    membership = MembershipFactory(role=Membership.Role.OWNER)
    client = APIClient()
    # A real session (not DRF's force_authenticate): the upload gate reads the user in middleware.
    client.force_login(membership.user)
    client.project = membership.project
    return client


def test_json_endpoints_refuse_bodies_over_the_small_limit(owner_client):
    client = owner_client
    body = json.dumps({"name": "x" * (MB + 10)})
    before = table_counts()
    response = client.generic("POST", "/api/projects/", body, content_type="application/json")
    assert response.status_code == 413
    assert table_counts() == before
    # The same endpoint with a normal body still works.
    assert client.post("/api/projects/", {"name": "small"}, format="json").status_code == 201


def test_uploads_may_exceed_the_small_limit_but_not_the_large_one(owner_client, settings):
    client = owner_client
    line = json.dumps({"item": "i", "source": "s" * 1000}) + "\n"
    content = "".join(line.replace('"i"', f'"i{n}"') for n in range(1500)).encode()  # ~1.5 MB
    assert len(content) > settings.WORKBENCH_REQUEST_MAX_BYTES
    settings.WORKBENCH_IMPORT_ASYNC_BYTES = 10 * MB  # imported during the request
    body = {"project": client.project.pk, "name": "big", "file": SimpleUploadedFile("big.jsonl", content)}
    assert client.post("/api/datasets/", body, format="multipart").status_code == 201
    assert Dataset.objects.get(name="big").items.count() == 1500
    settings.WORKBENCH_UPLOAD_MAX_BYTES = MB
    body = {"project": client.project.pk, "name": "bigger", "file": SimpleUploadedFile("big.jsonl", content)}
    response = client.post("/api/datasets/", body, format="multipart")
    assert response.status_code == 413
    assert not Dataset.objects.filter(name="bigger").exists()


@pytest.mark.django_db
def test_login_form_with_a_huge_field_is_refused(client):
    response = client.post("/accounts/login/", {"username": "u", "password": "p" * (2 * MB)})
    assert response.status_code == 413


@pytest.mark.django_db(transaction=True)
def test_a_real_server_answers_before_the_body_arrives(live_server):
    """Over a socket: headers declare 199 MB, a few KB follow and the socket stays open; the answer
    (413) comes while 199 MB are still owed. A server that read the body first would wait for bytes
    that never come, and the socket's timeout would fail the test: no clock to compare needed."""
    host, port = live_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        conn.sendall(
            b"POST /api/auth/token/ HTTP/1.1\r\nHost: " + host.encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: "
            + str(199 * MB).encode()
            + b"\r\n\r\n"
            + b'{"username": "'
            + b"a" * 4096
        )
        answer = conn.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


ANON_UPLOAD = 150 * MB


def _send_upload(live_server, path, headers=b"", finish=False):
    """Declare a 150 MB upload, send its first 64 KB and return the answer. Without `finish` the socket
    stays open with the rest owed: an answer at all means the server answered without reading the
    body (one that read it would wait until the socket's timeout fails the test)."""
    host, port = live_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        conn.sendall(
            b"POST " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n"
            b"Cookie: csrftoken="
            + b"a" * 32
            + b"\r\nX-CSRFToken: "
            + b"a" * 32
            + b"\r\n"
            + headers
            + b"Content-Type: multipart/form-data; boundary=XX\r\nContent-Length: "
            + str(ANON_UPLOAD).encode()
            + b'\r\n\r\n--XX\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\n\r\n'
            + b"x" * 65536
        )
        if finish:  # the rest of the body never comes: a reading server sees it end
            conn.shutdown(socket.SHUT_WR)
        answer = conn.recv(65536)
        conn.settimeout(1)
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith((b".", b"}")):
            try:
                more = conn.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not more:
                break
            answer += more
    return answer


def _temp_uploads():
    import tempfile
    from pathlib import Path

    return {p.name for p in Path(tempfile.gettempdir()).glob("*.upload*")}


@pytest.mark.django_db(transaction=True)
def test_anonymous_upload_with_a_forged_csrf_cookie_is_refused_unread(live_server):
    """Issue 24 finding 3: 150 MB to POST /datasets/upload/ with a forged CSRF cookie and no login
    was read in full and written to a 140 MB temporary file before the 403."""
    before = _temp_uploads()
    for path in ("/datasets/upload/", "/api/datasets/"):
        answer = _send_upload(live_server, path)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
        assert b"researcher" in answer
    assert _temp_uploads() == before


@pytest.mark.django_db(transaction=True)
def test_annotators_and_bad_tokens_get_the_small_limit_researchers_the_large(live_server):
    from rest_framework.authtoken.models import Token

    annotator = MembershipFactory(role=Membership.Role.ANNOTATOR).user
    researcher = MembershipFactory(role=Membership.Role.RESEARCHER).user
    for user, expected in ((annotator, b"413"), (researcher, b"400")):
        key = Token.objects.create(user=user).key
        answer = _send_upload(
            live_server, "/api/datasets/", b"Authorization: Token " + key.encode() + b"\r\n", finish=True
        )
        # The researcher's body is read (the stream ends early: 400), the annotator's is not.
        assert answer.split(b"\r\n", 1)[0].split(b" ")[1] == expected, answer[:300]
    answer = _send_upload(live_server, "/api/datasets/", b"Authorization: Token " + b"f" * 40 + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 413")
