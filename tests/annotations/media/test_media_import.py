"""Items with media (issue 41): the ``media`` field of JSONL and CSV, files read from the media root
or extracted from the dataset's zip, and every refusal as ``line N: reason`` with nothing written."""

import csv
import io
import json
import os
import stat
import zipfile

import pytest

from annotations.models import Dataset, Item
from annotations.services.imports import ImportFailed
from annotations.services.imports.datasets import dataset_import
from annotations.services.imports.media import sniff
from tests.annotations.media.conftest import JPEG, MP4, PNG, WEBM, wav_bytes, zip_bytes

pytestmark = pytest.mark.django_db


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def item(n: int, media: dict | None = None) -> dict:
    row = {"item": f"i{n}", "source": f"Satz {n}.", "outputs": {"asr-a": f"text {n}", "asr-b": f"text {n}!"}}
    if media is not None:
        row["media"] = media
    return row


def refused(data: bytes, filename="d.jsonl", name="m") -> list[str]:
    with pytest.raises(ImportFailed) as exc:
        dataset_import(stream=data, dataset_name=name, filename=filename)
    assert not Dataset.objects.filter(name=name).exists()
    return exc.value.messages()


def test_media_from_the_media_root(media_root):
    (media_root / "clips").mkdir()
    (media_root / "clips" / "1.wav").write_bytes(wav_bytes())
    (media_root / "img.png").write_bytes(PNG)
    rows = [
        item(1, {"source": {"type": "audio", "path": "clips/1.wav"}}),
        item(2, {"source": {"type": "image", "path": "img.png", "alt": "A red bus"}}),
        item(3),
    ]
    dataset_import(stream=jsonl(rows), dataset_name="m", filename="d.jsonl")
    media = dict(Item.objects.filter(dataset__name="m").values_list("external_id", "media"))
    assert media["i1"] == {
        "source": {"type": "audio", "path": "clips/1.wav", "mime": "audio/wav", "bytes": len(wav_bytes())}
    }
    assert media["i2"]["source"]["alt"] == "A red bus"
    assert media["i2"]["source"]["mime"] == "image/png"
    assert media["i3"] == {}
    # The same file again changes nothing; another file for a stored item is a conflict.
    assert dataset_import(stream=jsonl(rows), dataset_name="m", filename="d.jsonl").unchanged
    (media_root / "2.wav").write_bytes(wav_bytes())
    with pytest.raises(ImportFailed) as exc:
        dataset_import(
            stream=jsonl([item(1, {"source": {"type": "audio", "path": "2.wav"}})]), dataset_name="m", filename="d"
        )
    assert exc.value.messages() == ["line 1: item 'i1' already exists with a different media"]


def test_csv_media_column(media_root):
    (media_root / "a.wav").write_bytes(wav_bytes())
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["item", "source", "media", "output:x"])
    writer.writerow(["c1", "Hallo", json.dumps({"source": {"type": "audio", "path": "a.wav"}}), "hello"])
    dataset_import(stream=out.getvalue().encode(), dataset_name="m", filename="d.csv")
    assert Item.objects.get(external_id="c1").media["source"]["path"] == "a.wav"


def test_zip_with_its_media(media_root):
    rows = [
        item(1, {"source": {"type": "audio", "path": "audio/1.wav"}}),
        item(2, {"reference": {"type": "video", "path": "v.mp4"}}),
    ]
    data = zip_bytes({"dataset.jsonl": jsonl(rows), "audio/1.wav": wav_bytes(), "v.mp4": MP4})
    result = dataset_import(stream=data, dataset_name="asr talks", filename="upload.zip")
    assert result.items == 2
    media = dict(Item.objects.filter(dataset__name="asr talks").values_list("external_id", "media"))
    path = media["i1"]["source"]["path"]
    assert path.startswith("datasets/asr-talks-") and path.endswith("/audio/1.wav")
    assert (media_root / path).read_bytes() == wav_bytes()
    assert media["i2"]["reference"]["mime"] == "video/mp4"
    assert [p.name for p in (media_root / "datasets").iterdir()] == [path.split("/")[1]]  # no staging left
    # The same zip again: unchanged, its folder reused.
    assert dataset_import(stream=data, dataset_name="asr talks", filename="upload.zip").unchanged
    assert len(list((media_root / "datasets").iterdir())) == 1


