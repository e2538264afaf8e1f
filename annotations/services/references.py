"""Adding references to a dataset's items: `import_references` (e.g. a post-edit campaign's
`references.jsonl`, the post-edits exported as new references).

A line is `{"item": "<external id>", "reference": "<text>"}`, with any `provenance` (what
`export_dataset` writes; it is not stored). Atomic like the other imports: the file is read a line
at a time and checked first (keeping only the references), and on any problem nothing is written and `ImportFailed` reports `line N:
reason` for each. A reference an item already has (the same text) is skipped, so importing the
same file twice adds nothing; new references go after the item's own, in file order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from annotations.models import Dataset, Item, Reference
from annotations.services.imports.common import import_permission_check, text_check
from annotations.services.imports.errors import ImportFailed, LineError, Problems
from annotations.services.imports.reading import jsonl_stream, opened

REFERENCE_KEYS = frozenset({"item", "reference", "provenance"})


@dataclass
class ReferencesImportResult:
    dataset: str
    lines: int
    created: int
    skipped: int

    def as_json(self) -> dict:
        return {"dataset": self.dataset, "lines": self.lines, "created": self.created, "skipped": self.skipped}


def _dataset(name: str, project: str | None) -> Dataset:
    found = Dataset.objects.filter(name=name)
    if project is not None:
        found = found.filter(project__name=project)
    found = list(found.select_related("project")[:2])
    if not found:
        raise ImportFailed([LineError(0, f"no dataset {name!r}" + (f" in project {project!r}" if project else ""))])
    if len(found) > 1:
        raise ImportFailed([LineError(0, f"several datasets are called {name!r}: name the project (--project)")])
    return found[0]


def references_import(
    *, stream: BinaryIO | Path | str | bytes, dataset_name: str, project_name: str | None = None, user=None
) -> ReferencesImportResult:
    """Add the file's references to the dataset's items (see the module's docstring)."""
    dataset = _dataset(dataset_name, project_name)
    import_permission_check(user, dataset.project)
    problems = Problems()
    items = dict(Item.objects.filter(dataset=dataset).values_list("external_id", "id"))
    wanted: list[tuple[int, str]] = []
    lines = 0
    with opened(stream) as source:
        # Read a line at a time: only the references themselves are kept until they are written.
        for line, obj in jsonl_stream(source, problems):
            lines += 1
            errors: list[str] = []
            unknown = set(obj) - REFERENCE_KEYS
            if unknown:
                errors.append(f"unknown keys: {', '.join(sorted(unknown))} (allowed: item, reference, provenance)")
            for key in ("item", "reference"):
                if key not in obj:
                    errors.append(f"missing {key!r}")
            item_id = None
            if "item" in obj:
                item_id = items.get(obj["item"]) if isinstance(obj["item"], str) else None
                if item_id is None:
                    errors.append(f"item {obj['item']!r} is not in dataset {dataset.name!r}")
            text = None
            if "reference" in obj:
                text = text_check(
                    obj["reference"], "reference", settings.WORKBENCH_MAX_TEXT_CHARS, errors, allow_empty=False
                )
            for reason in errors:
                problems.add(line, reason)
            if not errors:
                wanted.append((item_id, text))
    problems.raise_if_any()
    with transaction.atomic():
        # The items' rows locked in id order: two imports into one dataset take positions in turn.
        ids = sorted({item_id for item_id, _ in wanted})
        list(Item.objects.filter(pk__in=ids).order_by("pk").select_for_update().values_list("pk", flat=True))
        known: dict[int, set[str]] = {i: set() for i in ids}
        for item_id, text in Reference.objects.filter(item_id__in=ids).values_list("item_id", "text"):
            known[item_id].add(text)
        last = dict(
            Reference.objects.filter(item_id__in=ids)
            .values("item_id")
            .annotate(m=Max("position"))
            .values_list("item_id", "m")
        )
        new, skipped = [], 0
        for item_id, text in wanted:
            if text in known[item_id]:
                skipped += 1
                continue
            known[item_id].add(text)
            last[item_id] = last.get(item_id, -1) + 1
            new.append(Reference(item_id=item_id, position=last[item_id], text=text))
        Reference.objects.bulk_create(new, batch_size=2000)
    return ReferencesImportResult(dataset=dataset.name, lines=lines, created=len(new), skipped=skipped)
