"""Media of dataset items (issue 41): audio, image and video files beside the texts.

An item line may carry ``"media": {"source": {"type": "audio", "path": "clips/17.wav"},
"reference": {"type": "image", "path": "ref/17.png", "alt": "..."}}``. Each path is relative:
to ``settings.WORKBENCH_MEDIA_ROOT`` (files already there), or to the dataset's zip when the
dataset file comes zipped with its media (`zip_extract`: the files go under
``datasets/<name>-<digest>/`` of the media root, and the stored paths say so). The stored
path is always relative to the media root; the server never fetches a URL.

Refused, each as ``line N: reason``: a role other than source / reference, a type outside
`MEDIA_TYPES`, a URL, an absolute path, a ``..`` part, a path that leads (through a symlink)
out of the root, a missing file, one larger than ``WORKBENCH_MEDIA_MAX_BYTES``, and a file whose
first bytes are not of its type (RIFF/WAVE, OggS, ID3 or an MPEG audio frame, fLaC; PNG, JPEG,
GIF, WebP; an MP4 ``ftyp`` box, WebM/Matroska).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath

from django.conf import settings

from annotations.services.imports.errors import ImportFailed, LineError
from annotations.services.imports.reading import has_nul

MEDIA_ROLES = ("source", "reference")
MEDIA_TYPES = ("audio", "image", "video")
MEDIA_KEYS = ("type", "path", "alt")
ALT_MAX_CHARS = 500
HEADER_BYTES = 16
DATASET_SUFFIXES = (".jsonl", ".csv", ".tsv")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, file:, data:, C: ...


def sniff(head: bytes) -> tuple[str, str] | None:
    """(type, MIME type) of a file from its first bytes; None when none of the accepted formats."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio", "audio/wav"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image", "image/webp"
    if head[:4] == b"OggS":
        return "audio", "audio/ogg"
    if head[:4] == b"fLaC":
        return "audio", "audio/flac"
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and head[1] & 0x06):
        return "audio", "audio/mpeg"  # an ID3 tag, or an MPEG audio frame's sync (layer bits not 00)
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "image", "image/png"
    if head[:3] == b"\xff\xd8\xff":
        return "image", "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image", "image/gif"
    if head[4:8] == b"ftyp":
        return "video", "video/mp4"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "video", "video/webm"
    return None


def media_shape_check(value, errors: list[str]) -> dict | None:
    """The item's ``media`` object checked without the files: roles, types, paths; None when bad."""
    if not isinstance(value, dict):
        errors.append(f"media must be an object mapping source / reference to a file, got {type(value).__name__}")
        return None
    result = {}
    bad = False
    for role, entry in value.items():
        if role not in MEDIA_ROLES:
            errors.append(f"media: unknown role {role!r} (expected {', '.join(MEDIA_ROLES)})")
            bad = True
            continue
        if not isinstance(entry, dict):
            errors.append(f"media {role}: expected an object with type and path, got {type(entry).__name__}")
            bad = True
            continue
        unknown = sorted(set(entry) - set(MEDIA_KEYS))
        if unknown:
            errors.append(f"media {role}: unknown field {', '.join(map(repr, unknown))} (expected type, path, alt)")
            bad = True
            continue
        kind, path, alt = entry.get("type"), entry.get("path"), entry.get("alt", "")
        if kind not in MEDIA_TYPES:
            errors.append(f"media {role}: type must be one of {', '.join(MEDIA_TYPES)}, got {kind!r}")
            bad = True
        if not isinstance(alt, str) or len(alt) > ALT_MAX_CHARS or has_nul(alt):
            errors.append(f"media {role}: alt must be a text of at most {ALT_MAX_CHARS} characters")
            bad = True
        problem = path_problem(path)
        if problem:
            errors.append(f"media {role}: {problem}")
            bad = True
        if not bad:
            result[role] = {"type": kind, "path": path, **({"alt": alt} if alt else {})}
    return None if bad else result


