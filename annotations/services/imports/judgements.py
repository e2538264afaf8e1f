"""`judgements_import`: parse, validate, then write a judgement file in one transaction.

Formats in `judgement_validate`. Annotators are imported worker ids: they
live in their own namespace, apart from the workbench's accounts, and are
created when new; `annotator_map` ({name in the file: username}) says
explicitly that a name is an account (a member of the project), whose
judgements they then are. A judgement already stored with the same value is
skipped (re-importing a file is a no-op); one stored with a different value,
or two in the file for the same unit, is a line error.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import BinaryIO

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from annotations.models import Annotator, Campaign, Membership
from annotations.protocols import registry as protocols
from annotations.quality.imports import control_records, control_records_write, has_control
from annotations.services.imports.common import (
    BATCH_SIZE,
    ImportProgress,
    import_permission_check,
    name_check,
    reading_progress,
)
from annotations.services.imports.errors import ImportFailed, LineError, Problems
from annotations.services.imports.judgement_validate import Lookup, judgement_records
from annotations.services.imports.judgement_write import judgements_write, stored_judgements
from annotations.services.imports.mqm_tsv import mqm_tsv_objects
from annotations.services.imports.notes import is_note, note_records, notes_write, stored_notes
from annotations.services.imports.reading import decoded_lines, jsonl_stream, opened
from annotations.services.imports.results import JudgementImportResult
from annotations.services.projects import annotator_get_or_create

FORMATS = ("jsonl", "mqm-tsv")
# Lines checked and written at a time: the memory an import needs beyond its small keys.
STREAM_BATCH_LINES = 1000


def _accounts(project, annotator_map: dict[str, str]) -> dict[str, int]:
    """Annotator ids of the mapped accounts (created as account annotators if new)."""

    ids, problems = {}, []
    for name, username in annotator_map.items():
        user = get_user_model().objects.filter(username=username).first()
        if user is None or not Membership.objects.filter(project=project, user=user).exists():
            problems.append(
                LineError(
                    0, f"--map-annotator {name}={username}: no member of project {project.name!r} has that username"
                )
            )
            continue
        ids[name] = annotator_get_or_create(project=project, name=username, user=user).pk
    if problems:
        raise ImportFailed(problems)
    return ids


def judgements_import(
    *,
    stream: BinaryIO | Path,
    campaign_name: str,
    user=None,
    annotator_map: dict[str, str] | None = None,
    progress: ImportProgress | None = None,
    fmt: str = "jsonl",
    skip_invalid: bool = False,
) -> JudgementImportResult:
    """Import judgements collected elsewhere, atomically (formats in `judgement_validate`).

    The file is read, checked and written in batches of lines inside one transaction
    (memory does not grow with the file, only with its small keys): on any problem nothing is
    written and `ImportFailed` carries one `LineError` per problem. `progress` as for `dataset_import`. `fmt`: "jsonl", or
    "mqm-tsv" (WMT's MQM ratings TSV, an MQM campaign only: `mqm_tsv`).

    `skip_invalid`: import the judgements of the good lines and leave out the refused ones, which
    the result lists in `skipped` (`line N: reason`, every one: the caller writes them to a report).
    A problem with the whole file (line 0) still fails the import, and so does a file where every
    line is refused.
    """
    if fmt not in FORMATS:
        raise ImportFailed([LineError(0, f"unknown format {fmt!r}; expected {' or '.join(FORMATS)}")])
    campaign_name, problem = name_check(campaign_name, "campaign name")
    if problem:
        raise ImportFailed([LineError(0, problem)])
    campaign = Campaign.objects.select_related("dataset__project").filter(name=campaign_name).first()
    if campaign is None:
        raise ImportFailed([LineError(0, f"no campaign called {campaign_name!r}")])
    import_permission_check(user, campaign.dataset.project)
    protocol = protocols.of(campaign)
    if fmt not in protocol.import_formats:
        raise ImportFailed(
            [
                LineError(
                    0,
                    f"--format {fmt} is not a format of {protocol.name} campaigns "
                    f"({', '.join(protocol.import_formats)})",
                )
            ]
        )
    problems = Problems(limit=None) if skip_invalid else Problems()
    project = campaign.dataset.project
    with opened(stream) as source:
        with transaction.atomic():
            # One import per campaign at a time: the stored judgements read below stay true.
            Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
            if fmt == "mqm-tsv":
                # Rows of one judgement may lie anywhere in the file: PostgreSQL groups them (a
                # temporary table of this transaction), then they are written in batches like JSONL lines.
                lines = decoded_lines(source, problems, progress=reading_progress(progress))
                objects = mqm_tsv_objects(lines, problems, campaign=campaign, skip_invalid=skip_invalid)
            else:
                objects = jsonl_stream(source, problems, progress=reading_progress(progress))
            writer = _BatchWriter(campaign, protocol, problems, _accounts(project, annotator_map or {}), skip_invalid)
            objects = iter(objects)
            while batch := list(islice(objects, STREAM_BATCH_LINES)):
                writer.add(batch)
            if progress:
                progress("writing", None)
            if not writer.lines and not problems:
                problems.add(0, "the file holds no judgements")
            skipped: list[LineError] = []
            if skip_invalid:
                _whole_file_problems(problems)
                skipped = sorted(problems.errors, key=lambda e: e.line)
                if not writer.judgements:
                    raise ImportFailed(
                        [
                            LineError(
                                0,
                                f"every judgement of the file was refused ({len(skipped)} line(s)); nothing was imported",
                            ),
                            *skipped[:20],
                        ]
                    )
            else:
                problems.raise_if_any()
    return JudgementImportResult(
        campaign=campaign,
        judgements=writer.judgements,
        unchanged=not writer.created,
        created=writer.created,
        annotators_created=writer.annotators_created,
        controls=writer.controls,
        skipped=skipped,
    )


class _BatchWriter:
    """Checks a batch of a judgement file's lines and writes what is new, inside the import's transaction.

    Across batches it keeps only small keys: the units seen (a unit twice in the file is a line
    error, exactly as when the file was read whole), the notes seen, the annotators' ids and the
    stored judgements of the file's annotators (read once per annotator). Without
    `skip_invalid`, nothing more is written once a problem is found: the import will fail and
    roll back what was written.
    """

    def __init__(self, campaign, protocol, problems: Problems, mapped: dict[str, int], skip_invalid: bool):
        self.campaign, self.protocol, self.problems, self.skip_invalid = campaign, protocol, problems, skip_invalid
        self.project = campaign.dataset.project
        self.lookup = Lookup(campaign.dataset)
        self.mapped = mapped
        self.annotator_ids: dict[str, int] = dict(mapped)
        self.stored: dict[tuple, tuple] = {}
        self.stored_of: set[str] = set()  # annotators whose stored judgements are in `stored`
        self.stored_note: dict[tuple, tuple] = {}
        self.first_line: dict[tuple, int] = {}
        self.notes_seen: set = set()
        self.lines = self.judgements = self.created = self.controls = self.annotators_created = 0

    def add(self, batch: list[tuple[int, dict]]) -> None:
        problems, campaign, protocol = self.problems, self.campaign, self.protocol
        self.lines += len(batch)
        before = len(problems.errors)
        # A unit's special answers and comments (annotations.services.imports.notes) go to UnitNote.
        notes = note_records(
            [(n, o) for n, o in batch if is_note(o)],
            problems,
            campaign=campaign,
            lookup=self.lookup,
            seen=self.notes_seen,
        )
        batch = [(n, o) for n, o in batch if not is_note(o)]
        # Lines flagged "control" (degraded / repeat / gold) go to quality control, not to the judgement tables.
        controls, control_problems = control_records(campaign, [(n, o) for n, o in batch if has_control(o)])
        for line, reason in control_problems:
            problems.add(line, reason)
        batch = [(n, o) for n, o in batch if not has_control(o)]
        records = (
            judgement_records(
                batch, problems, campaign=campaign, protocol=protocol, lookup=self.lookup, first_line=self.first_line
            )
            if batch
            else []
        )
        self._known({r.annotator for r in records + controls + notes})
        new_records = []
        for record in records:
            previous = self.stored.get(protocol.import_unit_key(record))
            if previous is None:
                new_records.append(record)
            elif previous != protocol.import_value(record):
                problems.add(
                    record.line,
                    f"annotator {record.annotator!r} already has a different judgement of "
                    f"this unit for {record.criterion!r} in campaign {campaign.name!r}",
                )
        new_notes = []
        for note in notes:
            previous = self.stored_note.get(note.key)
            if previous is None:
                new_notes.append(note)
            elif previous != note.value:
                problems.add(
                    note.line,
                    f"annotator {note.annotator!r} already has a different note on this unit"
                    f"{' for ' + repr(note.criterion) if note.criterion else ''} in campaign {campaign.name!r}",
                )
        if self.skip_invalid:
            if any(e.line == 0 for e in problems.errors[before:]):
                return
            refused = {e.line for e in problems.errors[before:]}
            records = [r for r in records if r.line not in refused]
            new_records = [r for r in new_records if r.line not in refused]
            notes = [r for r in notes if r.line not in refused]
            new_notes = [r for r in new_notes if r.line not in refused]
        elif problems:
            return  # the import fails: the rest of the file is only checked
        self.judgements += len(records) + len(controls) + len(notes)
        self.controls += len(controls)
        self._create_annotators({r.annotator for r in new_records + controls + new_notes})
        try:
            with transaction.atomic():
                judgements_write(campaign, protocol, new_records, self.annotator_ids)
                new_controls = control_records_write(campaign, controls, self.annotator_ids)
                notes_write(campaign, new_notes, self.annotator_ids)
        except IntegrityError as exc:
            raise ImportFailed(
                [
                    LineError(
                        0,
                        "a judgement of the file was submitted concurrently; nothing was "
                        f"imported, run the import again ({str(exc).splitlines()[0]})",
                    )
                ]
            ) from None
        self.created += len(new_records) + new_controls + len(new_notes)

    def _known(self, names: set[str]) -> None:
        """Ids and stored judgements (and notes) of the annotators met for the first time."""
        unseen = names - self.stored_of
        if not unseen:
            return
        self.stored_of |= unseen
        self.annotator_ids.update(
            Annotator.objects.filter(
                project=self.project,
                namespace=Annotator.Namespace.IMPORT,
                name__in=unseen - set(self.mapped),
            ).values_list("name", "id")
        )
        ids = {name: self.annotator_ids[name] for name in unseen if name in self.annotator_ids}
        if ids:
            self.stored.update(stored_judgements(self.campaign, self.protocol, ids))
            self.stored_note.update(stored_notes(self.campaign, ids))

    def _create_annotators(self, names: set[str]) -> None:
        new_names = sorted(names - set(self.annotator_ids))
        if not new_names:
            return
        Annotator.objects.bulk_create(
            [Annotator(project=self.project, name=n, namespace=Annotator.Namespace.IMPORT) for n in new_names],
            batch_size=BATCH_SIZE,
            ignore_conflicts=True,
        )
        self.annotator_ids.update(
            Annotator.objects.filter(
                project=self.project, namespace=Annotator.Namespace.IMPORT, name__in=new_names
            ).values_list("name", "id")
        )
        self.annotators_created += len(new_names)


def _whole_file_problems(problems: Problems) -> None:
    """--skip-invalid leaves out bad lines, never a bad file: problems of the whole file still fail."""
    whole = [e for e in problems.errors if e.line == 0]
    if whole:
        raise ImportFailed(whole)
