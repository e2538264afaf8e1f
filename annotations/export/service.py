"""`export_dataset`: a campaign's validated judgements, outputs and items, with a dataset card.

One pass over the dataset's items in chunks (`chunk_items` items: a few queries each, never a
whole table in memory): each item's judgements go through the filters (`filters.py`), then its
dataset line, its judgements and its outputs (with aggregated human scores and metric scores)
are written at once; the agreement figures are collected on the way and the card is written
last, with the counts every filter left.

Folder (ARCHITECTURE.md): dataset.jsonl, judgements.jsonl, outputs.jsonl, README.md (the HEDS
card), plus campaign.json (the campaign's configuration, enough to re-create it). `--format csv`
writes the three tables as .csv; `--format hf` writes the JSONL files and a card whose YAML header
declares the configs `outputs` and `judgements` for `datasets.load_dataset`.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from django.db.models import Count, Max, Min, Q

from annotations import protocols
from annotations.analysis import agreement as ag
from annotations.analysis.report import ranking_report, waves_report
from annotations.export.card import campaign_configuration, card_text
from annotations.export.consensus import item_consensus
from annotations.export.controls import gold_unit_contents, intra_annotator, relative_check_lines
from annotations.export.croissant import croissant
from annotations.export.filters import Filters
from annotations.export.heds import answers as heds_answers, form_json as heds_form_json
from annotations.export.metric_scores import metric_scores
from annotations.export.pseudonyms import Pseudonyms
from annotations.export.tables import CsvTable, JsonlTable
from annotations.models import (
    Annotator,
    Assignment,
    BackgroundAnswer,
    Campaign,
    Item,
    JudgementBase,
    Output,
    Reference,
    System,
    Unit,
    UnitNote,
)
from annotations.models.quality import AnnotatorDecision, ControlJudgement, GoldUnit, QualitySettings
from annotations.protocols import JudgementRow, Protocol
from annotations.quality.selectors import campaign_quality, quality_control_active
from annotations.selectors.background import background_line, background_questions, background_summary
from annotations.selectors.judgements import ALL, INCLUDED, campaign_judgements
from annotations.selectors.outputs import output_identities
from annotations.services.imports.media import MEDIA_ROLES
from annotations.studies.selectors import platform_counts, platform_ids_of
from workbench.exceptions import DomainError

FORMATS = ("jsonl", "csv", "hf", "mtme", "preferences")
# Above this many judgements, annotators' reliability figures (annotations.quality, which holds every
# answer in memory) are computed only when quality control is in use or asked for (--included-only).
RELIABILITY_MAX_JUDGEMENTS = 200_000
CHUNK_JUDGEMENTS = 10_000
RELIABILITY_KEYS = (
    "agreement_with_others",
    "controls_passed",
    "self_consistency",
    "median_seconds",
    "straight_lining",
    "mann_whitney_p",
    # Relative attention checks (issue 41 part 5): answered and passed, per annotator.
    "relative_judged",
    "relative_passed",
)


class ExportFailed(DomainError):
    """Bad options: one message per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems

    def messages(self) -> list[str]:
        return list(self.problems)

    def api_detail(self):
        # The API has always answered the list of problems.
        return list(self.problems)


@dataclass
class ExportOptions:
    fmt: str = "jsonl"
    real_annotator_ids: bool = False
    included_only: bool = False
    min_consensus: float | None = None
    complete_units_only: bool = False
    systems: list[str] | None = None
    criteria: list[str] | None = None
    licence: str = ""
    # Per-annotator figures (quality-control inclusion, reliability) as a table of their own. Off by
    # default: the same figures in two exports of one campaign would tell which pseudonyms are the same.
    annotator_figures: bool = False
    # Items read per chunk; None: enough for about CHUNK_JUDGEMENTS judgements (at most 500 items).
    chunk_items: int | None = None

    def as_json(self) -> dict:
        return {
            "format": self.fmt,
            "real_annotator_ids": self.real_annotator_ids,
            "included_only": self.included_only,
            "min_consensus": self.min_consensus,
            "complete_units_only": self.complete_units_only,
            "systems": self.systems,
            "criteria": self.criteria,
            "licence": self.licence,
            "annotator_figures": self.annotator_figures,
        }


