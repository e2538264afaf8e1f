"""What every human-evaluation protocol provides, and the typed judgement row they all read.

One class per protocol (`annotations.protocols.<name>`), registered in
`annotations.protocols.registry`; the rest of the code asks the registry and
never branches on a protocol's name (STYLE.md 14). A protocol owns:

- its judgement model and the fields of its rows (`model`, `fields`);
- what a unit is and how units are planned (`plan_item`);
- the agreement unit and value (`agreement_triples`, `agreement`): the one
  definition every surface (dashboard, `agreement`, quality page, card) uses;
- the human score of an output (`output_scores`) and, for choice protocols,
  the system-level wins behind Bradley-Terry (`wins`);
- its export row (`export_fields`) and its page (`template`, `script`).

Adding a protocol: docs/architecture.md, "Add a protocol".
"""
from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

# Levels of Krippendorff's alpha every surface may show, headline first per protocol.
LEVELS = ("nominal", "ordinal", "interval")
RAW, Z = "raw", "z"


@dataclass(slots=True)
class JudgementRow:
    """One stored judgement, in one light shape for every protocol (no model instance).

    rating / ESA: `output_id`, `score` (`rank` for RankME); pairwise: the
    canonical pair `a_id` < `b_id` and `winner`; best-worst: `outputs` (sorted),
    `best_id`, `worst_id`; ESA: `spans` as dicts (`start`, `end`, `severity`) or
    (`missing`, `severity`).
    """

    id: int
    annotator_id: int
    item_id: int
    criterion: str
    status: str
    origin: str
    time_spent_ms: int | None
    shown_order: list
    created_at: object
    output_id: int | None = None
    score: float | None = None
    rank: int | None = None
    a_id: int | None = None
    b_id: int | None = None
    winner: str | None = None
    outputs: list = field(default_factory=list)
    best_id: int | None = None
    worst_id: int | None = None
    spans: list = field(default_factory=list)

    def output_ids(self) -> list[int]:
        """Every output the judgement is about."""
        if self.output_id is not None:
            return [self.output_id]
        if self.a_id is not None:
            return [self.a_id, self.b_id]
        return list(self.outputs)


@dataclass(frozen=True)
class AgreementSpec:
    """What a protocol's agreement figure measures; every surface prints this label."""

    level: str  # headline level of Krippendorff's alpha
    variant: str  # RAW, or Z: values z-scored per annotator and criterion first
    unit: str  # what several annotators judge alike
    value: str  # what is compared

    def label(self) -> str:
        variant = "per-annotator z-scores" if self.variant == Z else "raw values"
        return f"Krippendorff's alpha ({self.level}, {variant}; unit: {self.unit})"


