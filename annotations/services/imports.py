"""Atomic imports of datasets and judgements (contract in ARCHITECTURE.md).

Every import reads and checks the WHOLE file first, then writes in one
transaction: on any problem nothing is written and `ImportFailed` carries one
`LineError` per problem (line numbers are 1-based physical lines).

Dataset files
-------------
JSONL, one item a line (all keys but ``item`` optional)::

    {"item": "e2e-17", "source": "...", "data": [["Blue Spice", "eatType", "pub"]],
     "references": ["...", "..."], "outputs": {"sysA": "...", "sysB": "..."}, "meta": {}}

``data`` is a list of [subject, predicate, object] string triples; ``meta`` an
object; unknown keys are errors (they are usually typos such as ``output``).

CSV ("wide", one item a row, UTF-8, comma-separated; ``.tsv`` files are read
tab-separated), a header line naming the columns:

- ``item`` (required): the item id;
- ``source``: the input text;
- ``data``: JSON list of [subject, predicate, object] triples;
- ``meta``: JSON object;
- ``reference``, ``reference_2``, ``reference_3``, ... (also ``reference_1``):
  one reference a column, in the order of their number (``reference`` first);
- ``output:<system>``: one column per system, e.g. ``output:baseline``.

An empty CSV cell means "absent": an item without a reference or without an
output of some system simply leaves the cell empty (so an empty output text
can only be imported from JSONL).

Importing into an existing dataset adds what is new (items, references of
items that had none, systems, outputs). What the file repeats must equal what
is stored: an item id with a different source / data / meta / references, or
an (item, system) with a different text, is a line error; a field absent from
a line is not compared. Re-importing the same file changes nothing and
reports ``unchanged``.

Texts (source, references, outputs) longer than ``max_text_chars``
(default ``settings.WORKBENCH_MAX_TEXT_CHARS``) are refused.

Judgement files
---------------
JSONL, one judgement a line; the campaign's protocol decides the format:

- rating (likert, rankme): ``{"item", "system", "annotator", "criterion", "score"}``,
  optional ``"rank"`` (whole number >= 1);
- pairwise: ``{"item", "annotator", "criterion", "a": S1, "b": S2, "winner": "a"|"b"|"tie"}``
  (a = the output shown first; stored with the lower output id first, winner flipped);
- best-worst: ``{"item", "annotator", "criterion", "outputs": [S1, S2, ...], "best": S, "worst": S}``.

All formats accept an optional ``"time_spent_ms"``. Annotators are the
project's annotators by name, created when new. A judgement already stored
with the same value (same score, winner, best/worst) is skipped, so
re-importing a file is a no-op; one stored with a different value, or two in
the file for the same unit, is a line error.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from annotations.models import (
    Annotator,
    BestWorstJudgement,
    Campaign,
    Dataset,
    Item,
    JudgementBase,
    Output,
    PairwiseJudgement,
    Project,
    RatingJudgement,
    Reference,
    System,
)
from annotations.selectors import is_project_staff
from annotations.services import judgements as checks
from annotations.services.bulk import rows_insert
from annotations.services.parsing import (
    ImportFailed,
    LineError,
    Problems,
    csv_rows,
    has_nul,
    json_loads,
    jsonl_objects,
    read_bytes,
    sha256,
)
from annotations.services.projects import DEFAULT_PROJECT_NAME, project_get_or_create

__all__ = [
    "LineError",
    "ImportFailed",
    "DatasetImportResult",
    "JudgementImportResult",
    "dataset_import",
    "judgements_import",
]

BATCH_SIZE = 2000
NAME_MAX_CHARS = 200
ITEM_KEYS = ("item", "source", "data", "references", "outputs", "meta")
_REFERENCE_COLUMN = re.compile(r"^reference(?:_(\d+))?$")
OUTPUT_PREFIX = "output:"


@dataclass
class DatasetImportResult:
    dataset: object
    items: int  # items in the file
    outputs: int  # outputs in the file
    created: bool = True  # the dataset was created by this import
    unchanged: bool = False  # nothing new: the file was already imported
    extra: dict = field(default_factory=dict)  # *_created counts, sha256

    def as_json(self) -> dict:
        return {"dataset": self.dataset.name, "items": self.items, "outputs": self.outputs,
                "created": self.created, "unchanged": self.unchanged, **self.extra}


@dataclass
class JudgementImportResult:
    campaign: object
    judgements: int  # judgements in the file
    unchanged: bool = False
    created: int = 0  # judgements written (the others were already stored)
    annotators_created: int = 0

    def as_json(self) -> dict:
        return {"campaign": self.campaign.name, "judgements": self.judgements, "created": self.created,
                "unchanged": self.unchanged, "annotators_created": self.annotators_created}


# ---------------------------------------------------------------- datasets


@dataclass
class _ItemRecord:
    line: int
    external_id: str
    source: str | None = None  # None: absent from the line, not compared
    data: list | None = None
    references: list[str] | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    meta: dict | None = None


def _name(value, what: str) -> tuple[str | None, str | None]:
    """An id or name: a non-empty string (integers are accepted as text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        return None, f"{what} must be a non-empty string, got {value!r}"
    if len(value) > NAME_MAX_CHARS:
        return None, f"{what} is longer than {NAME_MAX_CHARS} characters"
    if "\x00" in value:
        return None, f"{what} contains a NUL character"
    return value, None


def _text(value, what: str, max_chars: int, errors: list[str], *, allow_empty: bool = True) -> str | None:
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
    return value


def _item_record(line: int, obj: dict, max_chars: int) -> tuple[_ItemRecord | None, list[str]]:
    errors: list[str] = []
    unknown = sorted(set(obj) - set(ITEM_KEYS))
    if unknown:
        errors.append(f"unknown field {', '.join(map(repr, unknown))} (expected {', '.join(ITEM_KEYS)})")
    if "item" not in obj:
        errors.append("missing field 'item'")
        return None, errors
    external_id, problem = _name(obj["item"], "item")
    if problem:
        errors.append(problem)
        return None, errors
    record = _ItemRecord(line=line, external_id=external_id)
    if "source" in obj:
        record.source = _text(obj["source"], "source", max_chars, errors)
    if "data" in obj:
        data = obj["data"]
        if not isinstance(data, list) or not all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) for x in t) for t in data
        ):
            errors.append("data must be a list of [subject, predicate, object] string triples")
        elif has_nul(data):
            errors.append("data contains a NUL character")
        elif sum(len(x) for t in data for x in t) > max_chars:
            errors.append(f"data is longer than {max_chars:,} characters (--max-text-chars)")
        else:
            record.data = data
    if "references" in obj:
        refs = obj["references"]
        if not isinstance(refs, list):
            errors.append(f"references must be a list of strings, got {type(refs).__name__}")
        else:
            record.references = [
                _text(r, f"reference {i}", max_chars, errors, allow_empty=False) for i, r in enumerate(refs, 1)
            ]
    if "outputs" in obj:
        outputs = obj["outputs"]
        if not isinstance(outputs, dict):
            errors.append(f"outputs must be an object mapping system names to texts, got {type(outputs).__name__}")
        else:
            for system, text in outputs.items():
                system_name, problem = _name(system, "system name")
                if problem:
                    errors.append(problem)
                    continue
                value = _text(text, f"output of system {system_name!r}", max_chars, errors)
                if value is not None:
                    record.outputs[system_name] = value
    if "meta" in obj:
        meta = obj["meta"]
        if not isinstance(meta, dict):
            errors.append(f"meta must be an object, got {type(meta).__name__}")
        elif has_nul(meta):
            errors.append("meta contains a NUL character")
        else:
            record.meta = meta
    return (None if errors else record), errors