def path_problem(path) -> str | None:
    """Why `path` cannot name a file under the media root (None: it can, if the file is there)."""
    if not isinstance(path, str) or not path.strip():
        return "path must be a non-empty text"
    if has_nul(path) or len(path) > 1000:
        return "path is not a usable file name"
    if _URL.match(path) or path.startswith("//"):
        return f"path {path!r} is a URL or has a scheme: the server never fetches remote files; give a relative path"
    if path.startswith(("/", "\\")):
        return f"path {path!r} is absolute: give a path relative to the media root"
    if "\\" in path:
        return f"path {path!r} has a backslash: use / between folders"
    if ".." in PurePosixPath(path).parts:
        return f"path {path!r} has a '..' part: it must stay under the media root"
    return None


class MediaFiles:
    """The files of one import: `check` finds an item's media under `base` (the media root, or a
    zip's extracted folder) and returns its entries with paths relative to the media root, the
    MIME type found in the file and its size."""

    def __init__(self, base: Path | None = None, *, stored_prefix: str = "") -> None:
        self.root = Path(settings.WORKBENCH_MEDIA_ROOT)
        self.base = Path(base) if base is not None else self.root
        self.stored_prefix = stored_prefix
        self.max_bytes = settings.WORKBENCH_MEDIA_MAX_BYTES

    def check(self, media: dict, errors: list[str]) -> dict | None:
        result = {}
        for role, entry in media.items():
            found = self._file(role, entry, errors)
            if found is None:
                return None
            result[role] = found
        return result

    def _file(self, role: str, entry: dict, errors: list[str]) -> dict | None:
        path = entry["path"]
        base = os.path.realpath(self.base)
        full = os.path.join(base, *PurePosixPath(path).parts)
        real = os.path.realpath(full)
        if os.path.commonpath([real, base]) != base:
            errors.append(f"media {role}: {path!r} leads out of the media folder (a symlink?)")
            return None
        try:
            info = os.stat(real)
        except OSError:
            errors.append(f"media {role}: file {path!r} not found under the media folder")
            return None
        if not stat.S_ISREG(info.st_mode):
            errors.append(f"media {role}: {path!r} is not a file")
            return None
        if info.st_size > self.max_bytes:
            errors.append(
                f"media {role}: {path!r} is {info.st_size:,} bytes, more than the {self.max_bytes:,} allowed "
                "(WORKBENCH_MEDIA_MAX_BYTES)"
            )
            return None
        with open(real, "rb") as file:
            found = sniff(file.read(HEADER_BYTES))
        if found is None:
            errors.append(f"media {role}: {path!r} is not an accepted {entry['type']} file (its first bytes)")
            return None
        kind, mime = found
        if kind != entry["type"]:
            errors.append(f"media {role}: {path!r} is declared {entry['type']} but its content is {mime}")
            return None
        stored = f"{self.stored_prefix}{path}" if self.stored_prefix else path
        return {**entry, "path": stored, "mime": mime, "bytes": info.st_size}


def media_path(entry: dict) -> Path | None:
    """The file of a stored media entry, resolved under the media root (None when it left it since)."""
    root = os.path.realpath(settings.WORKBENCH_MEDIA_ROOT)
    real = os.path.realpath(os.path.join(root, *PurePosixPath(entry["path"]).parts))
    if os.path.commonpath([real, root]) != root or not os.path.isfile(real):
        return None
    return Path(real)


def is_zip(head: bytes) -> bool:
    return head[:4] == b"PK\x03\x04"


