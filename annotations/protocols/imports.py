"""The shape of a protocol's lines in `import_judgements` (the format: ARCHITECTURE.md, judgements.jsonl).

A mixin of `Protocol` (kept apart so base.py stays short): the defaults are the
per-output protocols' (Likert, RankME: one score per output, an optional rank);
ESA, pairwise and best-worst override what differs in their own modules.
`annotations.services.imports` asks these methods and never branches on the
protocol. A record is a `JudgementRecord` (annotations.services.imports.judgement_validate):
the line's annotator name, item id, criterion and time, filled in by `import_answer`.
"""

from __future__ import annotations

from collections.abc import Callable

from annotations.bulk import rows_insert
from annotations.models import JudgementBase

# Optional keys of every protocol's line: the time, the order shown, and the provenance that
# `export_dataset` adds (not imported, so an exported file imports back as it is).
IMPORT_COMMON_OPTIONAL = frozenset({"time_spent_ms", "shown_order", "provenance"})
# Columns every judgement row gets, in the order of `import_common`.
IMPORT_COMMON_COLUMNS = (
    "campaign_id",
    "annotator_id",
    "item_id",
    "criterion",
    "time_spent_ms",
    "shown_order",
    "origin",
)


class ImportShape:
    # The file formats of `import_judgements --format` this protocol reads (MQM adds "mqm-tsv").
    import_formats: tuple[str, ...] = ("jsonl",)
    # The extra judgements file `export_dataset` writes beside judgements.jsonl ("" none), with its
    # header and rows (`export_file_rows`; MQM: WMT's MQM TSV, which import_judgements reads back).
    export_file: str = ""
    export_file_header: tuple[str, ...] = ()

    def export_file_rows(
        self, row, *, item: str, system: str, annotator: str, source: str, text: str, meta: dict, campaign: str = ""
    ) -> list:
        """Rows of `export_file`: lists of cells (a .tsv file) or objects (a .jsonl file)."""
        return []

    # The keys a line must have, and those it may have besides.
    import_keys: frozenset = frozenset({"item", "system", "annotator", "criterion", "score"})
    import_optional_keys: frozenset = frozenset({"rank"}) | IMPORT_COMMON_OPTIONAL
    # Columns of the protocol's own part of a stored row, in the order of `import_fields`.
    import_columns: tuple[str, ...] = ("output_id", "score", "rank", "scale_min", "scale_max")

    # ---- reading a line -----------------------------------------------------------------------

    def import_answer(
        self,
        record,
        obj: dict,
        *,
        output: Callable,
        shown_order: Callable,
        check: Callable,
        text: Callable,
        errors: list[str],
    ) -> None:
        """Fill `record` with the answer of line `obj` (its keys already checked), or add to `errors`.

        `output(value, what)`: the output id of a system name of the line's item (None and an error
        when unknown); `shown_order()`: the output ids of the line's `shown_order` (None when absent
        or wrong); `check(answer, texts=None)`: the protocol's `check_answer` of an answer in output
        ids (None and errors when refused); `text(output id)`: an output's text."""
        record.output_id = output(obj["system"], "system")
        answer = {key: obj[key] for key in ("score", "rank") if key in obj}
        texts = None
        if record.output_id is not None:
            # Spans are checked against the output's text, so only once the output is known.
            answer.update(output=record.output_id, spans=obj.get("spans"))
            texts = {record.output_id: text(record.output_id)} if self.has_spans else None
        checked = check(answer, texts)
        if checked is not None:
            record.score, record.rank, record.spans = checked["score"], checked.get("rank"), checked.get("spans", [])
        record.shown = [record.output_id]
        shown = shown_order()
        if shown is not None and record.output_id is not None:
            if record.output_id not in shown:
                errors.append("shown_order must include the judged system")
            record.shown = shown

    def import_unit_key(self, record) -> tuple:
        """What one annotator judges once per criterion: a second line for it is a duplicate."""
        return (record.annotator, record.output_id, record.criterion)

    def import_value(self, record) -> tuple:
        """The answer, compared with the stored one (equal: skipped; different: a line error)."""
        return (record.score, record.rank)

    # ---- what is stored -----------------------------------------------------------------------

    def stored_for_import(self, campaign, names: dict[int, str]) -> dict[tuple, tuple]:
        """import_unit_key -> import_value of the campaign's judgements by these annotators
        ({annotator id: name in the file}, a few thousand at most: one query)."""
        rows = self.model.objects.filter(campaign=campaign, annotator_id__in=list(names)).values_list(
            "annotator_id", "output_id", "criterion", "score", "rank"
        )
        return {(names[a], o, c): (s, r) for a, o, c, s, r in rows}

    # ---- writing ------------------------------------------------------------------------------

    def import_common(self, campaign, record, annotators: dict[str, int]) -> tuple:
        """The row's IMPORT_COMMON_COLUMNS."""
        return (
            campaign.pk,
            annotators[record.annotator],
            record.item_id,
            record.criterion,
            record.time_spent_ms,
            record.shown,
            JudgementBase.Origin.IMPORT,
        )

    def import_fields(self, campaign, record) -> tuple:
        """The row's `import_columns`. The criterion's scale is copied onto each rating so the
        database's check constraints enforce it too."""
        return (record.output_id, record.score, record.rank, *campaign.criterion_scale(record.criterion))

    def import_write(self, campaign, records: list, annotators: dict[str, int]) -> None:
        """Insert the new records (PostgreSQL COPY); `annotators`: name in the file -> annotator id."""
        rows_insert(
            self.model,
            IMPORT_COMMON_COLUMNS + self.import_columns,
            ((*self.import_common(campaign, r, annotators), *self.import_fields(campaign, r)) for r in records),
        )
