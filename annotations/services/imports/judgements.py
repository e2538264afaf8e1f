"""`judgements_import`: parse, validate, then write a judgement file in one transaction.

Formats in `judgement_validate`. Annotators are the project's annotators by
name, created when new. A judgement already stored with the same value is
skipped (re-importing a file is a no-op); one stored with a different value,
or two in the file for the same unit, is a line error.
"""
from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from django.db import IntegrityError, transaction

from annotations.models import Annotator, Campaign
from annotations.services.imports.common import (
    BATCH_SIZE,
    ImportProgress,
    import_permission_check,
    name_check,
    reading_progress,
)
from annotations.services.imports.errors import ImportFailed, LineError, Problems
from annotations.services.imports.judgement_validate import Lookup, judgement_records, protocol_kind
from annotations.services.imports.judgement_write import judgements_write, stored_judgements
from annotations.services.imports.reading import jsonl_objects, read_bytes
from annotations.services.imports.results import JudgementImportResult


def judgements_import(
    *, stream: BinaryIO | Path, campaign_name: str, user=None, progress: ImportProgress | None = None
) -> JudgementImportResult:
    """Import judgements collected elsewhere, atomically (formats in `judgement_validate`).

    Every line is read and checked first, then everything is written in one
    transaction: on any problem nothing is written and `ImportFailed`
    carries one `LineError` per problem. `progress` as for `dataset_import`.
    """
    campaign_name, problem = name_check(campaign_name, "campaign name")
    if problem:
        raise ImportFailed([LineError(0, problem)])
    campaign = Campaign.objects.select_related("dataset__project").filter(name=campaign_name).first()
    if campaign is None:
        raise ImportFailed([LineError(0, f"no campaign called {campaign_name!r}")])
    import_permission_check(user, campaign.dataset.project)
    kind = protocol_kind(campaign)
    raw = read_bytes(stream)

    problems = Problems()
    objects = jsonl_objects(raw, problems, progress=reading_progress(progress))
    if not objects and not problems:
        problems.add(0, "the file holds no judgements")
    records = judgement_records(objects, problems, campaign=campaign, kind=kind, lookup=Lookup(campaign.dataset))

    if progress:
        progress("writing", None)
    project = campaign.dataset.project
    with transaction.atomic():
        # One import per campaign at a time: the stored judgements read below stay true.
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        annotator_ids = dict(
            Annotator.objects.filter(project=project, name__in={r.annotator for r in records}).values_list("name", "id")
        )
        stored = stored_judgements(campaign, kind, annotator_ids)
        new_records = []
        for record in records:
            previous = stored.get(record.unit(kind))
            if previous is None:
                new_records.append(record)
            elif previous != record.value(kind):
                problems.add(record.line, f"annotator {record.annotator!r} already has a different judgement of "
                                          f"this unit for {record.criterion!r} in campaign {campaign.name!r}")
        problems.raise_if_any()

        new_names = sorted({r.annotator for r in new_records} - set(annotator_ids))
        Annotator.objects.bulk_create([Annotator(project=project, name=n) for n in new_names],
                                      batch_size=BATCH_SIZE, ignore_conflicts=True)
        annotator_ids.update(Annotator.objects.filter(project=project, name__in=new_names).values_list("name", "id"))
        try:
            with transaction.atomic():
                judgements_write(campaign, kind, new_records, annotator_ids)
        except IntegrityError as exc:
            raise ImportFailed([LineError(0, "a judgement of the file was submitted concurrently; nothing was "
                                             f"imported, run the import again ({str(exc).splitlines()[0]})")]) from None
    return JudgementImportResult(campaign=campaign, judgements=len(records), unchanged=not new_records,
                                 created=len(new_records), annotators_created=len(new_names))


