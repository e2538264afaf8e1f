"""Writing a dataset import: compare the records with what is stored, then insert what is new.

Importing into an existing dataset adds what is new (items, references of
items that had none, systems, outputs). What the file repeats must equal what
is stored: an item id with a different source / data / meta / references, or
an (item, system) with a different text, is a line error; a field absent from
a line is not compared. Re-importing the same file changes nothing.

Records come in batches (`DatasetBatchWriter.add`) and each batch is written
before the next is read, so memory stays bounded whatever the file size; the
caller's transaction keeps the import atomic. After the first problem nothing
more is written, but every batch is still checked, so one run reports every
problem of the file.
"""

from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from django.db import IntegrityError, transaction

from annotations.bulk import rows_insert
from annotations.models import Dataset, Item, Output, Reference, System
from annotations.services.imports.common import BATCH_SIZE
from annotations.services.imports.dataset_validate import ItemRecord
from annotations.services.imports.errors import ImportFailed, LineError, Problems
from annotations.services.imports.results import DatasetImportResult
from annotations.services.projects import DEFAULT_PROJECT_NAME, project_get_or_create


def _media_key(media: dict) -> dict:
    """What of an item's media a re-import must repeat: each role's type and file (a zip's copy
    lands in a folder of its own digest, so the same zip gives the same paths)."""
    return {role: (entry["type"], entry["path"]) for role, entry in (media or {}).items()}


