"""Media files for the tests: real WAV files written by Python's `wave` module, and the first bytes
of the other formats as their specifications give them."""

import io
import wave
import zipfile
from pathlib import Path

import pytest

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
