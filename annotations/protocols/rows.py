"""The typed judgement row every protocol reads (from `annotations.selectors.judgements`)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    # post-edit: the edited text (`score` is its HTER) and the optional rating on the campaign's scale.
    post_edit: str | None = None
    rating: float | None = None

    def output_ids(self) -> list[int]:
        """Every output the judgement is about."""
        if self.output_id is not None:
            return [self.output_id]
        if self.a_id is not None:
            return [self.a_id, self.b_id]
        return list(self.outputs)