def _csv_objects(raw: bytes, problems: Problems, delimiter: str) -> list[tuple[int, dict]]:
    """Rows of the wide CSV format turned into the JSONL item objects."""
    header, rows = csv_rows(raw, problems, delimiter=delimiter)
    if not header:
        return []
    references: list[tuple[int, str]] = []
    systems: list[tuple[str, str]] = []
    unknown = []
    for column in header:
        match = _REFERENCE_COLUMN.match(column)
        if match:
            references.append((int(match.group(1) or 0), column))
        elif column.startswith(OUTPUT_PREFIX) and column[len(OUTPUT_PREFIX):].strip():
            systems.append((column[len(OUTPUT_PREFIX):].strip(), column))
        elif column not in ("item", "source", "data", "meta"):
            unknown.append(column)
    if "item" not in header:
        problems.add(1, "missing column 'item'")
    if unknown:
        problems.add(1, f"unknown column {', '.join(map(repr, unknown))} (expected item, source, data, meta, "
                        "reference, reference_N, output:SYSTEM)")
    if problems:
        return []
    references.sort()
    objects = []
    for line, row in rows:
        obj: dict = {"item": row["item"]}
        if row.get("source"):
            obj["source"] = row["source"]
        bad = False
        for column in ("data", "meta"):
            if row.get(column, "").strip():
                try:
                    obj[column] = json_loads(row[column])
                except ValueError as exc:
                    problems.add(line, f"column {column}: invalid JSON: {exc}")
                    bad = True
        refs = [row[c] for _, c in references if row[c].strip()]
        if refs:
            obj["references"] = refs
        outputs = {s: row[c] for s, c in systems if row[c] != ""}
        if outputs:
            obj["outputs"] = outputs
        if not bad:
            objects.append((line, obj))
    return objects


