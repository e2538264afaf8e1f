"""The one reader of a campaign's judgements: analysis, export and quality control all call it.

It applies the two rules no caller may forget: only judgements that count
(status complete: finished units and imports; partial and abandoned work never),
and, when asked for the included annotators, quality control's inclusion
(`annotations.quality.selectors.included_annotator_ids`). Rows come as typed
`JudgementRow`s (`annotations.protocols.base`), streamed item chunk by item
chunk (a few `values_list` queries on `item_id IN (...)` each), so a million
judgements never sit in memory as model instances; ESA rows carry their spans.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from annotations import protocols
from annotations.models import Annotator, Campaign, ErrorSpan, Item, JudgementBase
from annotations.protocols.rows import JudgementRow
from annotations.quality.selectors import campaign_inclusion

INCLUDED, ALL = "included", "all"
COMPLETE = JudgementBase.Status.COMPLETE
_COMMON = (
    "id",
    "annotator_id",
    "item_id",
    "criterion",
    "status",
    "origin",
    "time_spent_ms",
    "shown_order",
    "created_at",
)
CHUNK_ITEMS = 500
# The few distinct criteria, statuses and origins, each one object for every row that has it.
_SHARED: dict[str, str] = {}


def _shared(value: str) -> str:
    if len(_SHARED) > 10_000:  # free-text criteria of many campaigns: never a leak
        _SHARED.clear()
    return _SHARED.setdefault(value, value)


@dataclass
class JudgementSet:
    """Which judgements a figure was computed from; iterate it for the rows (streamed)."""

    campaign: Campaign
    annotators: str  # INCLUDED or ALL, as asked
    keep: set[int] | None  # the annotator ids kept, None for everyone
    criterion: str | None = None
    systems: list[str] | None = None
    item_ids: list[int] | None = None
    chunk_items: int = CHUNK_ITEMS
    excluded: list[str] = field(default_factory=list)
    n_annotators: int = 0

    @property
    def protocol(self) -> protocols.Protocol:
        return protocols.of(self.campaign)

    @property
    def used(self) -> str:
        """Whose judgements: the label every figure carries (the same words on every surface)."""
        if self.keep is None:
            return "all annotators"
        return f"included annotators only ({self.n_annotators - len(self.excluded)} of {self.n_annotators})"

    def describe(self, n: int) -> dict:
        out = {
            "judgements": n,
            "status": "complete only",
            "annotators": self.used,
            "excluded_annotators": self.excluded,
        }
        if self.annotators == INCLUDED and self.keep is None:
            out["quality_control"] = "not in use: nobody is excluded"
        return out

    def __iter__(self) -> Iterator[JudgementRow]:
        item_ids = self.item_ids
        if item_ids is None:
            item_ids = list(
                Item.objects.filter(dataset_id=self.campaign.dataset_id)
                .order_by("position", "id")
                .values_list("id", flat=True)
            )
        for start in range(0, len(item_ids), self.chunk_items):
            yield from self._chunk(item_ids[start : start + self.chunk_items])

    def by_criterion(self) -> dict[str, list[JudgementRow]]:
        """Every row, grouped by criterion (the campaign's order first)."""
        grouped: dict[str, list[JudgementRow]] = defaultdict(list)
        for row in self:
            grouped[row.criterion].append(row)
        order = [c for c in self.campaign.criteria if c in grouped] + sorted(
            c for c in grouped if c not in self.campaign.criteria
        )
        return {c: grouped[c] for c in order}

    def annotator_names(self, ids) -> dict[int, str]:
        return dict(Annotator.objects.filter(pk__in=set(ids)).values_list("id", "name"))

    def _chunk(self, item_ids: list[int]) -> Iterator[JudgementRow]:
        protocol = self.protocol
        qs = protocol.model.objects.filter(campaign=self.campaign, item_id__in=item_ids, status=COMPLETE)
        if self.keep is not None:
            qs = qs.filter(annotator_id__in=self.keep)
        if self.criterion:
            qs = qs.filter(criterion=self.criterion)
        if self.systems:
            for column, _ in protocol.fields:
                if column in ("output_id", "output_a_id", "output_b_id"):
                    qs = qs.filter(**{f"{column[:-3]}__system__name__in": self.systems})
        columns = [c for c, _ in protocol.fields]
        names = [n for _, n in protocol.fields]
        found = []
        for values in qs.order_by("item_id", "id").values_list(*_COMMON, *columns):
            row = JudgementRow(*values[: len(_COMMON)])
            # One string object per criterion, status and origin, not three per row (~170 bytes a
            # row of the 60,000 a first visit of an analysis page holds, issue 46).
            row.criterion = _shared(row.criterion)
            row.status = _shared(row.status)
            row.origin = _shared(row.origin)
            for name, value in zip(names, values[len(_COMMON) :]):
                setattr(row, name, list(value) if name == "outputs" else value)
            found.append(row)
        if protocol.has_spans and found:
            by_id = {r.id: r for r in found}
            for judgement_id, start, end, severity, missing, category in (
                ErrorSpan.objects.filter(judgement_id__in=list(by_id))
                .order_by("judgement_id", "id")
                .values_list("judgement_id", "start", "end", "severity", "missing", "category")
            ):
                span = (
                    {"missing": True, "severity": severity}
                    if missing
                    else {"start": start, "end": end, "severity": severity}
                )
                if category:  # MQM
                    span["category"] = category
                by_id[judgement_id].spans.append(span)
        yield from found


def campaign_judgements(
    *,
    campaign: Campaign,
    annotators: str = INCLUDED,
    criterion: str | None = None,
    systems: list[str] | None = None,
    item_ids: list[int] | None = None,
    chunk_items: int = CHUNK_ITEMS,
) -> JudgementSet:
    """The campaign's complete judgements, of the included annotators (INCLUDED, the default:
    everyone while quality control is not in use) or of everyone (ALL)."""
    if annotators not in (INCLUDED, ALL):
        raise ValueError(f"annotators must be {INCLUDED!r} or {ALL!r}")
    if annotators == INCLUDED:
        # Imported only here: quality control loads scipy.stats (seconds, ~60 MB), which the
        # export and quality control's own reads (ALL) do not need.

        kept = campaign_inclusion(campaign=campaign)
    else:
        kept = None
    found = JudgementSet(
        campaign=campaign,
        annotators=annotators,
        keep=None if kept is None else set(kept.keep),
        criterion=criterion,
        systems=systems,
        item_ids=item_ids,
        chunk_items=chunk_items,
    )
    if kept is not None:
        # The quality page's count (quality.selectors.Inclusion), not the annotators with a complete
        # judgement: the dashboard said "3 of 3" where the quality page said "4 of 4" (issue 38).
        found.excluded = list(kept.excluded)
        found.n_annotators = kept.n_annotators
    return found