@dataclass
class ExportResult:
    campaign: str
    out: Path
    files: list[str]
    judgements: int
    outputs: int
    items: int
    annotators: int
    filters: list[dict] = field(default_factory=list)
    agreement: dict = field(default_factory=dict)
    seconds: float = 0.0
    # Special answers and comments written beside the judgements (annotations.services.unit_notes).
    notes: int = 0

    def as_json(self) -> dict:
        return {
            "campaign": self.campaign,
            "out": str(self.out),
            "files": self.files,
            "judgements": self.judgements,
            "outputs": self.outputs,
            "items": self.items,
            "annotators": self.annotators,
            "filters": self.filters,
            "agreement": self.agreement,
            **({"notes": self.notes} if self.notes else {}),
        }


def export_options_check(*, campaign: Campaign, options: ExportOptions) -> None:
    problems = []
    if options.fmt not in FORMATS:
        problems.append(f"--format: unknown format {options.fmt!r} (expected jsonl, csv, hf, mtme or preferences)")
    known_systems = set(_campaign_systems(campaign).values())
    for name in options.systems or []:
        if name not in known_systems:
            problems.append(f"--systems: campaign {campaign.name!r} has no system {name!r}")
    for name in options.criteria or []:
        if name not in campaign.criteria:
            problems.append(f"--criteria: campaign {campaign.name!r} has no criterion {name!r}")
    if options.min_consensus is not None and not 0 <= options.min_consensus <= 1:
        problems.append(f"--min-consensus must be between 0 and 1, got {options.min_consensus}")
    if options.chunk_items is not None and options.chunk_items < 1:
        problems.append("chunk size must be at least 1")
    if problems:
        raise ExportFailed(problems)


