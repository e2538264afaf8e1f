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

from pathlib import Path
from typing import BinaryIO

from django.db import IntegrityError, transaction
from django.contrib.auth import get_user_model

from annotations.models import Annotator, Campaign
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
from annotations.services.imports.notes import is_note, note_records, notes_write, stored_notes
from annotations.services.imports.mqm_tsv import mqm_tsv_objects
from annotations.services.imports.reading import jsonl_objects, read_bytes
from annotations.services.imports.results import JudgementImportResult
from annotations.models import Membership
from annotations.services.projects import annotator_get_or_create


FORMATS = ("jsonl", "mqm-tsv")


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

    Every line is read and checked first, then everything is written in one
    transaction: on any problem nothing is written and `ImportFailed`
    carries one `LineError` per problem. `progress` as for `dataset_import`. `fmt`: "jsonl", or
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
    raw = read_bytes(stream)

    problems = Problems(limit=None) if skip_invalid else Problems()
    if fmt == "mqm-tsv":
        objects = mqm_tsv_objects(raw, problems, campaign=campaign, skip_invalid=skip_invalid)
    else:
        objects = jsonl_objects(raw, problems, progress=reading_progress(progress))
    if not objects and not problems:
        problems.add(0, "the file holds no judgements")
    if skip_invalid:
        _whole_file_problems(problems)
        refused = {e.line for e in problems.errors}
        objects = [(n, o) for n, o in objects if n not in refused]
    # A unit's special answers and comments (annotations.services.imports.notes) go to UnitNote.
    lookup = Lookup(campaign.dataset)
    notes = note_records([(n, o) for n, o in objects if is_note(o)], problems, campaign=campaign, lookup=lookup)
    objects = [(n, o) for n, o in objects if not is_note(o)]
    # Lines flagged "control" (degraded / repeat / gold) go to quality control, not to the judgement tables.
    controls, control_problems = control_records(campaign, [(n, o) for n, o in objects if has_control(o)])
    for line, reason in control_problems:
        problems.add(line, reason)
    objects = [(n, o) for n, o in objects if not has_control(o)]
    records = (
        judgement_records(objects, problems, campaign=campaign, protocol=protocol, lookup=lookup) if objects else []
    )

    if progress:
        progress("writing", None)
    project = campaign.dataset.project
    with transaction.atomic():
        # One import per campaign at a time: the stored judgements read below stay true.
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        mapped = _accounts(project, annotator_map or {})
        annotator_ids = dict(
            Annotator.objects.filter(
                project=project,
                namespace=Annotator.Namespace.IMPORT,
                name__in={r.annotator for r in records + controls + notes} - set(mapped),
            ).values_list("name", "id")
        )
        annotator_ids.update(mapped)
        stored = stored_judgements(campaign, protocol, annotator_ids)
        new_records = []
        for record in records:
            previous = stored.get(protocol.import_unit_key(record))
            if previous is None:
                new_records.append(record)
            elif previous != protocol.import_value(record):
                problems.add(
                    record.line,
                    f"annotator {record.annotator!r} already has a different judgement of "
                    f"this unit for {record.criterion!r} in campaign {campaign.name!r}",
                )
        stored_note = stored_notes(campaign, annotator_ids) if notes else {}
        new_notes = []
        for note in notes:
            previous = stored_note.get(note.key)
            if previous is None:
                new_notes.append(note)
            elif previous != note.value:
                problems.add(
                    note.line,
                    f"annotator {note.annotator!r} already has a different note on this unit"
                    f"{' for ' + repr(note.criterion) if note.criterion else ''} in campaign {campaign.name!r}",
                )
        skipped: list[LineError] = []
        if skip_invalid:
            _whole_file_problems(problems)
            skipped = sorted(problems.errors, key=lambda e: e.line)
            refused = {e.line for e in skipped}
            records = [r for r in records if r.line not in refused]
            new_records = [r for r in new_records if r.line not in refused]
            notes = [r for r in notes if r.line not in refused]
            new_notes = [r for r in new_notes if r.line not in refused]
            if not records and not controls and not notes:
                raise ImportFailed(
                    [
                        LineError(
                            0, f"every judgement of the file was refused ({len(skipped)} line(s)); nothing was imported"
                        ),
                        *skipped[:20],
                    ]
                )
        else:
            problems.raise_if_any()

        new_names = sorted({r.annotator for r in new_records + controls + new_notes} - set(annotator_ids))
        Annotator.objects.bulk_create(
            [Annotator(project=project, name=n, namespace=Annotator.Namespace.IMPORT) for n in new_names],
            batch_size=BATCH_SIZE,
            ignore_conflicts=True,
        )
        annotator_ids.update(
            Annotator.objects.filter(
                project=project, namespace=Annotator.Namespace.IMPORT, name__in=new_names
            ).values_list("name", "id")
        )
        try:
            with transaction.atomic():
                judgements_write(campaign, protocol, new_records, annotator_ids)
                new_controls = control_records_write(campaign, controls, annotator_ids)
                notes_write(campaign, new_notes, annotator_ids)
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
    return JudgementImportResult(
        campaign=campaign,
        judgements=len(records) + len(controls) + len(notes),
        unchanged=not new_records and not new_controls and not new_notes,
        created=len(new_records) + new_controls + len(new_notes),
        annotators_created=len(new_names),
        controls=len(controls),
        skipped=skipped,
    )


def _whole_file_problems(problems: Problems) -> None:
    """--skip-invalid leaves out bad lines, never a bad file: problems of the whole file still fail."""
    whole = [e for e in problems.errors if e.line == 0]
    if whole:
        raise ImportFailed(whole)
