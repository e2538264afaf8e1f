"""Writing a dataset import: compare the records with what is stored, then insert what is new.

Importing into an existing dataset adds what is new (items, references of
items that had none, systems, outputs). What the file repeats must equal what
is stored: an item id with a different source / data / meta / references, or
an (item, system) with a different text, is a line error; a field absent from
a line is not compared. Re-importing the same file changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction

from annotations.models import Dataset, Item, Output, Reference, System
from annotations.bulk import rows_insert
from annotations.services.imports.common import BATCH_SIZE, chunks
from annotations.services.imports.dataset_validate import ItemRecord
from annotations.services.imports.errors import ImportFailed, LineError, Problems
from annotations.services.imports.results import DatasetImportResult
from annotations.services.projects import DEFAULT_PROJECT_NAME, project_get_or_create


@dataclass
class DatasetPlan:
    new_items: list[ItemRecord] = field(default_factory=list)
    # (item external id, [texts]) for existing items that had no references
    new_references: list[tuple[str, list[str]]] = field(default_factory=list)
    new_outputs: list[tuple[str, str, str]] = field(default_factory=list)  # (item id, system, text)
    item_ids: dict[str, int] = field(default_factory=dict)
    system_ids: dict[str, int] = field(default_factory=dict)
    next_position: int = 0


def dataset_plan(dataset: Dataset | None, records: list[ItemRecord], problems: Problems) -> DatasetPlan:
    """Compare the file with what is stored: what to add, and the conflicts."""
    plan = DatasetPlan()
    if dataset is None:
        systems_cap_check(records, set(), problems)
        plan.new_items = records
        plan.new_outputs = [(r.external_id, s, t) for r in records for s, t in r.outputs.items()]
        return plan

    stored = {
        ext: (pk, source, data, meta)
        for pk, ext, source, data, meta in Item.objects.filter(dataset=dataset).values_list(
            "id", "external_id", "source", "data", "meta"
        )
    }
    plan.item_ids = {ext: row[0] for ext, row in stored.items()}
    plan.next_position = (
        Item.objects.filter(dataset=dataset).order_by("-position").values_list("position", flat=True).first() or 0
    ) + 1
    plan.system_ids = dict(System.objects.filter(dataset=dataset).values_list("name", "id"))
    systems_cap_check(records, set(plan.system_ids), problems)
    system_names = {pk: name for name, pk in plan.system_ids.items()}
    touched = [stored[r.external_id][0] for r in records if r.external_id in stored]
    references: dict[int, list[str]] = defaultdict(list)
    outputs: dict[tuple[int, str], str] = {}
    for chunk in chunks(touched, 10_000):
        for item_id, text in (
            Reference.objects.filter(item_id__in=chunk).order_by("item_id", "position").values_list("item_id", "text")
        ):
            references[item_id].append(text)
        for item_id, system_id, text in Output.objects.filter(item_id__in=chunk).values_list(
            "item_id", "system_id", "text"
        ):
            outputs[(item_id, system_names[system_id])] = text

    for record in records:
        row = stored.get(record.external_id)
        if row is None:
            plan.new_items.append(record)
            plan.new_outputs.extend((record.external_id, s, t) for s, t in record.outputs.items())
            continue
        item_id, source, data, meta = row
        conflicts = []
        if record.source is not None and record.source != source:
            conflicts.append("source")
        if record.data is not None and record.data != data:
            conflicts.append("data")
        if record.meta is not None and record.meta != meta:
            conflicts.append("meta")
        if record.references is not None and references[item_id] and record.references != references[item_id]:
            conflicts.append("references")
        if conflicts:
            problems.add(
                record.line, f"item {record.external_id!r} already exists with a different {', '.join(conflicts)}"
            )
        elif record.references and not references[item_id]:
            plan.new_references.append((record.external_id, record.references))
        for system, text in record.outputs.items():
            existing = outputs.get((item_id, system))
            if existing is None:
                plan.new_outputs.append((record.external_id, system, text))
            elif existing != text:
                problems.add(
                    record.line, f"item {record.external_id!r} already has a different output of system {system!r}"
                )
    return plan


def systems_cap_check(records: list[ItemRecord], stored: set[str], problems: Problems) -> None:
    """The dataset may hold at most WORKBENCH_DATASET_MAX_SYSTEMS systems: the line of the first
    system over the cap is the error (one message, not one per later line)."""
    cap = settings.WORKBENCH_DATASET_MAX_SYSTEMS
    names = set(stored)
    for record in records:
        for system in record.outputs:
            if system in names:
                continue
            names.add(system)
            if len(names) > cap:
                problems.add(
                    record.line,
                    f"system {system!r} would make more than {cap:,} systems in the dataset "
                    f"({len(stored):,} stored); the limit is WORKBENCH_DATASET_MAX_SYSTEMS",
                )
                return


def dataset_write(
    plan: DatasetPlan,
    *,
    dataset: Dataset | None,
    dataset_name: str,
    project_name: str | None,
    user,
    digest: str,
    records: list[ItemRecord],
) -> DatasetImportResult:
    created = dataset is None
    if created:
        project = project_get_or_create(name=project_name or DEFAULT_PROJECT_NAME, owner=user)
        try:
            with transaction.atomic():
                dataset = Dataset.objects.create(project=project, name=dataset_name, source_sha256=digest)
        except IntegrityError:
            raise ImportFailed(
                [
                    LineError(
                        0,
                        f"dataset {dataset_name!r} was created by a concurrent import; "
                        "nothing was imported, run the import again",
                    )
                ]
            ) from None

    rows_insert(
        Item,
        ["dataset_id", "external_id", "position", "source", "data", "meta"],
        (
            (dataset.pk, r.external_id, plan.next_position + i, r.source or "", r.data or [], r.meta or {})
            for i, r in enumerate(plan.new_items)
        ),
    )
    if plan.new_items:
        # COPY returns no ids: read them back, one query for the whole dataset.
        plan.item_ids = dict(Item.objects.filter(dataset=dataset).values_list("external_id", "id"))

    new_references = [(ext, texts) for ext, texts in plan.new_references]
    new_references += [(r.external_id, r.references) for r in plan.new_items if r.references]
    n_references = rows_insert(
        Reference,
        ["item_id", "position", "text"],
        ((plan.item_ids[ext], p, t) for ext, texts in new_references for p, t in enumerate(texts)),
    )

    new_systems = [
        System(dataset=dataset, name=name)
        for name in dict.fromkeys(s for _, s, _ in plan.new_outputs)
        if name not in plan.system_ids
    ]
    System.objects.bulk_create(new_systems, batch_size=BATCH_SIZE)
    plan.system_ids.update((s.name, s.pk) for s in new_systems)

    rows_insert(
        Output,
        ["item_id", "system_id", "text"],
        ((plan.item_ids[ext], plan.system_ids[s], t) for ext, s, t in plan.new_outputs),
    )
    new_items = plan.new_items

    unchanged = not (created or new_items or n_references or new_systems or plan.new_outputs)
    if not created and dataset.source_sha256 != digest:
        dataset.source_sha256 = digest
        dataset.save(update_fields=["source_sha256", "updated_at"])
    return DatasetImportResult(
        dataset=dataset,
        items=len(records),
        outputs=sum(len(r.outputs) for r in records),
        created=created,
        unchanged=unchanged,
        extra={
            "items_created": len(new_items),
            "references_created": n_references,
            "systems_created": len(new_systems),
            "outputs_created": len(plan.new_outputs),
            "sha256": digest,
        },
    )
