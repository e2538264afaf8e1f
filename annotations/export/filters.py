"""The validation filters of an export, applied item by item, counting what each one removes.

Always first: only judgements that count (status complete: finished units and imports; partial
and abandoned work is never exported), which the one reader (`annotations.selectors.judgements`)
applies itself; the filters count what it left out. Then, as asked, in this order:

1. systems: a judgement stays when every output it is about belongs to a chosen system;
2. criteria: a judgement stays when its criterion is chosen;
3. included annotators only (quality control, `included_annotator_ids`);
4. complete units only: a (unit, criterion) stays when at least k (the campaign's redundancy)
   different annotators judged it, after the filters above;
5. minimum consensus: an item stays when its consensus (`consensus.py`) is at least X; items with
   no measurable consensus (no unit judged twice) are dropped too, with their outputs.

The counts before and after each step go into the dataset card.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from annotations.export.consensus import item_consensus
from annotations.protocols import JudgementRow, Protocol


@dataclass
class Step:
    key: str
    label: str
    judgements_before: int = 0
    judgements_after: int = 0
    # Only the consensus step drops whole items (and their outputs).
    items_before: int | None = None
    items_after: int | None = None

    def as_json(self) -> dict:
        found = {
            "filter": self.key,
            "label": self.label,
            "judgements_before": self.judgements_before,
            "judgements_after": self.judgements_after,
        }
        if self.items_before is not None:
            found.update(items_before=self.items_before, items_after=self.items_after)
        return found


@dataclass
class Filters:
    protocol: Protocol
    redundancy: int
    scales: dict[str, tuple]
    system_ids: set[int] | None = None  # None: every system of the campaign
    criteria: set[str] | None = None  # None: every criterion
    annotator_ids: set[int] | None = None  # None: every annotator
    complete_units_only: bool = False
    min_consensus: float | None = None
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self):
        self._status = Step("status", "judgements that count (status complete; partial and abandoned work left out)")
        self.steps = [self._status]

    def add_step(self, key: str, label: str) -> Step:
        step = Step(key, label)
        self.steps.append(step)
        return step

    def step(self, key: str) -> Step | None:
        return next((s for s in self.steps if s.key == key), None)

    def not_counted(self, n: int) -> None:
        """The campaign's judgements that do not count (partial, abandoned): the reader never
        returns them, so the status step is told how many there are."""
        self._status.judgements_before += n

    def keep(self, judgements: list[JudgementRow], *, output_system: dict[int, int]) -> list[JudgementRow]:
        """The (complete) judgements of one item that pass every filter ([] when the item is dropped)."""
        kept = self._count(self._status, judgements, judgements)
        if self.system_ids is not None:
            kept = self._count(
                self.step("systems"),
                kept,
                [j for j in kept if all(output_system.get(o) in self.system_ids for o in j.output_ids())],
            )
        if self.criteria is not None:
            kept = self._count(self.step("criteria"), kept, [j for j in kept if j.criterion in self.criteria])
        if self.annotator_ids is not None:
            kept = self._count(self.step("annotators"), kept, [j for j in kept if j.annotator_id in self.annotator_ids])
        if self.complete_units_only:
            judges: dict[tuple, set] = defaultdict(set)
            for j in kept:
                judges[(self.protocol.unit_key(j), j.criterion)].add(j.annotator_id)
            kept = self._count(
                self.step("complete_units"),
                kept,
                [j for j in kept if len(judges[(self.protocol.unit_key(j), j.criterion)]) >= self.redundancy],
            )
        if self.min_consensus is not None:
            step = self.step("consensus")
            value = item_consensus(self.protocol, kept, self.scales)
            passed = value is not None and value >= self.min_consensus
            step.items_before += 1
            step.items_after += passed
            kept = self._count(step, kept, kept if passed else [])
            if not passed:
                return []
        return kept

    def item_dropped(self, kept: list[JudgementRow]) -> bool:
        """Whether the consensus filter dropped the item these (kept) judgements belong to."""
        return self.min_consensus is not None and not kept

    @staticmethod
    def _count(step: Step, before: list, after: list) -> list:
        step.judgements_before += len(before)
        step.judgements_after += len(after)
        return after
