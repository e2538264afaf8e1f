"""Contrastive ESA (cESA, WMT25 and Pearmut): 2-5 outputs of one input on one screen, error spans
and a 0-100 score for each. Stored and validated exactly as ESA (one span judgement per output,
the screen's outputs in `shown_order`); analysed like ESA and, pairwise, like side-by-side
preferences: every two outputs of one screen give a preference from their two scores."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Iterable, Iterator

from annotations.protocols.esa import Esa
from annotations.protocols.options import INTEGER, Option
from annotations.protocols.pairwise import Pairwise
from annotations.protocols.rankme import chunks_even
from annotations.protocols.rows import JudgementRow

# What the derived pairwise figures are, printed next to each of them.
# The pairwise protocol's figures are computed over the derived pairs (whether or not pairwise
# campaigns are offered in this deployment).
PAIRS = Pairwise()
DERIVED_LABEL = "pairwise preferences derived from cESA scores (the higher score wins; equal scores tie)"


def screen_key(row: JudgementRow) -> tuple:
    """The screen a judgement was given on: one annotator, item and criterion, and the outputs
    shown together (an imported line without `shown_order` counts on the item's one screen)."""
    return (row.annotator_id, row.item_id, row.criterion, tuple(sorted(row.shown_order or ())))


def derived_pairs(rows: Iterable[JudgementRow]) -> list[JudgementRow]:
    """Pairwise rows (canonical a_id < b_id, winner a / b / tie) from every two outputs scored on
    one screen: what the annotator's two scores say about the pair."""
    screens: dict[tuple, dict[int, JudgementRow]] = defaultdict(dict)
    for r in rows:
        screens[screen_key(r)][r.output_id] = r
    out = []
    for judged in screens.values():
        for a, b in itertools.combinations(sorted(judged), 2):
            ra, rb = judged[a], judged[b]
            winner = "a" if ra.score > rb.score else "b" if rb.score > ra.score else "tie"
            out.append(
                JudgementRow(
                    id=min(ra.id, rb.id),
                    annotator_id=ra.annotator_id,
                    item_id=ra.item_id,
                    criterion=ra.criterion,
                    status=ra.status,
                    origin=ra.origin,
                    time_spent_ms=None,
                    shown_order=ra.shown_order,
                    created_at=ra.created_at,
                    a_id=a,
                    b_id=b,
                    winner=winner,
                )
            )
    return out


class Cesa(Esa):
    name = "cesa"
    label = "Contrastive ESA (cESA)"
    guide = "reference/protocols/#the-protocols"
    template = "annotate/protocols/cesa.html"
    # ESA's span marker (js/span_marker.js, inherited `scripts_first`), one per output card.
    script = "js/protocols/cesa.js"
    shortcuts = "annotate/protocols/cesa_keys.html"
    options = (
        *Esa.options,
        Option(
            "tuple_size",
            INTEGER,
            3,
            "Outputs per screen",
            minimum=2,
            maximum=5,
            flag="tuple-size",
            help="Contrastive ESA shows 2 to 5 outputs of one input side by side (default 3).",
        ),
    )
    unit_sizes = (2, 5)
    relative_checks = True
    one_output_per_unit = False
    derives_pairs = True
    derived_pairs_label = DERIVED_LABEL

    def outputs_per_unit(self, campaign) -> int:
        return self.option(campaign, "tuple_size")

    def plan_item(
        self, campaign, item_index: int, outputs: list[tuple[int, int]], rng: random.Random
    ) -> Iterator[list[tuple[int, int]]]:
        # Which systems share a screen is drawn per item; where each is shown is the engine's
        # counterbalancing (assignments.shown_order_choose), per annotator.
        shuffled = outputs[:]
        rng.shuffle(shuffled)
        yield from chunks_even(shuffled, max(2, self.option(campaign, "tuple_size")))

    def document_screens(self, campaign, systems: list[int], rng: random.Random) -> list[list[int]]:
        # context=document: the same document of 2-5 systems side by side, drawn per document.
        shuffled = systems[:]
        rng.shuffle(shuffled)
        return [sorted(group) for group in chunks_even(shuffled, max(2, self.option(campaign, "tuple_size")))]

    def card_extra(self, config: dict, fmt) -> list[str]:
        size = (config.get("options") or {}).get("tuple_size", self.option_declared("tuple_size").default)
        return [
            *super().card_extra(config, fmt),
            f"- Contrastive ESA: {size} outputs of one input per screen, each with its "
            "error spans and 0-100 score; pairwise figures derived from the scores of one screen",
        ]

    # ---- pairwise, derived from the scores ------------------------------------------------------

    def pair_rows(self, rows: Iterable[JudgementRow]) -> list[JudgementRow]:
        return derived_pairs(rows)

    def pairs_protocol(self) -> Pairwise:
        return PAIRS

    def wins(self, rows: list[JudgementRow], system_of: dict[int, str]) -> list[tuple[str, str]]:
        """(winner, loser) systems of every pair of outputs one annotator scored on one screen
        (ties dropped, as for the pairwise protocol): Bradley-Terry over cESA."""
        out = []
        for p in derived_pairs(rows):
            if p.winner == "tie" or p.a_id not in system_of or p.b_id not in system_of:
                continue
            win, lose = (p.a_id, p.b_id) if p.winner == "a" else (p.b_id, p.a_id)
            out.append((system_of[win], system_of[lose]))
        return out
