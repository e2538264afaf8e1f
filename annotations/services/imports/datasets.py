"""`dataset_import`: parse, validate and write a dataset file batch by batch in one transaction.

Formats: JSONL (`dataset_validate`) and the wide CSV (`dataset_parse`); what
an import into an existing dataset may add, and what conflicts (`dataset_write`). Either may come
zipped with the items' media files (`media.zip_extract`).
"""

from __future__ import annotations

import hashlib
import io
import re
import uuid
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import transaction

from annotations.models import Dataset, Project
from annotations.services.imports.common import ImportProgress, import_permission_check, name_check, reading_progress
from annotations.services.imports.dataset_parse import dataset_objects, format_of
from annotations.services.imports.dataset_validate import item_records
from annotations.services.imports.dataset_write import DatasetBatchWriter
from annotations.services.imports.errors import ImportFailed, LineError, Problems
from annotations.services.imports.media import MediaFiles, folder_remove, is_zip, zip_extract
from annotations.services.imports.reading import opened
from annotations.services.imports.results import DatasetImportResult
from annotations.services.projects import DEFAULT_PROJECT_NAME
from workbench.names import taken

# Items read, checked and written at a time: the memory an import needs beyond its item ids.
STREAM_BATCH_ITEMS = 1000


class DatasetNameTaken(ImportFailed):
    """The name belongs to a dataset of another project (dataset names are global)."""


def dataset_name_check(*, dataset_name: str, project_name: str | None, user=None, lock: bool = False) -> Dataset | None:
    """The one rule "dataset names are unique across projects", for an import into `project_name`.

    Returns the dataset already called `dataset_name` (None if there is
    none); raises `DatasetNameTaken` when it belongs to another project.
    The message names that project only to the shell (`user` None): a web
    user may not be a member of it. `lock` locks the dataset row, so
    concurrent imports into one dataset run one after the other.
    """
    datasets = Dataset.objects.select_related("project").filter(name=dataset_name)
    if lock:
        datasets = datasets.select_for_update(of=("self",))
    dataset = datasets.first()
    if dataset is None and taken(Dataset.objects.all(), "name", dataset_name):
        # A look-alike of an existing name ("Ｄｅｍｏ" for "Demo"): refused rather than a second "Demo".
        raise DatasetNameTaken(
            [
                LineError(
                    0,
                    f"dataset name {dataset_name!r} is too like an existing dataset's "
                    "name (names are compared after Unicode NFKC and case folding)",
                )
            ]
        )
    if dataset is not None and project_name and dataset.project.name != project_name:
        if user is None:
            reason = (
                f"dataset {dataset_name!r} already exists in project {dataset.project.name!r}, not {project_name!r}"
            )
        else:
            reason = "this name is taken by a dataset in another project"
        raise DatasetNameTaken([LineError(0, reason)])
    return dataset


def dataset_import(
    *,
    stream: BinaryIO | Path,
    dataset_name: str,
    project_name: str | None = None,
    fmt: str | None = None,
    filename: str | None = None,
    user=None,
    max_text_chars: int | None = None,
    progress: ImportProgress | None = None,
) -> DatasetImportResult:
    """Import items, references and outputs atomically.

    A zip (found by its first bytes) holds the dataset file at its top level and the items' media
    files: they are extracted under WORKBENCH_MEDIA_ROOT's ``datasets/<name>-<digest>/`` and the
    items' media paths, relative to the zip, are stored relative to the media root. A refused
    import leaves no file behind. Without a zip, media paths are relative to the media root.

    A JSONL or CSV/TSV file is read line by line and written in batches
    inside one transaction (memory does not grow with the file, only with
    its item ids; an MQM TSV is grouped into items whole): on any problem nothing is written and `ImportFailed`
    carries one `LineError` per problem (1-based physical lines).
    `fmt` is "jsonl" or "csv" (guessed from `filename` when omitted);
    `user`, when given, must be staff of the project (a new project makes
    them its owner). `progress(phase, fraction)`, when given, hears how far
    the import got: phase "reading" with the fraction of the file read (its
    batches are written meanwhile), then "writing" (no fraction) at the end.
    """
    if filename is None and isinstance(stream, (str, Path)):
        filename = str(stream)
    requested_fmt = fmt
    fmt, delimiter = format_of(fmt, filename)
    max_chars = max_text_chars or settings.WORKBENCH_MAX_TEXT_CHARS
    dataset_name, problem = name_check(dataset_name, "dataset name")
    if problem:
        raise ImportFailed([LineError(0, problem)])
    if project_name is not None:
        project_name, problem = name_check(project_name, "project name")
        if problem:
            raise ImportFailed([LineError(0, problem)])
    # Before reading the file: a taken name fails fast.
    dataset_name_check(dataset_name=dataset_name, project_name=project_name, user=user)
    with opened(stream) as source:
        if is_zip(_peek(source)):
            return _zip_import(
                source,
                dataset_name=dataset_name,
                project_name=project_name,
                fmt=requested_fmt,
                user=user,
                max_chars=max_chars,
                progress=progress,
            )
        return _file_import(
            source,
            dataset_name=dataset_name,
            project_name=project_name,
            fmt=fmt,
            delimiter=delimiter,
            user=user,
            max_chars=max_chars,
            progress=progress,
            media_files=MediaFiles(),
        )


