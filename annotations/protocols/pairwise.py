"""Side-by-side pairwise preference: two outputs of an input, A / B / tie per criterion."""
from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator

from annotations.models import PairwiseJudgement
from annotations.protocols.base import RAW, AgreementSpec, AnswerError, JudgementRow, Protocol

# The answer as a number: a preference for the lower output id, a tie, or for the other.
CODE = {"a": 1.0, "tie": 0.0, "b": -1.0}


def round_robin_rounds(n: int) -> list[list[tuple[int, int]]]:
    """The circle method: n-1 rounds (n even; a bye is added for odd n) in
    which every index meets every other exactly once, each at most once per round."""
    players = list(range(n)) + ([None] if n % 2 else [])
    m = len(players)
    rounds = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = players[i], players[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        rounds.append(pairs)
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


class Pairwise(Protocol):
    name = "pairwise"
    label = "Side-by-side pairwise"
    model = PairwiseJudgement
    fields = (("output_a_id", "a_id"), ("output_b_id", "b_id"), ("winner", "winner"))
    per_output = False
    scored = False
    kind = "pairwise"
    correlate_as_pair_agreement = True
    # Nominal: "A", "B" and "tie" are categories; a split vote counts as disagreement whatever its side.
    agreement = AgreementSpec(level="nominal", variant=RAW, unit="pair of outputs", value="winner (a, b, tie)")
    template = "annotate/protocols/pairwise.html"
    script = "js/protocols/pairwise.js"

    def plan_item(self, campaign, item_index: int, outputs: list[tuple[int, int]],
                  rng: random.Random) -> Iterator[list[tuple[int, int]]]:
        if len(outputs) < 2:
            return
        if campaign.pair_rounds <= 0:
            for a, b in itertools.combinations(outputs, 2):
                yield [a, b]
            return
        # Outputs sorted by system so that round r pairs the same systems on every item.
        by_system = sorted(outputs, key=lambda o: o[1])
        rounds = round_robin_rounds(len(by_system))
        for r in range(min(campaign.pair_rounds, len(rounds))):
            for i, j in rounds[(item_index * campaign.pair_rounds + r) % len(rounds)]:
                yield [by_system[i], by_system[j]]

    def agreement_triples(self, rows: Iterable[JudgementRow]) -> Iterator[tuple[object, int, float]]:
        for r in rows:
            yield (r.a_id, r.b_id), r.annotator_id, CODE[r.winner]

    def output_scores(self, rows: list[JudgementRow], *, normalize: str = "none") -> dict[int, float]:
        """Win rate of each output over its comparisons (a tie is half a win)."""
        won: dict = {}
        seen: dict = {}
        for r in rows:
            for o in (r.a_id, r.b_id):
                seen[o] = seen.get(o, 0) + 1
                won.setdefault(o, 0.0)
            if r.winner == "a":
                won[r.a_id] += 1
            elif r.winner == "b":
                won[r.b_id] += 1
            else:
                won[r.a_id] += 0.5
                won[r.b_id] += 0.5
        return {o: won[o] / seen[o] for o in seen}

    def wins(self, rows: list[JudgementRow], system_of: dict[int, str]) -> list[tuple[str, str]]:
        out = []
        for r in rows:
            if r.winner == "tie" or r.a_id not in system_of or r.b_id not in system_of:
                continue
            win, lose = (r.a_id, r.b_id) if r.winner == "a" else (r.b_id, r.a_id)
            out.append((system_of[win], system_of[lose]))
        return out

    def unit_key(self, row: JudgementRow) -> tuple:
        return (row.a_id, row.b_id)

    def consensus_value(self, row: JudgementRow):
        return row.winner

    # ==== validation of one answer ====

    unit_sizes = (2, 2)
    answer_shape = "pair"
    answer_keys = frozenset({"winner"})
    WINNERS = ("a", "b", "tie")

    def check_value(self, answer, *, campaign, criterion, unit_outputs, texts) -> dict:
        """`winner` in a / b / tie (a: the output shown first); `a` and `b`, when the answer names
        them, two different outputs (of the unit when `unit_outputs` is given)."""
        winner = answer.get("winner")
        if not isinstance(winner, str) or winner not in self.WINNERS:
            raise AnswerError("winner", "winner", value=winner)
        out = {"winner": winner}
        if "a" in answer or "b" in answer:
            a, b = answer.get("a"), answer.get("b")
            if unit_outputs is not None and not {a, b} <= set(unit_outputs):
                raise AnswerError("pair_outputs", "output_b")
            if a == b:
                raise AnswerError("pair_same", "output_b")
            out.update(a=a, b=b)
        return out