def _format_of(fmt: str | None, filename: str | None) -> tuple[str, str]:
    """(format, csv delimiter) from the explicit format or the file name."""
    suffix = Path(filename).suffix.lower() if filename else ""
    if fmt is None:
        fmt = "csv" if suffix in (".csv", ".tsv") else "jsonl"
    if fmt not in ("jsonl", "csv"):
        raise ImportFailed([LineError(0, f"unknown format {fmt!r}: expected jsonl or csv")])
    return fmt, "\t" if suffix == ".tsv" else ","


def _check_permission(user, project: Project) -> None:
    if user is not None and not is_project_staff(user=user, project=project):
        raise PermissionDenied("Only the project's owners and researchers may import into it.")


def dataset_import(
    *,
    stream: BinaryIO | Path,
    dataset_name: str,
    project_name: str | None = None,
    fmt: str | None = None,
    filename: str | None = None,
    user=None,
    max_text_chars: int | None = None,
) -> DatasetImportResult:
    """Import items, references and outputs atomically (formats in the module docstring).

    `fmt` is "jsonl" or "csv" (guessed from `filename` when omitted);
    `user`, when given, must be staff of the project (a new project makes
    them its owner).
    """
    if filename is None and isinstance(stream, (str, Path)):
        filename = str(stream)
    fmt, delimiter = _format_of(fmt, filename)
    max_chars = max_text_chars or settings.WORKBENCH_MAX_TEXT_CHARS
    dataset_name, problem = _name(dataset_name, "dataset name")
    if problem:
        raise ImportFailed([LineError(0, problem)])
    raw = read_bytes(stream)
    digest = sha256(raw)

    problems = Problems()
    objects = jsonl_objects(raw, problems) if fmt == "jsonl" else _csv_objects(raw, problems, delimiter)
    records: list[_ItemRecord] = []
    first_line: dict[str, int] = {}
    for line, obj in objects:
        record, errors = _item_record(line, obj, max_chars)
        for error in errors:
            problems.add(line, error)
        if record is None:
            continue
        if record.external_id in first_line:
            first = first_line[record.external_id]
            problems.add(line, f"duplicate item id {record.external_id!r} (first on line {first})")
            continue
        first_line[record.external_id] = line
        records.append(record)
    if not objects and not problems:
        problems.add(0, "the file holds no items")

    # Conflicts with stored content are checked even when some lines are bad,
    # so one run reports every problem of the file.
    with transaction.atomic():
        # Lock the dataset row: concurrent imports into one dataset run one after the other.
        dataset = (Dataset.objects.select_for_update(of=("self",)).select_related("project")
                   .filter(name=dataset_name).first())
        if dataset is not None:
            if project_name and dataset.project.name != project_name:
                raise ImportFailed([LineError(
                    0, f"dataset {dataset_name!r} already exists in project {dataset.project.name!r}, "
                       f"not {project_name!r}")])
            _check_permission(user, dataset.project)
        else:
            existing_project = Project.objects.filter(name=project_name or DEFAULT_PROJECT_NAME).first()
            if existing_project is not None:
                _check_permission(user, existing_project)
        plan = _dataset_plan(dataset, records, problems)
        problems.raise_if_any()
        return _dataset_write(plan, dataset=dataset, dataset_name=dataset_name, project_name=project_name,
                              user=user, digest=digest, records=records)


