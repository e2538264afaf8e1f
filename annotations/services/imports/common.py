"""Checks shared by the dataset and the judgement importers (validation helpers)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from django.core.exceptions import PermissionDenied

from annotations.models import Project
from annotations.selectors import is_project_staff
from workbench.names import name_problem
from workbench.strictjson import lone_surrogate

BATCH_SIZE = 2000

# progress(phase, fraction): ("reading", 0-1) while lines are read, then ("writing", None).
ImportProgress = Callable[[str, float | None], None]
NAME_MAX_CHARS = 200


def name_check(value, what: str) -> tuple[str | None, str | None]:
    """An id or name: a non-empty string (integers are accepted as text); (value, problem).

    Surrounding whitespace is never part of an id or a name: it is stripped,
    so `" n1 "` and `"n1"` are the same item (twice in one file: a duplicate).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        return None, f"{what} must be a non-empty string, got {_shown(value)}"
    value = value.strip()
    if len(value) > NAME_MAX_CHARS:
        return None, f"{what} is longer than {NAME_MAX_CHARS} characters"
    if "\x00" in value:
        return None, f"{what} contains a NUL character"
    # Ids travel through TSV exports (a TAB or LF would split the row) and show on pages: no C0/C1
    # control characters, so every export imports back as it was written.
    control = next((ch for ch in value if unicodedata.category(ch) == "Cc"), None)
    if control is not None:
        return None, f"{what} contains a control character (U+{ord(control):04X})"
    problem = lone_surrogate(value)
    if problem:
        return None, f"{what} {ascii(value)} {problem}"
    # One spelling per name and id: NFD "Démo" is the NFC one (workbench.names); names people
    # read (systems, datasets, projects, campaigns) may not hide characters or mix scripts.
    value = unicodedata.normalize("NFC", value)
    if what.endswith("name"):
        problem = name_problem(value)
        if problem:
            return None, f"{what} {ascii(value[:60])} {problem}"
    return value, None


def text_check(value, what: str, max_chars: int, errors: list[str], *, allow_empty: bool = True) -> str | None:
    """A text (source, reference, output) of at most `max_chars`; problems go to `errors`."""
    if not isinstance(value, str):
        errors.append(f"{what} must be a string, got {type(value).__name__}")
        return None
    if not allow_empty and not value.strip():
        errors.append(f"{what} is empty")
        return None
    if len(value) > max_chars:
        errors.append(f"{what} is {len(value):,} characters long; the limit is {max_chars:,} (--max-text-chars)")
        return None
    if "\x00" in value:
        errors.append(f"{what} contains a NUL character")
        return None
    problem = lone_surrogate(value)
    if problem:
        errors.append(f"{what} {problem}")
        return None
    return value


def _shown(value) -> str:
    # ascii(): a lone surrogate in the value must not break the message itself.
    text = ascii(value)
    return text if len(text) <= 60 else text[:57] + "..."


def import_permission_check(user, project: Project) -> None:
    """Only a project's owners and researchers import into it (no user: the shell, trusted)."""
    if user is not None and not is_project_staff(user=user, project=project):
        raise PermissionDenied("Only the project's owners and researchers may import into it.")


def chunks(values: list, size: int):
    for start in range(0, len(values), size):
        yield values[start : start + size]


def reading_progress(progress: ImportProgress | None) -> Callable[[float], None] | None:
    """The reader's progress callback (a fraction) for an importer's `progress`."""
    if progress is None:
        return None
    return lambda fraction: progress("reading", fraction)