BAD_LINES = [
    ({"source": {"type": "audio", "path": "https://example.org/a.wav"}}, "the server never fetches remote files"),
    ({"source": {"type": "audio", "path": "http://example.org/a.wav"}}, "is a URL"),
    ({"source": {"type": "audio", "path": "/etc/passwd"}}, "is absolute"),
    ({"source": {"type": "audio", "path": "clips/../../secret.wav"}}, "has a '..' part"),
    ({"source": {"type": "audio", "path": "nothere.wav"}}, "not found under the media folder"),
    ({"source": {"type": "audio", "path": "img.png"}}, "is declared audio but its content is image/png"),
    ({"source": {"type": "image", "path": "text.png"}}, "is not an accepted image file"),
    ({"source": {"type": "text", "path": "a.wav"}}, "type must be one of audio, image, video, got 'text'"),
    ({"target": {"type": "audio", "path": "a.wav"}}, "unknown role 'target'"),
    ({"source": {"type": "audio", "path": "big.wav"}}, "more than the 2,000 allowed (WORKBENCH_MEDIA_MAX_BYTES)"),
    ({"source": {"type": "audio", "path": "escape.wav"}}, "leads out of the media folder"),
    ({"source": {"type": "audio", "path": "clips"}}, "is not a file"),
    ("a.wav", "media must be an object"),
]


@pytest.mark.parametrize("media,reason", BAD_LINES, ids=[r for _, r in BAD_LINES])
def test_bad_media_is_a_line_error_and_nothing_is_written(media_root, settings, tmp_path, media, reason):
    settings.WORKBENCH_MEDIA_MAX_BYTES = 2000
    (media_root / "a.wav").write_bytes(wav_bytes(0.05))
    (media_root / "img.png").write_bytes(PNG)
    (media_root / "text.png").write_bytes(b"just some text")
    (media_root / "big.wav").write_bytes(wav_bytes(1))
    (media_root / "clips").mkdir()
    outside = tmp_path / "outside.wav"
    outside.write_bytes(wav_bytes(0.05))
    os.symlink(outside, media_root / "escape.wav")
    rows = [item(1, {"source": {"type": "audio", "path": "a.wav"}}), item(2, media)]
    messages = refused(jsonl(rows))
    assert len(messages) == 1 and messages[0].startswith("line 2: "), messages
    assert reason in messages[0]


def test_sniffed_formats():
    """The first bytes of each accepted format (as its specification starts a file)."""
    assert sniff(wav_bytes()) == ("audio", "audio/wav")
    assert sniff(b"OggS\x00\x02" + b"\x00" * 10) == ("audio", "audio/ogg")
    assert sniff(b"ID3\x04\x00" + b"\x00" * 10) == ("audio", "audio/mpeg")
    assert sniff(b"\xff\xfb\x90\x64" + b"\x00" * 10) == ("audio", "audio/mpeg")  # MPEG-1 layer III frame
    assert sniff(b"fLaC\x00\x00\x00\x22" + b"\x00" * 8) == ("audio", "audio/flac")
    assert sniff(PNG) == ("image", "image/png")
    assert sniff(JPEG) == ("image", "image/jpeg")
    assert sniff(b"GIF89a" + b"\x00" * 10) == ("image", "image/gif")
    assert sniff(b"RIFF\x24\x00\x00\x00WEBPVP8 ") == ("image", "image/webp")
    assert sniff(MP4) == ("video", "video/mp4")
    assert sniff(WEBM) == ("video", "video/webm")
    assert sniff(b"<html>hello</html>") is None