@dataclass
class _DatasetPlan:
    new_items: list[_ItemRecord] = field(default_factory=list)
    # (item external id, [texts]) for existing items that had no references
    new_references: list[tuple[str, list[str]]] = field(default_factory=list)
    new_outputs: list[tuple[str, str, str]] = field(default_factory=list)  # (item id, system, text)
    item_ids: dict[str, int] = field(default_factory=dict)
    system_ids: dict[str, int] = field(default_factory=dict)
    next_position: int = 0


def _dataset_plan(dataset: Dataset | None, records: list[_ItemRecord], problems: Problems) -> _DatasetPlan:
    """Compare the file with what is stored: what to add, and the conflicts."""
    plan = _DatasetPlan()
    if dataset is None:
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
    system_names = {pk: name for name, pk in plan.system_ids.items()}
    touched = [stored[r.external_id][0] for r in records if r.external_id in stored]
    references: dict[int, list[str]] = defaultdict(list)
    outputs: dict[tuple[int, str], str] = {}
    for chunk in _chunks(touched, 10_000):
        for item_id, text in Reference.objects.filter(item_id__in=chunk).order_by("item_id", "position").values_list(
            "item_id", "text"
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
            problems.add(record.line, f"item {record.external_id!r} already exists with a different "
                                      f"{', '.join(conflicts)}")
        elif record.references and not references[item_id]:
            plan.new_references.append((record.external_id, record.references))
        for system, text in record.outputs.items():
            existing = outputs.get((item_id, system))
            if existing is None:
                plan.new_outputs.append((record.external_id, system, text))
            elif existing != text:
                problems.add(record.line, f"item {record.external_id!r} already has a different output of "
                                          f"system {system!r}")
    return plan


def _chunks(values: list, size: int):
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _dataset_write(
    plan: _DatasetPlan, *, dataset: Dataset | None, dataset_name: str, project_name: str | None, user,
    digest: str, records: list[_ItemRecord],
) -> DatasetImportResult:
    created = dataset is None
    if created:
        project = project_get_or_create(name=project_name or DEFAULT_PROJECT_NAME, owner=user)
        try:
            with transaction.atomic():
                dataset = Dataset.objects.create(project=project, name=dataset_name, source_sha256=digest)
        except IntegrityError:
            raise ImportFailed([LineError(0, f"dataset {dataset_name!r} was created by a concurrent import; "
                                             "nothing was imported, run the import again")]) from None

    rows_insert(
        Item, ["dataset_id", "external_id", "position", "source", "data", "meta"],
        ((dataset.pk, r.external_id, plan.next_position + i, r.source or "", r.data or [], r.meta or {})
         for i, r in enumerate(plan.new_items)),
    )
    if plan.new_items:
        # COPY returns no ids: read them back, one query for the whole dataset.
        plan.item_ids = dict(Item.objects.filter(dataset=dataset).values_list("external_id", "id"))

    new_references = [(ext, texts) for ext, texts in plan.new_references]
    new_references += [(r.external_id, r.references) for r in plan.new_items if r.references]
    n_references = rows_insert(
        Reference, ["item_id", "position", "text"],
        ((plan.item_ids[ext], p, t) for ext, texts in new_references for p, t in enumerate(texts)),
    )

    new_systems = [
        System(dataset=dataset, name=name)
        for name in dict.fromkeys(s for _, s, _ in plan.new_outputs) if name not in plan.system_ids
    ]
    System.objects.bulk_create(new_systems, batch_size=BATCH_SIZE)
    plan.system_ids.update((s.name, s.pk) for s in new_systems)

    rows_insert(
        Output, ["item_id", "system_id", "text"],
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


# ---------------------------------------------------------------- judgements

_RATING_KEYS = {"item", "system", "annotator", "criterion", "score"}
_PAIRWISE_KEYS = {"item", "annotator", "criterion", "a", "b", "winner"}
_BWS_KEYS = {"item", "annotator", "criterion", "outputs", "best", "worst"}
_KIND_KEYS = {"rating": _RATING_KEYS, "pairwise": _PAIRWISE_KEYS, "bws": _BWS_KEYS}
_OPTIONAL_KEYS = {
    "rating": {"rank", "time_spent_ms"},
    "pairwise": {"time_spent_ms"},
    "bws": {"time_spent_ms"},
}


@dataclass
class _JudgementRecord:
    line: int
    annotator: str
    item_id: int
    criterion: str
    time_spent_ms: int | None
    # rating
    output_id: int | None = None
    score: float | None = None
    rank: int | None = None
    # pairwise (canonical order) and shown order
    a_id: int | None = None
    b_id: int | None = None
    winner: str | None = None
    shown: list[int] = field(default_factory=list)
    # best-worst
    best_id: int | None = None
    worst_id: int | None = None

    def unit(self, kind: str) -> tuple:
        if kind == "rating":
            return (self.annotator, self.output_id, self.criterion)
        if kind == "pairwise":
            return (self.annotator, self.a_id, self.b_id, self.criterion)
        return (self.annotator, checks.tuple_key(self.shown), self.criterion)

    def value(self, kind: str) -> tuple:
        if kind == "rating":
            return (self.score, self.rank)
        if kind == "pairwise":
            return (self.winner,)
        return (self.best_id, self.worst_id)


def _protocol_kind(campaign: Campaign) -> str:
    if campaign.protocol in Campaign.RATING_PROTOCOLS:
        return "rating"
    return "pairwise" if campaign.protocol == Campaign.Protocol.PAIRWISE else "bws"


class _Lookup:
    """Items, systems and outputs of the campaign's dataset, by their file names."""

    def __init__(self, dataset: Dataset):
        self.items = dict(Item.objects.filter(dataset=dataset).values_list("external_id", "id"))
        self.systems = dict(System.objects.filter(dataset=dataset).values_list("name", "id"))
        self.outputs = {
            (item_id, system_id): pk
            for pk, item_id, system_id in Output.objects.filter(item__dataset=dataset).values_list(
                "id", "item_id", "system_id"
            )
        }

    def output(self, item_id: int, external_id: str, value, what: str, errors: list[str]) -> int | None:
        name, problem = _name(value, what)
        if problem:
            errors.append(problem)
            return None
        system_id = self.systems.get(name)
        if system_id is None:
            errors.append(f"unknown system {name!r}")
            return None
        output_id = self.outputs.get((item_id, system_id))
        if output_id is None:
            errors.append(f"system {name!r} has no output for item {external_id!r}")
        return output_id


def _judgement_record(
    line: int, obj: dict, *, campaign: Campaign, kind: str, lookup: _Lookup
) -> tuple[_JudgementRecord | None, list[str]]:
    errors: list[str] = []
    required = _KIND_KEYS[kind]
    missing = sorted(required - set(obj))
    if missing:
        errors.append(f"missing field {', '.join(map(repr, missing))} for a {campaign.protocol} campaign")
    unknown = sorted(set(obj) - required - _OPTIONAL_KEYS[kind])
    other = next((k for k, keys in _KIND_KEYS.items() if k != kind and keys <= set(obj)), None)
    if missing and other:
        return None, [f"this is a {other} judgement but campaign {campaign.name!r} uses the {campaign.protocol} "
                      f"protocol (expected {', '.join(sorted(required))})"]
    if unknown:
        errors.append(f"unknown field {', '.join(map(repr, unknown))} for a {campaign.protocol} campaign "
                      f"(expected {', '.join(sorted(required | _OPTIONAL_KEYS[kind]))})")
    if errors:
        return None, errors

    annotator, problem = _name(obj["annotator"], "annotator")
    if problem:
        errors.append(problem)
    external_id, problem = _name(obj["item"], "item")
    item_id = None
    if problem:
        errors.append(problem)
    else:
        item_id = lookup.items.get(external_id)
        if item_id is None:
            errors.append(f"unknown item {external_id!r} in dataset {campaign.dataset.name!r}")
    criterion = time_spent = None
    try:
        criterion = checks.criterion_check(campaign=campaign, criterion=obj["criterion"])
    except ValidationError as exc:
        errors.extend(exc.messages)
    try:
        time_spent = checks.time_spent_check(obj.get("time_spent_ms"))
    except ValidationError as exc:
        errors.extend(exc.messages)
    if errors:
        return None, errors

    record = _JudgementRecord(line=line, annotator=annotator, item_id=item_id, criterion=criterion,
                              time_spent_ms=time_spent)
    if kind == "rating":
        record.output_id = lookup.output(item_id, external_id, obj["system"], "system", errors)
        try:
            record.score = checks.score_check(campaign=campaign, score=obj["score"])
            record.rank = checks.rank_check(obj.get("rank"))
        except ValidationError as exc:
            errors.extend(exc.messages)
        record.shown = [record.output_id]
    elif kind == "pairwise":
        a = lookup.output(item_id, external_id, obj["a"], "a", errors)
        b = lookup.output(item_id, external_id, obj["b"], "b", errors)
        try:
            winner = checks.winner_check(obj["winner"])
        except ValidationError as exc:
            errors.extend(exc.messages)
            winner = None
        if a is not None and a == b:
            errors.append("a and b name the same system")
        if not errors:
            record.a_id, record.b_id, record.winner = checks.pairwise_canonical(a_id=a, b_id=b, winner=winner)
            record.shown = [a, b]
    else:
        systems = obj["outputs"]
        if not isinstance(systems, list) or len(systems) < 2:
            errors.append("outputs must be a list of at least 2 system names")
            return None, errors
        ids = [lookup.output(item_id, external_id, s, "outputs entry", errors) for s in systems]
        best = lookup.output(item_id, external_id, obj["best"], "best", errors)
        worst = lookup.output(item_id, external_id, obj["worst"], "worst", errors)
        if not errors:
            if len(set(ids)) != len(ids):
                errors.append("outputs lists a system twice")
            elif best not in ids or worst not in ids:
                errors.append("best and worst must be among outputs")
            elif best == worst:
                errors.append("best and worst must be different systems")
            elif len(checks.tuple_key(ids)) > BestWorstJudgement._meta.get_field("tuple_key").max_length:
                errors.append("too many outputs in one tuple")
            record.shown, record.best_id, record.worst_id = ids, best, worst
    return (None if errors else record), errors


def _stored_judgements(campaign: Campaign, kind: str, annotator_ids: dict[str, int]) -> dict[tuple, tuple]:
    """unit -> value of the judgements already stored for the file's annotators."""
    names = {pk: name for name, pk in annotator_ids.items()}
    stored: dict[tuple, tuple] = {}
    for chunk in _chunks(list(names), 10_000):
        if kind == "rating":
            rows = RatingJudgement.objects.filter(campaign=campaign, annotator_id__in=chunk).values_list(
                "annotator_id", "output_id", "criterion", "score", "rank")
            stored.update(((names[a], o, c), (s, r)) for a, o, c, s, r in rows)
        elif kind == "pairwise":
            rows = PairwiseJudgement.objects.filter(campaign=campaign, annotator_id__in=chunk).values_list(
                "annotator_id", "output_a_id", "output_b_id", "criterion", "winner")
            stored.update(((names[an], a, b, c), (w,)) for an, a, b, c, w in rows)
        else:
            rows = BestWorstJudgement.objects.filter(campaign=campaign, annotator_id__in=chunk).values_list(
                "annotator_id", "tuple_key", "criterion", "best_id", "worst_id")
            stored.update(((names[a], k, c), (b, w)) for a, k, c, b, w in rows)
    return stored


def judgements_import(*, stream: BinaryIO | Path, campaign_name: str, user=None) -> JudgementImportResult:
    """Import judgements collected elsewhere, atomically (formats in the module docstring)."""
    campaign = Campaign.objects.select_related("dataset__project").filter(name=campaign_name).first()
    if campaign is None:
        raise ImportFailed([LineError(0, f"no campaign called {campaign_name!r}")])
    _check_permission(user, campaign.dataset.project)
    kind = _protocol_kind(campaign)
    raw = read_bytes(stream)

    problems = Problems()
    objects = jsonl_objects(raw, problems)
    if not objects and not problems:
        problems.add(0, "the file holds no judgements")
    lookup = _Lookup(campaign.dataset)
    records: list[_JudgementRecord] = []
    first_line: dict[tuple, int] = {}
    for line, obj in objects:
        record, errors = _judgement_record(line, obj, campaign=campaign, kind=kind, lookup=lookup)
        for error in errors:
            problems.add(line, error)
        if record is None:
            continue
        unit = record.unit(kind)
        if unit in first_line:
            problems.add(line, f"duplicate judgement: annotator {record.annotator!r} already judged this unit "
                               f"for {record.criterion!r} on line {first_line[unit]}")
            continue
        first_line[unit] = line
        records.append(record)

    project = campaign.dataset.project
    with transaction.atomic():
        # One import per campaign at a time: the stored judgements read below stay true.
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        annotator_ids = dict(
            Annotator.objects.filter(project=project, name__in={r.annotator for r in records}).values_list("name", "id")
        )
        stored = _stored_judgements(campaign, kind, annotator_ids)
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
                _judgements_write(campaign, kind, new_records, annotator_ids)
        except IntegrityError as exc:
            raise ImportFailed([LineError(0, "a judgement of the file was submitted concurrently; nothing was "
                                             f"imported, run the import again ({str(exc).splitlines()[0]})")]) from None
    return JudgementImportResult(campaign=campaign, judgements=len(records), unchanged=not new_records,
                                 created=len(new_records), annotators_created=len(new_names))


def _judgements_write(campaign: Campaign, kind: str, records: list[_JudgementRecord], annotators: dict[str, int]):
    common = ["campaign_id", "annotator_id", "item_id", "criterion", "time_spent_ms", "shown_order", "origin"]

    def base(r: _JudgementRecord) -> tuple:
        return (campaign.pk, annotators[r.annotator], r.item_id, r.criterion, r.time_spent_ms, r.shown,
                JudgementBase.Origin.IMPORT)

    if kind == "rating":
        # The scale is copied onto each row so the database's check constraints enforce it too.
        rows_insert(RatingJudgement, common + ["output_id", "score", "rank", "scale_min", "scale_max"],
                    ((*base(r), r.output_id, r.score, r.rank, campaign.scale_min, campaign.scale_max)
                     for r in records))
    elif kind == "pairwise":
        rows_insert(PairwiseJudgement, common + ["output_a_id", "output_b_id", "winner"],
                    ((*base(r), r.a_id, r.b_id, r.winner) for r in records))
    else:
        rows_insert(BestWorstJudgement, common + ["outputs", "tuple_key", "best_id", "worst_id"],
                    ((*base(r), sorted(r.shown), checks.tuple_key(r.shown), r.best_id, r.worst_id)
                     for r in records))