def export_dataset(
    *, campaign: Campaign, out: Path, options: ExportOptions, progress: Callable[[float], None] | None = None
) -> ExportResult:
    """Write the export folder `out` (created; must be empty if it exists)."""
    started = time.monotonic()
    export_options_check(campaign=campaign, options=options)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportFailed([f"--out: {out} exists and is not an empty folder"])
    out.mkdir(parents=True, exist_ok=True)
    if options.fmt in ("mtme", "preferences"):
        return _export_for_tools(campaign=campaign, out=out, options=options, started=started)

    protocol = protocols.of(campaign)
    systems = _campaign_systems(campaign)  # id -> name
    if options.systems:
        systems = {pk: name for pk, name in systems.items() if name in set(options.systems)}
    criteria = [c for c in campaign.criteria if not options.criteria or c in options.criteria]
    scales = {c: campaign.criterion_scale(c) for c in campaign.criteria}
    quality, qc_active, reliability_computed = _quality(campaign, protocol, needed=options.included_only)
    included = {pk for pk, q in quality.items() if q.included} if qc_active else None

    filters = Filters(protocol=protocol, redundancy=campaign.redundancy, scales=scales)
    # Partial and abandoned work is never read (the reader keeps complete judgements only): counted here.
    filters.not_counted(
        protocol.model.objects.filter(campaign=campaign).exclude(status=JudgementBase.Status.COMPLETE).count()
    )
    if options.systems:
        filters.system_ids = set(systems)
        filters.add_step("systems", f"systems {', '.join(sorted(systems.values()))} only")
    if options.criteria:
        filters.criteria = set(criteria)
        filters.add_step("criteria", f"criteria {', '.join(criteria)} only")
    if options.included_only:
        if included is None:
            filters.add_step(
                "annotators",
                "included annotators only: quality control is not in use for this campaign, so every annotator is kept",
            )
            filters.annotator_ids = None
            step = filters.step("annotators")
            step.judgements_before = step.judgements_after = -1  # filled in below
        else:
            filters.annotator_ids = included
            filters.add_step(
                "annotators", f"included annotators only ({len(included)} of {len(quality)} kept by quality control)"
            )
    if options.complete_units_only:
        filters.complete_units_only = True
        filters.add_step(
            "complete_units", f"complete units only (judged by at least k = {campaign.redundancy} annotators)"
        )
    if options.min_consensus is not None:
        filters.min_consensus = options.min_consensus
        step = filters.add_step("consensus", f"items whose consensus is at least {options.min_consensus:g}")
        step.items_before = step.items_after = 0

    names = {}
    if options.real_annotator_ids:
        names = dict(Annotator.objects.filter(project=campaign.dataset.project).values_list("id", "name"))
        # Join-link visitors are named by their platform id (PROLIFIC_PID, workerId...): personal
        # data, written only here, never without --real-annotator-ids.

        names.update(platform_ids_of(campaign=campaign))
    pseudonym = Pseudonyms(real_ids=options.real_annotator_ids, names=names)
    runs = metric_scores(dataset=campaign.dataset)
    reliability = {pk: _reliability(q) for pk, q in quality.items()}

    ext = "csv" if options.fmt == "csv" else "jsonl"
    n_refs = (
        Reference.objects.filter(item__dataset=campaign.dataset)
        .values("item_id")
        .annotate(n=Count("id"))
        .aggregate(m=Max("n"))["m"]
        or 0
    )
    # Documents (issue 41): dataset.csv has doc and doc_pos columns only when some item is in one.
    with_docs = Item.objects.filter(dataset=campaign.dataset).exclude(doc="").exists()
    # Media (issue 41): the dataset table says each item's files (role, type, path under the media
    # root, alt text; never the bytes) and judgements their unit's listening time, only when some item has media.
    with_media = Item.objects.filter(dataset=campaign.dataset).exclude(media={}).exists()
    if ext == "csv":
        dataset_columns = (
            ["item", "source", "data", "meta"]
            + (["doc", "doc_pos"] if with_docs else [])
            + (["media"] if with_media else [])
            + ["reference" if k == 0 else f"reference_{k + 1}" for k in range(n_refs)]
            + [f"output:{name}" for name in sorted(systems.values())]
        )
        tables = {
            "dataset": CsvTable(out / "dataset.csv", dataset_columns),
            "judgements": CsvTable(out / "judgements.csv"),
            "outputs": CsvTable(out / "outputs.csv"),
        }
    else:
        tables = {name: JsonlTable(out / f"{name}.jsonl") for name in ("dataset", "judgements", "outputs")}
    exact = options.real_annotator_ids  # nothing to unlink: times as measured
    # The protocol's own judgements file beside the tables (MQM: WMT's MQM TSV); the campaign's first
    # criterion only, as that format has no criterion column.
    extra_file = _ExtraFile(out / protocol.export_file, protocol) if protocol.export_file else None

    # The one agreement definition (annotations.analysis.agreement), fed item by item.
    identity = output_identities(dataset=campaign.dataset)  # units in the data's own order
    agreement: dict[str, ag.TableBuilder] = defaultdict(lambda: ag.TableBuilder(protocol, identity=identity))
    # cESA: the pairwise protocol's agreement on the preferences its scores imply, labelled derived.
    derived: dict[str, ag.TableBuilder] = defaultdict(
        lambda: ag.TableBuilder(protocol.pairs_protocol(), identity=identity)
    )
    annotators_seen: set[int] = set()
    # Special answers and comments (annotations.services.unit_notes): note lines in judgements.jsonl,
    # as import_judgements reads them back; notes.csv beside judgements.csv.
    with_notes = protocol.notes_offered(campaign)
    notes_table = tables["judgements"]
    if with_notes and ext == "csv":
        notes_table = tables["notes"] = CsvTable(out / "notes.csv", list(NOTE_COLUMNS))
    notes_written = 0
    total_items = Item.objects.filter(dataset=campaign.dataset).count()
    chunk_items = options.chunk_items or _chunk_items(campaign, protocol, total_items)
    done_items = 0
    try:
        items = (
            Item.objects.filter(dataset=campaign.dataset)
            .order_by("position", "id")
            .values_list("id", "external_id", "source", "data", "meta", "doc", "doc_pos", "media")
            .iterator(chunk_size=chunk_items)
        )
        for chunk in _chunks(items, chunk_items):
            item_ids = [row[0] for row in chunk]
            outputs = defaultdict(list)  # item id -> [(output id, system id, text)]
            output_system, output_text = {}, {}
            for pk, item_id, system_id, text in (
                Output.objects.filter(item_id__in=item_ids)
                .order_by("item_id", "id")
                .values_list("id", "item_id", "system_id", "text")
            ):
                output_system[pk] = system_id
                output_text[pk] = text
                if system_id in systems:
                    outputs[item_id].append((pk, system_id, text))
            references = defaultdict(list)
            for item_id, text in (
                Reference.objects.filter(item_id__in=item_ids)
                .order_by("item_id", "position")
                .values_list("item_id", "text")
            ):
                references[item_id].append(text)
            judged = defaultdict(list)
            for j in campaign_judgements(
                campaign=campaign, annotators=ALL, item_ids=item_ids, chunk_items=len(item_ids)
            ):
                judged[j.item_id].append(j)
            all_names = _system_names(systems, output_system)
            notes = _unit_notes(campaign, item_ids, filters) if with_notes else {}

            listened = _listening_times(campaign, item_ids) if with_media else {}
            for item_id, external_id, source, data, meta, doc, doc_pos, media in chunk:
                # Written only when some item is in a document: other exports are as they were.
                place = {"doc": doc, "doc_pos": doc_pos} if with_docs else {}
                if with_media:
                    place["media"] = _media_cell(ext, media)
                kept = filters.keep(judged.pop(item_id, []), output_system=output_system)
                if filters.item_dropped(kept):
                    continue
                item_outputs = sorted(outputs.get(item_id, []), key=lambda o: systems[o[1]])
                tables["dataset"].write(
                    _dataset_row(
                        ext,
                        external_id,
                        source,
                        data,
                        meta,
                        references[item_id],
                        [(systems[s], t) for _, s, t in item_outputs],
                        place,
                    )
                )
                for j in kept:
                    tables["judgements"].write(
                        _judgement_row(
                            protocol,
                            j,
                            external_id,
                            all_names,
                            output_system,
                            output_text,
                            pseudonym,
                            systems,
                            exact=exact,
                            listened=listened,
                        )
                    )
                    annotators_seen.add(j.annotator_id)
                    if extra_file is not None and j.criterion == criteria[0]:
                        extra_file.write(
                            j,
                            item=external_id,
                            system=all_names.get(output_system.get(j.output_id)),
                            annotator=pseudonym(j.annotator_id),
                            source=source,
                            text=output_text.get(j.output_id),
                            meta=meta,
                            campaign=campaign.name,
                        )
                for note in notes.get(item_id, ()):
                    notes_table.write(_note_row(note, external_id, all_names, output_system, pseudonym))
                    notes_written += 1
                    annotators_seen.add(note.annotator_id)
                for j in kept:
                    agreement[j.criterion].add([j])
                if protocol.derives_pairs:  # a screen's judgements are all of one item
                    for pair in protocol.pair_rows(kept):
                        derived[pair.criterion].add([pair])
                stats = protocol.output_stats(
                    kept, output_ids=[o[0] for o in item_outputs], criteria=criteria, scales=scales
                )
                consensus = item_consensus(protocol, kept, scales)
                for pk, system_id, text in item_outputs:
                    tables["outputs"].write(
                        {
                            "item": external_id,
                            **place,
                            "system": systems[system_id],
                            "text": text,
                            "item_consensus": consensus,
                            "human": stats[pk],
                            "metrics": {
                                run.key: {"score": run.scores.get(pk), "signature": run.signature} for run in runs
                            },
                        }
                    )
            done_items += len(chunk)
            if progress:
                progress(done_items / total_items if total_items else 1.0)
    finally:
        for table in tables.values():
            table.close()
        if extra_file is not None:
            extra_file.close()
    if options.annotator_figures or options.real_annotator_ids:
        annotators = CsvTable(out / "annotators.csv") if ext == "csv" else JsonlTable(out / "annotators.jsonl")
        try:
            for pk in sorted(annotators_seen, key=pseudonym):
                annotators.write(
                    {
                        "annotator": pseudonym(pk),
                        "included": None if not qc_active else pk in included,
                        **(reliability.get(pk) or {key: None for key in RELIABILITY_KEYS}),
                    }
                )
        finally:
            annotators.close()

    background = _background_table(campaign, out, ext, pseudonym)
    # Relative attention checks (issue 41) as import_judgements reads them back: controls.jsonl.
    relative = relative_check_lines(
        campaign,
        pseudonym=pseudonym,
        annotators=set(included) if options.included_only and included is not None else None,
    )
    if relative:
        with (out / "controls.jsonl").open("w", encoding="utf-8") as f:
            for line in relative:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
    step = filters.step("annotators")
    if step is not None and step.judgements_before == -1:
        previous = filters.steps[filters.steps.index(step) - 1]
        step.judgements_before = step.judgements_after = previous.judgements_after
    # The reader's words (annotations.selectors.judgements), so the card matches the other surfaces.
    who = (
        f"included annotators only ({len(included)} of {len(quality)})"
        if options.included_only and included is not None
        else "all annotators"
    )
    figures = {
        c: _agreement_json(
            ag.criterion_agreement(
                protocol, None, table=agreement[c].table(), scale=campaign.criterion_scale(c), annotators=who
            )
        )
        for c in [c for c in campaign.criteria if c in agreement] + sorted(set(agreement) - set(campaign.criteria))
    }
    if protocol.derives_pairs:
        for c, builder in derived.items():
            if c in figures:
                found = _agreement_json(
                    ag.criterion_agreement(
                        protocol.pairs_protocol(), None, table=builder.table(), scale=(None, None), annotators=who
                    )
                )
                found["headline"]["label"] = f"{found['headline']['label']}, {protocol.derived_pairs_label}"
                figures[c]["pairwise_derived"] = found
    result = ExportResult(
        campaign=campaign.name,
        out=out,
        files=[],
        judgements=tables["judgements"].rows - (notes_written if ext == "jsonl" else 0),
        notes=notes_written,
        outputs=tables["outputs"].rows,
        items=tables["dataset"].rows,
        annotators=len(annotators_seen),
        filters=[s.as_json() for s in filters.steps],
        agreement=figures,
    )
    configuration = campaign_configuration(campaign=campaign, systems=sorted(systems.values()), criteria=criteria)
    configuration["agreement"] = {c: f["headline"] for c, f in figures.items()}
    if protocol.derives_pairs:
        configuration["agreement_pairwise_derived"] = {
            c: f["pairwise_derived"]["headline"] for c, f in figures.items() if "pairwise_derived" in f
        }
    rankings, waves = _rankings_and_waves(campaign, INCLUDED if options.included_only else ALL)
    if waves is not None:
        configuration["waves"] = waves
    # Gold units: the export is for the project's owners and researchers, who see the controls too.
    configuration["quality_control"]["gold_unit_contents"] = gold_unit_contents(campaign)
    configuration["intra_annotator_agreement"] = {
        **intra_annotator(quality, annotators_seen),
        "computed": reliability_computed,
    }

    configuration["recruitment"] = {"join_link_platforms": platform_counts(campaign=campaign)}
    heds = heds_answers(
        campaign=campaign,
        configuration=configuration,
        result=result,
        facts={
            "items_total": total_items,
            "qc_active": qc_active,
            "n_quality": len(quality),
            "n_included": len(included or ()),
            "platforms": configuration["recruitment"]["join_link_platforms"],
            "intra": configuration["intra_annotator_agreement"],
            "protocol_label": protocols.label(campaign.protocol),
            "background": background,
        },
    )
    (out / "heds.json").write_text(
        json.dumps(heds_form_json(heds, criteria), ensure_ascii=False, indent=4) + "\n", encoding="utf-8"
    )
    span = protocol.model.objects.filter(campaign=campaign, status=JudgementBase.Status.COMPLETE).aggregate(
        first=Min("created_at"), last=Max("created_at")
    )
    document = croissant(
        campaign=campaign,
        out=out,
        ext=ext,
        configuration=configuration,
        result=result,
        runs=runs,
        licence=options.licence,
        heds=heds,
        # Days, as the judgements give them without --real-annotator-ids.
        collected=tuple(span[k].date().isoformat() if span[k] else None for k in ("first", "last")),
        real_annotator_ids=options.real_annotator_ids,
        documents=with_docs,
        media_roles=tuple(
            role
            for role in MEDIA_ROLES
            if with_media and Item.objects.filter(dataset=campaign.dataset, media__has_key=role).exists()
        ),
    )
    (out / "croissant.json").write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    (out / "campaign.json").write_text(json.dumps(configuration, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    (out / "README.md").write_text(
        card_text(
            campaign=campaign,
            options=options,
            result=result,
            configuration=configuration,
            runs=runs,
            qc_active=qc_active,
            n_quality=len(quality),
            n_included=len(included or ()),
            reliability_computed=reliability_computed,
            rankings=rankings,
            waves=waves,
            background=background,
            items_total=total_items,
            ext=ext,
            heds=heds,
        ),
        encoding="utf-8",
    )
    result.files = sorted(p.name for p in out.iterdir())
    result.seconds = time.monotonic() - started
    return result


def _export_for_tools(*, campaign: Campaign, out: Path, options: ExportOptions, started: float) -> ExportResult:
    """The layouts other tools read as they are: mt-metrics-eval's test set, preference pairs."""
    if options.fmt == "mtme":
        from annotations.export.mtme import write_mtme  # lazy: cycle with annotations.export

        criterion = (options.criteria or campaign.criteria or [""])[0]
        summary = write_mtme(campaign=campaign, out=out, criterion=criterion, included_only=options.included_only)
        counts = {"outputs": len(summary["systems"]) * len(summary["items"]), "items": len(summary["items"])}
    else:
        from annotations.export.preferences import write_preferences  # lazy: cycle with annotations.export

        summary = write_preferences(
            campaign=campaign, out=out, criteria=options.criteria or [], included_only=options.included_only
        )
        counts = {"outputs": summary["pairs"], "items": summary["items"]}
    return ExportResult(
        campaign=campaign.name,
        out=out,
        files=sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()),
        judgements=0,
        annotators=0,
        seconds=time.monotonic() - started,
        **counts,
    )


NOTE_COLUMNS = ("item", "systems", "annotator", "criterion", "special", "comment")


def _unit_notes(campaign: Campaign, item_ids: list[int], filters: Filters) -> dict[int, list]:
    """item id -> the campaign's notes on its units (one query a chunk), of the annotators kept."""
    found = defaultdict(list)
    # Notes given on control units name the control's own output ids: they go with the controls, not here.
    regular = (
        Q(assignment__isnull=True) | Q(assignment__unit__isnull=True) | Q(assignment__unit__kind=Unit.Kind.REGULAR)
    )
    for note in UnitNote.objects.filter(regular, campaign=campaign, item_id__in=item_ids).order_by("item_id", "id"):
        if filters.annotator_ids is None or note.annotator_id in filters.annotator_ids:
            found[note.item_id].append(note)
    return found


def _note_row(note, external_id: str, names: dict, output_system: dict, pseudonym) -> dict:
    """A note line in the format of annotations.services.imports.notes."""
    row = {
        "item": external_id,
        "systems": sorted(names.get(output_system.get(o), str(o)) for o in note.outputs),
        "annotator": pseudonym(note.annotator_id),
    }
    if note.criterion:
        row.update(criterion=note.criterion, special=note.special)
    else:
        row["comment"] = note.text
    return row


def _background_table(campaign: Campaign, out: Path, ext: str, pseudonym) -> list[str] | None:
    """background.jsonl / .csv: each annotator's answers to the campaign's background questions,
    under the same pseudonym as their judgements; the card's aggregate lines. None (and no file)
    when the campaign asks none."""
    questions = background_questions(campaign)
    if not questions:
        return None
    names = [q["name"] for q in questions]
    rows = BackgroundAnswer.objects.filter(campaign=campaign).values_list("annotator_id", "answers")
    table = (
        CsvTable(out / "background.csv", ["annotator", *names])
        if ext == "csv"
        else JsonlTable(out / "background.jsonl")
    )
    try:
        for pk, answers in sorted(rows, key=lambda row: pseudonym(row[0])):
            table.write({"annotator": pseudonym(pk), **{name: answers.get(name) for name in names}})
    finally:
        table.close()
    summary = background_summary(campaign=campaign, questions=questions)
    return [background_line(q) for q in summary["questions"]]


def _rankings_and_waves(campaign: Campaign, annotators: str) -> tuple[dict | None, dict | None]:
    """The analysis' human rankings (both kinds of clusters) and, with a second wave, human1 vs
    human2 and CV*: over the campaign's counted judgements, as the analysis pages show them."""

    rankings = ranking_report(campaign=campaign, annotators=annotators, bootstrap=0)
    return rankings, waves_report(campaign=campaign, annotators=annotators)


class _ExtraFile:
    """A protocol's extra judgements file (`Protocol.export_file`): tab-separated, unquoted, one
    header row, then the protocol's rows, written as they come; or, for a `.jsonl` name, one JSON
    object a line (post-edit: the post-edits as references)."""

    def __init__(self, path: Path, protocol: Protocol):
        self.protocol = protocol
        self.jsonl = path.suffix == ".jsonl"
        self.handle = path.open("w", encoding="utf-8", newline="")
        if not self.jsonl:
            self.handle.write("\t".join(protocol.export_file_header) + "\n")

    def write(self, row: JudgementRow, **fields) -> None:
        for cells in self.protocol.export_file_rows(row, **fields):
            self.handle.write(json.dumps(cells, ensure_ascii=False) + "\n" if self.jsonl else "\t".join(cells) + "\n")

    def close(self) -> None:
        self.handle.close()


def _agreement_json(figures: dict) -> dict:
    """The card's and campaign.json's agreement figures: the headline with its label, every level."""
    return {
        key: figures[key]
        for key in (
            "headline",
            "krippendorff_alpha",
            "not_headline",
            "n_units",
            "n_annotators",
            "n_judgements",
            "variant",
        )
    }


def _chunk_items(campaign: Campaign, protocol: Protocol, total_items: int) -> int:
    """Items per chunk so that a chunk holds about CHUNK_JUDGEMENTS judgements (memory stays flat)."""
    judgements = protocol.model.objects.filter(campaign=campaign).count()
    per_item = judgements / total_items if total_items else 0
    return max(1, min(500, int(CHUNK_JUDGEMENTS / per_item) if per_item else 500))


def _chunks(rows, size: int):
    chunk = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _campaign_systems(campaign: Campaign) -> dict[int, str]:
    chosen = dict(campaign.systems.values_list("id", "name"))
    return chosen or dict(System.objects.filter(dataset=campaign.dataset).values_list("id", "name"))


def _system_names(systems: dict[int, str], output_system: dict[int, int]) -> dict[int, str]:
    """System names of every output of the chunk (a shown order may name systems left out of the export)."""
    missing = set(output_system.values()) - set(systems)
    if not missing:
        return systems
    names = dict(systems)
    names.update(System.objects.filter(pk__in=missing).values_list("id", "name"))
    return names


def _quality(campaign: Campaign, protocol: Protocol, *, needed: bool) -> tuple[dict, bool, bool]:
    """(quality per annotator id, whether quality control is in use, whether figures were computed)."""

    # The test of annotations.quality.selectors.quality_control_active, without importing that module
    # (it loads scipy.stats: seconds and ~60 MB) when the figures are not needed.
    active = any(
        model.objects.filter(campaign=campaign).exists()
        for model in (QualitySettings, ControlJudgement, GoldUnit, AnnotatorDecision)
    )
    if (
        not (active or needed)
        and protocol.model.objects.filter(campaign=campaign, status="complete").count() > RELIABILITY_MAX_JUDGEMENTS
    ):
        return {}, False, False

    return campaign_quality(campaign=campaign), quality_control_active(campaign=campaign), True


def _reliability(quality) -> dict:
    found = quality.as_json()
    relative = found.get("relative") or {}
    found.update(relative_judged=relative.get("judged", 0), relative_passed=relative.get("passed", 0))
    return {key: found.get(key) for key in RELIABILITY_KEYS}


def _dataset_row(
    ext: str,
    external_id: str,
    source: str,
    data,
    meta,
    references: list[str],
    outputs: list[tuple[str, str]],
    place: dict,
) -> dict:
    if ext == "csv":
        row = {
            "item": external_id,
            "source": source or None,
            "data": json.dumps(data) if data else None,
            "meta": json.dumps(meta, ensure_ascii=False) if meta else None,
            **place,
        }
        row.update({"reference" if k == 0 else f"reference_{k + 1}": text for k, text in enumerate(references)})
        row.update({f"output:{name}": text for name, text in outputs})
        return row
    return {
        "item": external_id,
        "source": source,
        "data": data,
        "references": references,
        "outputs": dict(outputs),
        "meta": meta,
        **place,
    }


def _judgement_row(
    protocol: Protocol,
    j: JudgementRow,
    external_id: str,
    names: dict[int, str],
    output_system: dict,
    output_text: dict,
    pseudonym: Pseudonyms,
    exported: dict[int, str],
    *,
    exact: bool,
    listened: dict | None = None,
) -> dict:
    """One judgement. With pseudonyms, nothing on the row is peculiar to its annotator beyond the
    judgement itself (what was judged, how, and the time spent on it): no per-annotator figures
    (annotators.jsonl has them, on request) and the day instead of the moment it was judged. A
    microsecond timestamp is the same in every export of the judgement, so it would tell which
    pseudonyms of two exports are one annotator."""

    def name(output_id):
        return names.get(output_system.get(output_id))

    # Outputs of systems left out of the export are left out of the shown order too, so that the
    # file imports back against the exported dataset.
    shown = [o for o in (j.shown_order or []) if output_system.get(o) in exported] or j.output_ids()
    fields, texts, shown = protocol.export_fields(
        j, name=name, annotator=pseudonym(j.annotator_id), text=output_text.get, shown=shown
    )
    row: dict = {"item": external_id, **fields}
    row["time_spent_ms"] = j.time_spent_ms
    row["shown_order"] = [name(o) for o in shown]
    judged = j.created_at
    row["provenance"] = {
        **texts,
        "status": j.status,
        "origin": j.origin,
        "judged_at" if exact else "judged_on": (judged.isoformat() if exact else judged.date().isoformat())
        if judged
        else None,
        # Whose clock `time_spent_ms` is: the workbench's server (hand-out to submit), or the tool the
        # judgement was imported from (kept as imported).
        "time_measured_by": "import" if j.origin == "import" else "server",
    }
    if listened:
        # The seconds of the unit's audio the annotator played (ms; issue 41), where the page counted them.
        row["provenance"]["listened_ms"] = listened.get((j.item_id, j.annotator_id, tuple(sorted(j.shown_order or []))))
    return row


def _media_cell(ext: str, media: dict):
    """An item's media as the import reads them back: role -> type, path (under the media root), alt."""
    shown = {
        role: {k: entry[k] for k in ("type", "path", "alt") if entry.get(k)} for role, entry in (media or {}).items()
    }
    if ext == "csv":
        return json.dumps(shown, ensure_ascii=False) if shown else None
    return shown


def _listening_times(campaign, item_ids: list[int]) -> dict:
    """(item id, annotator id, sorted output ids) -> the unit's listening time (ms) of its finished
    assignments in these items; one query per chunk, only for datasets with media."""
    return {
        (item_id, annotator_id, tuple(sorted(shown or []))): ms
        for item_id, annotator_id, shown, ms in Assignment.objects.filter(
            campaign=campaign, item_id__in=item_ids, status=Assignment.Status.DONE, listened_ms__isnull=False
        ).values_list("item_id", "annotator_id", "shown_order", "listened_ms")
    }
