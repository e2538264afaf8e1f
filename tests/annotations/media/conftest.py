"""Media files for the tests: real WAV files written by Python's `wave` module, and the first bytes
of the other formats as their specifications give them."""

import io
import json
import wave
import zipfile
from pathlib import Path

import pytest

from annotations.models import Membership
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.imports.datasets import dataset_import
from annotations.services.projects import annotator_get_or_create
from tests.annotations.factories import MembershipFactory, ProjectFactory, UserFactory

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 32
MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 32
WEBM = b"\x1a\x45\xdf\xa3" + b"\x00" * 32


def wav_bytes(seconds: float = 0.5, rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(range(256)) * int(seconds * rate * 2 / 256))
    return out.getvalue()


def zip_bytes(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out.getvalue()


@pytest.fixture
def media_root(settings, tmp_path) -> Path:
    root = tmp_path / "media-root"
    root.mkdir()
    settings.WORKBENCH_MEDIA_ROOT = root
    return root


@pytest.fixture
def media_world(db, media_root):
    """A project with an audio dataset (one item, two ASR transcripts), two ESA campaigns on it, an
    annotator with a unit in each campaign, staff, an outsider; the file's bytes under `wav`."""

    wav = wav_bytes(1.0)
    (media_root / "talk.wav").write_bytes(wav)
    project = ProjectFactory(name="Speech")
    owner = UserFactory(username="olivia")
    MembershipFactory(project=project, user=owner, role=Membership.Role.OWNER)
    line = {
        "item": "utt-1",
        "source": "",
        "outputs": {"asr-a": "the cat sat on the mat", "asr-b": "the cat sat on a mat"},
        "media": {"source": {"type": "audio", "path": "talk.wav"}},
    }
    dataset = dataset_import(
        stream=(json.dumps(line) + "\n").encode(), dataset_name="speech", project_name="Speech", filename="d.jsonl"
    ).dataset
    campaigns = [
        campaign_create(
            dataset=dataset, name=name, protocol="esa", criteria=["quality"], systems=["asr-a"], redundancy=3
        )
        for name in ("asr-1", "asr-2")
    ]
    users, assignments = {}, {}
    for name, campaign in (("anna", campaigns[0]), ("bert", campaigns[1])):
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role=Membership.Role.ANNOTATOR)
        annotator = annotator_get_or_create(project=project, name=name, user=user)
        assignments[name], _ = assignment_next(campaign=campaign, annotator=annotator)
        users[name] = user
    outsider = UserFactory(username="oscar")
    MembershipFactory(project=ProjectFactory(name="Other"), user=outsider, role=Membership.Role.OWNER)
    return {"owner": owner, "users": users, "assignments": assignments, "outsider": outsider, "wav": wav}