def zip_extract(stream, target: Path) -> Path:
    """Extract a dataset's zip into `target` (created) and return its dataset file (the one
    .jsonl / .csv / .tsv at the zip's top level). Refused as a whole (`ImportFailed`): more than
    WORKBENCH_MEDIA_ZIP_MAX_FILES entries, more than WORKBENCH_MEDIA_ZIP_MAX_BYTES extracted (counted
    as written, whatever the headers say: a zip bomb stops there), a file over
    WORKBENCH_MEDIA_MAX_BYTES (the dataset file: over WORKBENCH_UPLOAD_MAX_BYTES, as if uploaded
    alone), absolute or '..' names, symlinks. The sizes the zip's directory declares are checked
    first, so a 1 MB zip of a 1 GB file is refused before a byte of it is written."""
    max_files, max_total = settings.WORKBENCH_MEDIA_ZIP_MAX_FILES, settings.WORKBENCH_MEDIA_ZIP_MAX_BYTES
    max_file, max_dataset = settings.WORKBENCH_MEDIA_MAX_BYTES, settings.WORKBENCH_UPLOAD_MAX_BYTES
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ImportFailed([LineError(0, f"not a readable zip file: {exc}")]) from None
    with archive:
        entries = archive.infolist()
        if len(entries) > max_files:
            raise _refused(
                f"the zip has {len(entries):,} entries, more than {max_files:,} (WORKBENCH_MEDIA_ZIP_MAX_FILES)"
            )
        datasets = []
        for info in entries:
            name = info.filename
            problem = path_problem(name.rstrip("/")) if name.rstrip("/") else "an empty name"
            if problem:
                raise _refused(f"zip entry {name!r}: {problem}")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise _refused(f"zip entry {name!r} is a symbolic link: links are refused")
            if not info.is_dir() and "/" not in name and name.lower().endswith(DATASET_SUFFIXES):
                datasets.append(name)
        if len(datasets) != 1:
            raise _refused(
                "the zip must hold exactly one dataset file (.jsonl, .csv or .tsv) at its top level, "
                f"found {len(datasets)}" + (f": {', '.join(datasets)}" if datasets else "")
            )

        def limit_of(info) -> tuple[int, str]:
            if info.filename == datasets[0]:
                return max_dataset, "WORKBENCH_UPLOAD_MAX_BYTES"
            return max_file, "WORKBENCH_MEDIA_MAX_BYTES"

        for info in entries:  # the declared sizes: zipfile never reads past them (a bad CRC then)
            limit, setting = limit_of(info)
            if info.file_size > limit:
                raise _refused(f"zip entry {info.filename!r} is more than {limit:,} bytes ({setting})")
        if sum(info.file_size for info in entries) > max_total:
            raise _refused(f"the zip's files are more than {max_total:,} bytes in all (WORKBENCH_MEDIA_ZIP_MAX_BYTES)")
        target.mkdir(parents=True)
        total = 0
        for info in entries:
            out = target.joinpath(*PurePosixPath(info.filename).parts)
            if info.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            limit, setting = limit_of(info)
            out.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            try:
                with archive.open(info) as source, open(out, "xb") as sink:
                    while chunk := source.read(1024 * 1024):
                        written += len(chunk)
                        total += len(chunk)
                        if written > limit:
                            raise _refused(f"zip entry {info.filename!r} is more than {limit:,} bytes ({setting})")
                        if total > max_total:
                            raise _refused(
                                f"the zip's files are more than {max_total:,} bytes in all "
                                "(WORKBENCH_MEDIA_ZIP_MAX_BYTES)"
                            )
                        sink.write(chunk)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError) as exc:
                raise _refused(f"zip entry {info.filename!r} cannot be read: {exc}") from None
            except FileExistsError:
                raise _refused(f"zip entry {info.filename!r} appears twice") from None
    return target / datasets[0]


def zip_expanded_bytes(stream) -> int | None:
    """What a zip upload expands to, by its directory (zipfile never reads an entry past its
    declared size), so the web process sends a small zip of a large file to a worker; None when the
    stream is not a readable zip (the importer then says why). Leaves the stream at its start."""
    try:
        stream.seek(0)
        if not is_zip(stream.read(4)):
            return None
        stream.seek(0)
        with zipfile.ZipFile(stream) as archive:
            return sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    finally:
        stream.seek(0)


def _refused(reason: str) -> ImportFailed:
    return ImportFailed([LineError(0, reason)])


def folder_remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