class Protocol:
    """Base class: subclasses set the attributes and override what differs."""

    name: str = ""
    label: str = ""
    model = None  # the judgement model
    # Fields read for a row beyond the common ones, in JudgementRow's names.
    fields: tuple[tuple[str, str], ...] = ()
    # Answers name an output each (ratings, ESA) or answer for the whole unit (pairwise, best-worst).
    per_output: bool = True
    # Scores on a scale (Likert, ESA) or unbounded magnitudes (RankME); None for choices.
    scored: bool = True
    # Family for code that groups protocols (export rows, quality control): rating, esa, pairwise, bws.
    kind: str = ""
    # `correlate` on this protocol reports metric-human agreement on the judged pairs
    # (ARCHITECTURE.md: "for pairwise campaigns, metric-human agreement") instead of a correlation.
    correlate_as_pair_agreement: bool = False
    agreement: AgreementSpec
    template: str = ""  # the unit's template partial
    script: str = ""  # its JS module under static/
    shortcuts: str = ""  # its lines of the keyboard-shortcuts panel (a template partial)
    # How the page names the outputs of a unit, by position ("AB": A and B); "" numbers them 1, 2, ...
    output_labels: str = ""

    # ---- campaign settings ----------------------------------------------------------------
    # Whether judgements are on a rating scale at all, whether a campaign must name one, and
    # the scale used when it names none.
    has_scale: bool = True
    scale_required: bool = False
    default_scale: tuple[float, float] | None = None
    default_tuple_size: int = 4
    default_severities: tuple[str, ...] = ()
    # ESA-style spans with severities, and the RankME anchor shown beside the outputs.
    has_spans: bool = False
    shows_anchor: bool = False

    # The protocol's own fields of the campaign set-up form (shown only when it is chosen).
    setup_fields: tuple[str, ...] = ()
    # The REST endpoint that lists and takes this protocol's judgements one by one.
    api_path: str = ""

    def settings_summary(self, campaign) -> list[tuple[str, str]]:
        """(label, value) rows the campaign page shows for this protocol's own settings."""
        return []

    def outputs_per_unit(self, campaign) -> int:
        """How many outputs one screen shows (the set-up preview builds a unit this size)."""
        return 1 if self.per_output else campaign.tuple_size or 4

    def settings_check(self, *, scale: tuple, anchor_value: float | None, tuple_size: int | None) -> dict:
        """The protocol's part of a campaign's settings, defaults filled in; ValidationError
        (keyed by the setting) for what this protocol does not allow."""
        from django.core.exceptions import ValidationError

        low, high = scale
        if low is None and self.default_scale is not None:
            low, high = self.default_scale
        if not self.has_scale and low is not None:
            raise ValidationError({"scale_min": f"A {self.name} campaign has no rating scale."})
        tuple_size = self.default_tuple_size if tuple_size is None else tuple_size
        if isinstance(tuple_size, bool) or not isinstance(tuple_size, int) or tuple_size < 2:
            raise ValidationError({"tuple_size": "A best-worst tuple holds at least 2 outputs."})
        if tuple_size > 20:
            raise ValidationError({"tuple_size": "At most 20 outputs on one screen."})
        return {"scale_min": low, "scale_max": high, "anchor_value": anchor_value, "tuple_size": tuple_size}

    def criterion_scale_check(self, criterion: str, low, high) -> None:
        """A criterion's own scale: refused by protocols without scales, required by some."""
        from django.core.exceptions import ValidationError

        if not self.has_scale and low is not None:
            raise ValidationError({"criteria_config": f"{criterion}: a {self.name} campaign has no rating scale."})
        if self.scale_required and low is None:
            raise ValidationError({"scale_min": f"{criterion}: a Likert / direct-assessment criterion needs a "
                                                "scale, e.g. 1-5 or 0-100."})

    def judged_outputs(self, judgements, output_ids: set[int]) -> set[int]:
        """Which of a unit's outputs these judgements (a queryset of one annotator, item and
        criterion) cover."""
        return set(judgements.filter(output_id__in=output_ids).values_list("output_id", flat=True))

    # ---- units --------------------------------------------------------------------------

    def plan_item(self, campaign, item_index: int, outputs: list[tuple[int, int]],
                  rng: random.Random) -> Iterator[list[tuple[int, int]]]:
        """The units of one item: groups of (output id, system id)."""
        for output in outputs:
            yield [output]

    # ---- agreement ---------------------------------------------------------------------------

    def agreement_triples(self, rows: Iterable[JudgementRow]) -> Iterator[tuple[object, int, float]]:
        """(unit key, annotator id, value) for one criterion's rows; values before any z-scoring."""
        for r in rows:
            yield r.output_id, r.annotator_id, float(r.score)

    # ---- human scores ------------------------------------------------------------------------

    def output_scores(self, rows: list[JudgementRow], *, normalize: str = "none") -> dict[int, float]:
        """Segment-level human score of each output, for one criterion: mean of its ratings
        (after per-annotator z-scoring with normalize="z")."""
        if not rows:
            return {}
        values = np.array([r.score for r in rows], dtype=float)
        if normalize == "z" or self.agreement.variant == Z:
            values = zscore_by_annotator(np.array([r.annotator_id for r in rows]), values)
        sums: dict[int, list] = defaultdict(list)
        for r, v in zip(rows, values):
            sums[r.output_id].append(v)
        return {o: float(np.mean(v)) for o, v in sums.items()}

    def wins(self, rows: list[JudgementRow], system_of: dict[int, str]) -> list[tuple[str, str]]:
        """(winner system, loser system) pairs for Bradley-Terry; empty for scored protocols."""
        return []

    # ---- export -------------------------------------------------------------------------------

    def unit_key(self, row: JudgementRow) -> tuple:
        """What several annotators judge alike, for counting judges of a unit (export filters)."""
        return (row.output_id,)

    def consensus_value(self, row: JudgementRow):
        """The answer, comparable across annotators of the same unit."""
        return row.score

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"


def zscore_by_annotator(annotators: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each annotator's values z-scored with their own mean and standard deviation
    (a constant annotator's values become 0)."""
    out = np.zeros(len(values), dtype=float)
    for a in np.unique(annotators):
        mask = annotators == a
        v = values[mask]
        sd = v.std()
        out[mask] = (v - v.mean()) / sd if sd > 0 else 0.0
    return out