def _peek(source) -> bytes:
    """The file's first bytes, read without moving it (nothing when it cannot seek: stdin)."""
    try:
        start = source.tell()
        head = source.read(4)
        source.seek(start)
    except (OSError, AttributeError, io.UnsupportedOperation):
        return b""
    return head if isinstance(head, bytes) else b""


def _zip_import(source, *, dataset_name, project_name, fmt, user, max_chars, progress) -> DatasetImportResult:
    """A dataset file zipped with its media: extracted to a staging folder under the media root,
    imported with the media found there, then moved to its final folder (or removed when refused)."""
    hasher = hashlib.sha256()
    while chunk := source.read(1024 * 1024):
        hasher.update(chunk)
    source.seek(0)
    root = Path(settings.WORKBENCH_MEDIA_ROOT) / "datasets"
    root.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", dataset_name).strip("-.")[:60] or "dataset"
    final = root / f"{slug}-{hasher.hexdigest()[:16]}"
    staging = root / f".staging-{uuid.uuid4().hex}"
    try:
        dataset_file = zip_extract(source, staging)
        file_fmt, delimiter = format_of(fmt, dataset_file.name)
        with open(dataset_file, "rb") as inner:
            result = _file_import(
                inner,
                dataset_name=dataset_name,
                project_name=project_name,
                fmt=file_fmt,
                delimiter=delimiter,
                user=user,
                max_chars=max_chars,
                progress=progress,
                media_files=MediaFiles(staging, stored_prefix=f"datasets/{final.name}/"),
            )
        if final.exists():
            folder_remove(staging)  # the same zip imported before: its files are already there
        else:
            staging.rename(final)
    except BaseException:
        folder_remove(staging)
        raise
    return result


def _file_import(
    source, *, dataset_name, project_name, fmt, delimiter, user, max_chars, progress, media_files: MediaFiles
) -> DatasetImportResult:
    problems = Problems()
    hasher = hashlib.sha256()
    objects = dataset_objects(
        source, problems, fmt=fmt, delimiter=delimiter, hasher=hasher, progress=reading_progress(progress)
    )
    records = item_records(objects, problems, max_chars=max_chars, media_files=media_files)

    # One transaction around reading and writing: batches are written as they are read and a
    # problem on any line (found after some batches were written) rolls back the whole import.
    with transaction.atomic():
        dataset = dataset_name_check(dataset_name=dataset_name, project_name=project_name, user=user, lock=True)
        if dataset is not None:
            import_permission_check(user, dataset.project)
        else:
            existing_project = Project.objects.filter(name=project_name or DEFAULT_PROJECT_NAME).first()
            if existing_project is not None:
                import_permission_check(user, existing_project)
        writer = DatasetBatchWriter(
            dataset, dataset_name=dataset_name, project_name=project_name, user=user, problems=problems
        )
        while batch := list(islice(records, STREAM_BATCH_ITEMS)):
            writer.add(batch)
        if progress:
            progress("writing", None)
        problems.raise_if_any()
        return writer.finish(hasher.hexdigest())