def _zip_refused(media_root, data: bytes) -> str:
    messages = refused(data, filename="d.zip")
    assert len(messages) == 1, messages
    assert list((media_root / "datasets").iterdir()) == []  # the staging folder is gone
    return messages[0]


def test_zip_bomb_is_refused(media_root, settings):
    settings.WORKBENCH_MEDIA_ZIP_MAX_BYTES = 1_000_000
    settings.WORKBENCH_MEDIA_MAX_BYTES = 10_000_000
    # 5 MB of zeros compress to a few KB; the headers' sizes are not trusted, the bytes written are.
    bomb = wav_bytes(0.01) + b"\x00" * 5_000_000
    data = zip_bytes({"d.jsonl": jsonl([item(1, {"source": {"type": "audio", "path": "b.wav"}})]), "b.wav": bomb})
    assert len(data) < 100_000
    assert "more than 1,000,000 bytes in all (WORKBENCH_MEDIA_ZIP_MAX_BYTES)" in _zip_refused(media_root, data)


def test_zip_file_over_the_per_file_limit(media_root, settings):
    settings.WORKBENCH_MEDIA_MAX_BYTES = 1000
    data = zip_bytes({"d.jsonl": jsonl([item(1)]), "b.wav": wav_bytes(1)})
    assert "zip entry 'b.wav' is more than 1,000 bytes" in _zip_refused(media_root, data)


def test_zip_with_too_many_files(media_root, settings):
    settings.WORKBENCH_MEDIA_ZIP_MAX_FILES = 3
    files = {"d.jsonl": jsonl([item(1)]), **{f"{n}.png": PNG for n in range(3)}}
    assert "the zip has 4 entries, more than 3" in _zip_refused(media_root, zip_bytes(files))


@pytest.mark.parametrize(
    "files,reason",
    [
        ({"d.jsonl": b"", "../evil.wav": b"x"}, "has a '..' part"),
        ({"d.jsonl": b"", "/abs.wav": b"x"}, "is absolute"),
        ({"a.jsonl": b"", "b.csv": b""}, "exactly one dataset file (.jsonl, .csv or .tsv) at its top level, found 2"),
        ({"sub/d.jsonl": b""}, "found 0"),
    ],
)
def test_zip_bad_names(media_root, files, reason):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name), data)  # ZipInfo keeps the name as given
    assert reason in _zip_refused(media_root, out.getvalue())


def test_zip_symlink_entry_refused(media_root):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("d.jsonl", jsonl([item(1)]))
        link = zipfile.ZipInfo("link.wav")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, "/etc/passwd")
    assert "is a symbolic link" in _zip_refused(media_root, out.getvalue())


def test_zip_line_error_leaves_no_files(media_root):
    rows = [
        item(1, {"source": {"type": "audio", "path": "1.wav"}}),
        item(2, {"source": {"type": "audio", "path": "2.wav"}}),
    ]
    data = zip_bytes({"d.jsonl": jsonl(rows), "1.wav": wav_bytes()})
    message = _zip_refused(media_root, data)
    assert message.startswith("line 2: media source: file '2.wav' not found")


def test_zip_whose_dataset_file_is_over_the_upload_limit(media_root, settings):
    """The dataset file in a zip is bounded like the same file uploaded alone (a 1 MB zip once
    expanded to a 1 GB dataset file that the web request then read for 48 s): refused from the
    zip's directory before anything is extracted."""
    settings.WORKBENCH_UPLOAD_MAX_BYTES = 100_000
    data = zip_bytes({"d.jsonl": jsonl([item(1)]) + b" " * 5_000_000})
    assert len(data) < 100_000
    assert "zip entry 'd.jsonl' is more than 100,000 bytes (WORKBENCH_UPLOAD_MAX_BYTES)" in _zip_refused(
        media_root, data
    )
