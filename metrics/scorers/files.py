"""Files named by metric options (`model`, `baseline`, `frequency_file`, `templates_file`, `templates`, `spm`).

A metric run is started by a web user, but its options name files on the
server. So a path is only ever a string in the web process (`check_syntax`:
no filesystem call at all), and only the worker that scores the run resolves
it (`resolve`, `read_bytes`, `model_dir`):

- it must lie, after every link is followed (realpath), inside one of the
  directories the operator configured: WORKBENCH_DATA_DIRS for data files,
  WORKBENCH_MODEL_DIRS for model directories (colon-separated lists; the
  packaged MiniLM and the directories named in WORKBENCH_MODELS are always
  allowed); a relative path is looked up in each directory in turn, then from the
  project directory and the working directory (still only if it lands inside one);
- a data file must be a regular file (no device, FIFO or directory), read
  through a descriptor checked again after opening, at most
  WORKBENCH_METRIC_FILE_MAX_BYTES bytes;
- every refusal (outside the directories, missing, a link out, a device, not
  readable) is the same sentence, "not allowed or not found", so an answer
  tells nothing about the server's files.

The `score` command runs in the operator's own shell on their own files:
it wraps its work in `trusted_paths()`, which lifts the directory rule (files
must still be regular and bounded).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
from pathlib import Path
from typing import Iterator

from metrics.scorers.errors import OptionError

# Options whose string values name files or model directories.
PATH_OPTIONS = frozenset({"model", "encoder", "baseline", "frequency_file", "templates_file", "prompt", "spm"})
MAX_PATH_CHARS = 1024
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

_trusted: contextvars.ContextVar[bool] = contextvars.ContextVar("workbench_trusted_paths", default=False)


class PathRefused(OptionError):
    """A path option that names nothing this worker may read; one message for every cause."""


def refused(option: str) -> PathRefused:
    return PathRefused(
        f"{option}: not allowed or not found (files are read only from the directories "
        f"in WORKBENCH_DATA_DIRS, models only from WORKBENCH_MODEL_DIRS or names in WORKBENCH_MODELS)"
    )


@contextlib.contextmanager
def trusted_paths() -> Iterator[None]:
    """Any path the caller gives is allowed (the operator's own command line)."""
    token = _trusted.set(True)
    try:
        yield
    finally:
        _trusted.reset(token)


def check_syntax(option: str, value: object) -> str:
    """The web process's whole check of a path option: a short, printable string. Never touches the disk."""
    if not isinstance(value, str):
        raise OptionError(f"{option}: expected a path or a name (a string)")
    if not value.strip() or len(value) > MAX_PATH_CHARS:
        raise OptionError(f"{option}: expected a path or a name of 1 to {MAX_PATH_CHARS} characters")
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise OptionError(f"{option}: the path has control characters")
    return value


def _setting(name: str) -> list[str]:
    value: object = None
    try:
        from django.conf import settings  # lazy: metrics.scorers stays importable without Django

        if settings.configured:
            value = getattr(settings, name, None)
    except ImportError:  # the scorers used without Django
        value = None
    if value is None:
        value = os.environ.get(name, "")
    if isinstance(value, (str, int)):
        value = str(value).split(os.pathsep)
    return [str(v) for v in value if str(v).strip()]


def allowed_dirs(kind: str) -> list[str]:
    """Real paths of the directories a worker may read `kind` ("data" or "model") from."""
    if kind == "model":
        from metrics.scorers.loading import configured_models, packaged_model_dirs  # lazy: cycle with loading

        raw = _setting("WORKBENCH_MODEL_DIRS") + packaged_model_dirs()
        with contextlib.suppress(OptionError):
            raw += list(configured_models().values())
    else:
        raw = _setting("WORKBENCH_DATA_DIRS")
    out = []
    for entry in raw:
        real = os.path.realpath(os.path.expanduser(entry))
        if real not in out:
            out.append(real)
    return out


def _bases() -> list[str]:
    """The project directory (settings.BASE_DIR, where `make run` starts) and the working directory."""
    out = []
    try:
        from django.conf import settings  # lazy: metrics.scorers stays importable without Django

        if settings.configured and getattr(settings, "BASE_DIR", None):
            out.append(str(settings.BASE_DIR))
    except ImportError:  # the scorers used without Django
        pass
    with contextlib.suppress(OSError):  # a working directory removed under us
        out.append(os.getcwd())
    return list(dict.fromkeys(out))


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def resolve(option: str, value: object, *, kind: str = "data") -> Path:
    """The real path `value` names, if this worker may read it; PathRefused otherwise.
    kind "data": a regular file; kind "model": a directory."""
    value = check_syntax(option, value)
    path = os.path.expanduser(value)
    trusted = _trusted.get()
    roots = allowed_dirs(kind)
    if os.path.isabs(path) or trusted:
        candidates = [os.path.abspath(path)]
    else:
        # Inside each directory first ("tiny-judge"), then from the project and the working
        # directory ("var/models/tiny-judge", as a researcher types it next to manage.py):
        # all of them only where the real path lands inside an allowed directory.
        candidates = [os.path.join(root, path) for root in roots]
        candidates += [os.path.join(base, path) for base in _bases()]
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if not trusted and not any(_inside(real, root) for root in roots):
            continue
        try:
            mode = os.stat(real).st_mode
        except (OSError, ValueError):
            continue
        if (kind == "model" and stat.S_ISDIR(mode)) or (kind != "model" and stat.S_ISREG(mode)):
            return Path(real)
    raise refused(option)


def max_bytes() -> int:
    values = _setting("WORKBENCH_METRIC_FILE_MAX_BYTES")
    try:
        return int(values[0]) if values else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES


def read_bytes(option: str, value: object) -> bytes:
    """The content of an allowed regular file, at most `max_bytes()` of it."""
    real = resolve(option, value)
    limit = max_bytes()
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError:
        raise refused(option) from None
    try:
        # Checked again on the descriptor: the path may have been swapped since resolve().
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise refused(option)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        raise refused(option) from None
    finally:
        os.close(fd)
    if size > limit:
        raise OptionError(f"{option}: the file is larger than {limit} bytes (WORKBENCH_METRIC_FILE_MAX_BYTES)")
    return b"".join(chunks)


def read_text(option: str, value: object) -> str:
    try:
        return read_bytes(option, value).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise OptionError(f"{option}: the file is not UTF-8 text") from None