class DatasetBatchWriter:
    """Checks batches of records against what is stored and inserts what is new.

    Kept across batches: system names and ids, the next item position and
    counts; nothing per item, so memory does not grow with the file.
    """

    def __init__(
        self, dataset: Dataset | None, *, dataset_name: str, project_name: str | None, user, problems: Problems
    ):
        self.dataset = dataset
        self.dataset_name = dataset_name
        self.project_name = project_name
        self.user = user
        self.problems = problems
        self.created = False
        self.system_ids: dict[str, int] = {}
        self.next_position = 0
        if dataset is not None:
            self.system_ids = dict(System.objects.filter(dataset=dataset).values_list("name", "id"))
            self.next_position = (
                Item.objects.filter(dataset=dataset).order_by("-position").values_list("position", flat=True).first()
                or 0
            ) + 1
        self.stored_systems = len(self.system_ids)
        self.system_names = set(self.system_ids)  # stored and named by the file so far
        self.cap_reported = False
        self.items = self.outputs = 0
        self.items_created = self.references_created = self.systems_created = self.outputs_created = 0

    def add(self, records: list[ItemRecord]) -> None:
        """Check one batch (item ids unique across the file) and, while the file has no problem, write it."""
        self.items += len(records)
        self.outputs += sum(len(r.outputs) for r in records)
        self._systems_cap_check(records)
        new_items, new_references, new_outputs = self._plan(records)
        self._places_check(new_items)
        if self.problems:
            return
        self._write(new_items, new_references, new_outputs)

    def _systems_cap_check(self, records: list[ItemRecord]) -> None:
        """The dataset may hold at most WORKBENCH_DATASET_MAX_SYSTEMS systems: the line of the first
        system over the cap is the error (one message, not one per later line)."""
        if self.cap_reported:
            return
        cap = settings.WORKBENCH_DATASET_MAX_SYSTEMS
        for record in records:
            for system in record.outputs:
                if system in self.system_names:
                    continue
                self.system_names.add(system)
                if len(self.system_names) > cap:
                    self.problems.add(
                        record.line,
                        f"system {system!r} would make more than {cap:,} systems in the dataset "
                        f"({self.stored_systems:,} stored); the limit is WORKBENCH_DATASET_MAX_SYSTEMS",
                    )
                    self.cap_reported = True
                    return

    def _places_check(self, new_items: list[ItemRecord]) -> None:
        """A new item may not take a (doc, doc_pos) a stored item of the dataset holds (the file's own
        items are checked against each other as they are read: dataset_validate)."""
        placed = [r for r in new_items if r.doc_pos is not None]
        if self.dataset is None or not placed:
            return
        taken = {
            (doc, pos): ext
            for doc, pos, ext in Item.objects.filter(
                dataset=self.dataset, doc__in={r.doc for r in placed}, doc_pos__in={r.doc_pos for r in placed}
            ).values_list("doc", "doc_pos", "external_id")
        }
        for r in placed:
            other = taken.get((r.doc, r.doc_pos))
            if other is not None:
                self.problems.add(
                    r.line, f"doc {r.doc!r} already has a segment at doc_pos {r.doc_pos} (item {other!r})"
                )

    def _plan(self, records: list[ItemRecord]):
        """(new items, [(item id, references)] for stored items that had none, [(item id, system, text)])."""
        if self.dataset is None:
            return records, [], [(r.external_id, s, t) for r in records for s, t in r.outputs.items()]
        stored = {
            ext: (pk, source, data, meta, doc, doc_pos, media)
            for pk, ext, source, data, meta, doc, doc_pos, media in Item.objects.filter(
                dataset=self.dataset, external_id__in=[r.external_id for r in records]
            ).values_list("id", "external_id", "source", "data", "meta", "doc", "doc_pos", "media")
        }
        touched = [row[0] for row in stored.values()]
        system_names = {pk: name for name, pk in self.system_ids.items()}
        references: dict[int, list[str]] = defaultdict(list)
        outputs: dict[tuple[int, str], str] = {}
        if touched:
            for item_id, text in (
                Reference.objects.filter(item_id__in=touched)
                .order_by("item_id", "position")
                .values_list("item_id", "text")
            ):
                references[item_id].append(text)
            for item_id, system_id, text in Output.objects.filter(item_id__in=touched).values_list(
                "item_id", "system_id", "text"
            ):
                outputs[(item_id, system_names[system_id])] = text
        new_items, new_references, new_outputs = [], [], []
        for record in records:
            row = stored.get(record.external_id)
            if row is None:
                new_items.append(record)
                new_outputs.extend((record.external_id, s, t) for s, t in record.outputs.items())
                continue
            item_id, source, data, meta, doc, doc_pos, media = row
            conflicts = []
            if record.source is not None and record.source != source:
                conflicts.append("source")
            if record.data is not None and record.data != data:
                conflicts.append("data")
            if record.meta is not None and record.meta != meta:
                conflicts.append("meta")
            if record.doc is not None and (record.doc, record.doc_pos) != (doc, doc_pos):
                conflicts.append("doc/doc_pos")
            if record.media is not None and _media_key(record.media) != _media_key(media):
                conflicts.append("media")
            if record.references is not None and references[item_id] and record.references != references[item_id]:
                conflicts.append("references")
            if conflicts:
                self.problems.add(
                    record.line, f"item {record.external_id!r} already exists with a different {', '.join(conflicts)}"
                )
            elif record.references and not references[item_id]:
                new_references.append((record.external_id, record.references))
            for system, text in record.outputs.items():
                existing = outputs.get((item_id, system))
                if existing is None:
                    new_outputs.append((record.external_id, system, text))
                elif existing != text:
                    self.problems.add(
                        record.line,
                        f"item {record.external_id!r} already has a different output of system {system!r}",
                    )
        return new_items, new_references, new_outputs

    def _write(self, new_items, new_references, new_outputs) -> None:
        if self.dataset is None:
            self._create_dataset()
        dataset = self.dataset
        rows_insert(
            Item,
            ["dataset_id", "external_id", "position", "source", "data", "meta", "doc", "doc_pos", "media"],
            (
                (
                    dataset.pk,
                    r.external_id,
                    self.next_position + i,
                    r.source or "",
                    r.data or [],
                    r.meta or {},
                    r.doc or "",
                    r.doc_pos,
                    r.media or {},
                )
                for i, r in enumerate(new_items)
            ),
        )
        self.next_position += len(new_items)
        self.items_created += len(new_items)
        new_references = new_references + [(r.external_id, r.references) for r in new_items if r.references]
        wanted = {ext for ext, _ in new_references} | {ext for ext, _, _ in new_outputs}
        # COPY returns no ids: read back those of this batch's items.
        item_ids = (
            dict(Item.objects.filter(dataset=dataset, external_id__in=list(wanted)).values_list("external_id", "id"))
            if wanted
            else {}
        )
        self.references_created += rows_insert(
            Reference,
            ["item_id", "position", "text"],
            ((item_ids[ext], p, t) for ext, texts in new_references for p, t in enumerate(texts)),
        )
        new_systems = [
            System(dataset=dataset, name=name)
            for name in dict.fromkeys(s for _, s, _ in new_outputs)
            if name not in self.system_ids
        ]
        System.objects.bulk_create(new_systems, batch_size=BATCH_SIZE)
        self.system_ids.update((s.name, s.pk) for s in new_systems)
        self.systems_created += len(new_systems)
        self.outputs_created += rows_insert(
            Output,
            ["item_id", "system_id", "text"],
            ((item_ids[ext], self.system_ids[s], t) for ext, s, t in new_outputs),
        )

    def _create_dataset(self) -> None:
        project = project_get_or_create(name=self.project_name or DEFAULT_PROJECT_NAME, owner=self.user)
        try:
            with transaction.atomic():
                # The file's sha256 is known once it is all read: `finish` sets it.
                self.dataset = Dataset.objects.create(project=project, name=self.dataset_name, source_sha256="")
        except IntegrityError:
            raise ImportFailed(
                [
                    LineError(
                        0,
                        f"dataset {self.dataset_name!r} was created by a concurrent import; "
                        "nothing was imported, run the import again",
                    )
                ]
            ) from None
        self.created = True

    def finish(self, digest: str) -> DatasetImportResult:
        """The result, once every batch was added without a problem."""
        if self.dataset is None:
            self._create_dataset()
        dataset = self.dataset
        changed = self.items_created or self.references_created or self.systems_created or self.outputs_created
        unchanged = not (self.created or changed)
        if dataset.source_sha256 != digest:
            dataset.source_sha256 = digest
            dataset.save(update_fields=["source_sha256", "updated_at"])
        return DatasetImportResult(
            dataset=dataset,
            items=self.items,
            outputs=self.outputs,
            created=self.created,
            unchanged=unchanged,
            extra={
                "items_created": self.items_created,
                "references_created": self.references_created,
                "systems_created": self.systems_created,
                "outputs_created": self.outputs_created,
                "sha256": digest,
            },
        )
