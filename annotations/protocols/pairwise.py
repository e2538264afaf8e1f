"""Side-by-side pairwise preference: two outputs of an input, A / B / tie per criterion."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator, Sequence

from annotations.models import JudgementBase, PairwiseJudgement
from annotations.protocols.base import RAW, AgreementSpec, Protocol, output_identity
from annotations.protocols.errors import AnswerError
from annotations.protocols.imports import IMPORT_COMMON_OPTIONAL
from annotations.protocols.options import INTEGER, Option
from annotations.protocols.rows import JudgementRow
from annotations.protocols.stats import majority_share

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


def pairwise_canonical(*, a_id: int, b_id: int, winner: str) -> tuple[int, int, str]:
    """Order the pair by output id (the stored form) and flip the winner with it."""
    if a_id < b_id:
        return a_id, b_id, winner
    flipped = {"a": "b", "b": "a", "tie": "tie"}[winner]
    return b_id, a_id, flipped


def shown_winner(order: Sequence[int], a_id: int, b_id: int, winner: str) -> str:
    """The stored winner (of the pair ordered by id) as the page names it (of the pair as shown)."""
    if winner == "tie" or not order:
        return winner
    won = a_id if winner == "a" else b_id
    return "a" if won == order[0] else "b"


class Pairwise(Protocol):
    name = "pairwise"
    label = "Side-by-side pairwise"
    guide = "tutorials/asr-severity/"
    model = PairwiseJudgement
    fields = (("output_a_id", "a_id"), ("output_b_id", "b_id"), ("winner", "winner"))
    per_output = False
    scored = False
    has_scale = False
    correlate_as_pair_agreement = True
    file_answer_keys = frozenset({"a", "b", "winner"})
    gold_expected_keys = frozenset({"winner"})
    # Nominal: "A", "B" and "tie" are categories; a split vote counts as disagreement whatever its side.
    agreement = AgreementSpec(level="nominal", variant=RAW, unit="pair of outputs", value="winner (a, b, tie)")
    template = "annotate/protocols/pairwise.html"
    script = "js/protocols/pairwise.js"
    shortcuts = "annotate/protocols/pairwise_keys.html"
    output_labels = "AB"

    def plan_item(
        self, campaign, item_index: int, outputs: list[tuple[int, int]], rng: random.Random
    ) -> Iterator[list[tuple[int, int]]]:
        if len(outputs) < 2:
            return
        pair_rounds = self.option(campaign, "pair_rounds")
        if pair_rounds <= 0:
            for a, b in itertools.combinations(outputs, 2):
                yield [a, b]
            return
        # Outputs sorted by system so that round r pairs the same systems on every item.
        by_system = sorted(outputs, key=lambda o: o[1])
        rounds = round_robin_rounds(len(by_system))
        for r in range(min(pair_rounds, len(rounds))):
            for i, j in rounds[(item_index * pair_rounds + r) % len(rounds)]:
                yield [by_system[i], by_system[j]]

    def units_of_item(self, campaign, n_outputs: int) -> int:
        if n_outputs < 2:
            return 0
        pair_rounds = self.option(campaign, "pair_rounds")
        if pair_rounds <= 0:
            return n_outputs * (n_outputs - 1) // 2
        rounds = n_outputs - 1 if n_outputs % 2 == 0 else n_outputs  # round_robin_rounds: a bye for odd n
        return min(pair_rounds, rounds) * (n_outputs // 2)

    api_path = "/api/judgements/pairwise/"
    options = (
        Option(
            "pair_rounds",
            INTEGER,
            0,
            "Pairwise rounds per item",
            minimum=0,
            maximum=1000,
            flag="pair-rounds",
            title="Pairs",
            help="0 = every pair of outputs; r = r balanced round-robin rounds per item (for many systems).",
            summary=lambda rounds: (
                (f"{rounds} balanced round-robin round{'s' if rounds != 1 else ''} per item")
                if rounds
                else "every pair of outputs of an item"
            ),
        ),
    )

    def outputs_per_unit(self, campaign) -> int:
        return 2

    def agreement_triples(self, rows: Iterable[JudgementRow]) -> Iterator[tuple[object, int, float]]:
        for r in rows:
            yield (r.a_id, r.b_id), r.annotator_id, CODE[r.winner]

    def agreement_unit_identity(self, key, identity) -> tuple[tuple, bool]:
        # The stored pair is ordered by output id; in the data's terms it is ordered by
        # (item, system), and a vote for "a" becomes a vote for "b" where the two orders differ.
        a, b = (output_identity(identity, o) for o in key)
        return ((a, b), False) if a <= b else ((b, a), True)

    # ---- one answer, converted ------------------------------------------------------------------

    def judgement_row(self, campaign, base, answer, order) -> tuple:
        # `a` is the output shown first; stored with the lower id first.
        a_id, b_id, stored = pairwise_canonical(a_id=order[0], b_id=order[1], winner=answer["winner"])
        return self.model(
            **base, criterion=answer["criterion"], output_a_id=a_id, output_b_id=b_id, winner=stored
        ), None

    def stored_answer(self, judgement, *, order, campaign) -> dict:
        return {
            "criterion": judgement.criterion,
            "winner": shown_winner(order, judgement.output_a_id, judgement.output_b_id, judgement.winner),
        }

    def control_submission(self, criterion, record, order) -> list[dict]:
        winner = record.get("winner")
        shown = "tie" if winner in (None, "tie") else ("a" if order and int(winner) == order[0] else "b")
        return [{"criterion": criterion, "winner": shown}]

    def draft_answer(self, answer, draft, *, index, page_id) -> None:
        draft["fields"][f"w-{index}"] = answer["winner"]

    degraded_file_hint = '"a" or "b"'

    def control_file_answer(self, obj, *, control, item_id, lookup, check, errors):
        a = lookup.output(item_id, obj["a"], errors, "a")
        b = lookup.output(item_id, obj["b"], errors, "b")
        # A degraded control may show an output beside its own damaged copy: a and b the same system.
        pair = {} if control == "degraded" or None in (a, b) else {"a": a, "b": b}
        checked = check({"winner": obj["winner"], **pair}, None)
        if errors:
            return None
        winner = checked["winner"]
        if control == "degraded":
            side = obj["degraded"]
            if side not in ("a", "b"):
                errors.append('degraded must be "a" or "b"')
                return None
            return (
                {"winner": "tie" if winner == "tie" else ("degraded" if winner == side else "original")},
                a if side == "a" else b,
                {},
            )
        return (
            {"winner": "tie" if winner == "tie" else (a if winner == "a" else b), "pair": [a, b]},
            None,
            {obj["a"]: a, obj["b"]: b},
        )

    def gold_problems(self, spec, answer) -> list[str]:
        problems = super().gold_problems(spec, answer)
        if "winner" in spec and answer.get("winner") != spec["winner"]:
            problems.append("another output was expected to win" if spec["winner"] != "tie" else "a tie was expected")
        return problems

    def simulated_answers(self, campaign, criterion, outputs, impression, rng) -> list[dict]:
        """The better impression wins; within 3 points a tie."""
        a, b = (impression(o) for o in outputs)
        return [{"criterion": criterion, "winner": "tie" if abs(a - b) < 3 else ("a" if a > b else "b")}]

    def allocation_observations(self, campaign, criterion: str) -> list[tuple[int, str, float]]:
        """Each side of a comparison: 1 for a win, 0.5 for a tie, 0 for a loss."""

        out = []
        for item, a, b, winner in self.model.objects.filter(
            campaign=campaign,
            criterion=criterion,
            status=JudgementBase.Status.COMPLETE,
        ).values_list("item_id", "output_a__system_id", "output_b__system_id", "winner"):
            value = {"a": 1.0, "b": 0.0}.get(winner, 0.5)
            out += [(item, str(a), value), (item, str(b), 1.0 - value)]
        return out

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

    def judged_outputs(self, judgements, output_ids: set[int]) -> set[int]:
        seen: set[int] = set()
        for a_id, b_id in judgements.values_list("output_a_id", "output_b_id"):
            if {a_id, b_id} <= output_ids:
                seen.update((a_id, b_id))
        return seen

    def unit_key(self, row: JudgementRow) -> tuple:
        return (row.a_id, row.b_id)

    def consensus_value(self, row: JudgementRow):
        return row.winner

    # ---- export -------------------------------------------------------------------------------
    stat_keys = ("n", "wins", "losses", "ties", "win_rate")
    stat_counts = frozenset({"n", "wins", "losses", "ties"})
    one_output_per_unit = False

    def export_fields(
        self, row: JudgementRow, *, name, annotator: str, text, shown: list[int]
    ) -> tuple[dict, dict, list[int]]:
        # a = the output shown first (the import format), so the shown order survives a round trip.
        first, second = row.a_id, row.b_id
        if shown[:1] == [row.b_id]:
            first, second = row.b_id, row.a_id
        winner = (
            row.winner
            if row.winner == "tie"
            else ("a" if (row.a_id if row.winner == "a" else row.b_id) == first else "b")
        )
        fields = {
            "annotator": annotator,
            "criterion": row.criterion,
            "a": name(first),
            "b": name(second),
            "winner": winner,
        }
        return fields, {"output_texts": [text(first), text(second)]}, [first, second]

    def output_stats(
        self, rows: Iterable[JudgementRow], *, output_ids: list[int], criteria: list[str], scales: dict[str, tuple]
    ) -> dict[int, dict[str, dict]]:
        """n (comparisons the output took part in), wins, losses, ties, win_rate = (wins + ties / 2) / n."""
        stats = {o: {c: self.empty_stats() for c in criteria} for o in output_ids}
        for r in rows:
            for output, side in ((r.a_id, "a"), (r.b_id, "b")):
                entry = stats.get(output, {}).get(r.criterion)
                if entry is None:
                    continue
                entry["n"] += 1
                if r.winner == "tie":
                    entry["ties"] += 1
                elif r.winner == side:
                    entry["wins"] += 1
                else:
                    entry["losses"] += 1
        for per_criterion in stats.values():
            for entry in per_criterion.values():
                entry["win_rate"] = (entry["wins"] + entry["ties"] / 2) / entry["n"] if entry["n"] else None
        return stats

    def unit_consensus(self, values: list, scale: tuple = (None, None)) -> float | None:
        """The majority share (of the most frequent answer a / b / tie), as `correlate --min-consensus`."""
        return majority_share(values) if len(values) >= 2 else None

    # ---- quality control -----------------------------------------------------------------------

    def qc_habit(self, row: JudgementRow):
        """The screen position of the output chosen ("tie"; "?" when the shown order is unknown)."""
        chosen = {"a": row.a_id, "b": row.b_id}.get(row.winner)
        shown = list(row.shown_order or [])
        return "tie" if chosen is None else (shown.index(chosen) if chosen in shown else "?")

    def qc_originals(self, row: JudgementRow) -> list[tuple[int, object]]:
        return []  # a degraded pair shows the original beside its copy: the answer says it all

    def degraded_pair(self, cj, control, *, originals, floor) -> tuple | None:
        """The damaged copy's share of the win (a tie is half) against the original's."""
        if control is not None:
            winner = cj.answer.get("winner")
            value = 0.5 if winner == "tie" else 1.0 if winner == control.degraded_alias else 0.0
        else:
            value = {"tie": 0.5, "degraded": 1.0, "original": 0.0}.get(cj.answer.get("winner"))
            if value is None:
                return None
        return value, 1.0 - value, 0.0, value < 1.0 - value

    def repeat_pairs(self, cj, control, mine: dict) -> list[tuple]:
        pair = cj.answer.get("pair") or []
        winner = cj.answer.get("winner")
        if control is not None:
            pair = [control.real_output(int(x)) for x in control.aliases]
            winner = winner if winner == "tie" else control.real_output(int(winner)) if winner else None
        if len(pair) != 2 or winner is None:
            return []
        a, b = sorted(pair)
        first = mine.get(((a, b), cj.criterion))
        if first is None:
            return []
        return [(first, "tie" if winner == "tie" else ("a" if winner == a else "b"))]

    def control_answer(self, answer: dict, judgement, spans) -> None:
        winner = {"a": judgement.output_a_id, "b": judgement.output_b_id}.get(judgement.winner, "tie")
        answer.update({"winner": winner, "pair": [judgement.output_a_id, judgement.output_b_id]})

    def gold_answers(self, answer: dict, real) -> list[dict]:
        winner = answer.get("winner")
        return [{"winner": winner if winner == "tie" else real(int(winner))}]

    relative_checks = True

    def relative_passed(self, answer, degraded: int) -> bool | None:
        """The clean output preferred (a tie fails)."""
        winner = answer.get("winner")
        if winner is None:
            return None
        return winner != "tie" and int(winner) != degraded

    # Its relative check is an output beside its own damaged copy: a degraded control in a file.
    relative_file_refused = (
        'a pairwise relative check shows an output beside its own damaged copy: import it as "control": '
        '"degraded" with "degraded": "a" or "b"'
    )

    def degraded_shown(self, outputs: list[int], victim: int) -> list[tuple[int, bool]]:
        """The original beside its damaged copy: the copy should lose."""
        return [(victim, False), (victim, True)]

    # ==== validation of one answer ====

    unit_sizes = (2, 2)
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

    # ---- import -----------------------------------------------------------------------------------
    # `a` is the output shown first; the pair is stored with the lower output id first, winner flipped.
    import_keys = frozenset({"item", "annotator", "criterion", "a", "b", "winner"})
    import_optional_keys = IMPORT_COMMON_OPTIONAL
    import_columns = ("output_a_id", "output_b_id", "winner")

    def import_answer(self, record, obj: dict, *, output, shown_order, check, text, errors: list[str]) -> None:
        a, b = output(obj["a"], "a"), output(obj["b"], "b")
        checked = check({"winner": obj["winner"]} if None in (a, b) else {"winner": obj["winner"], "a": a, "b": b})
        shown = shown_order()
        if shown is not None and None not in (a, b) and sorted(shown) != sorted([a, b]):
            errors.append("shown_order must name the systems a and b")
        if not errors:
            record.a_id, record.b_id, record.winner = pairwise_canonical(a_id=a, b_id=b, winner=checked["winner"])
            record.shown = shown or [a, b]

    def import_unit_key(self, record) -> tuple:
        return (record.annotator, record.a_id, record.b_id, record.criterion)

    def import_value(self, record) -> tuple:
        return (record.winner,)

    def stored_for_import(self, campaign, names: dict[int, str]) -> dict[tuple, tuple]:
        rows = self.model.objects.filter(campaign=campaign, annotator_id__in=list(names)).values_list(
            "annotator_id", "output_a_id", "output_b_id", "criterion", "winner"
        )
        return {(names[an], a, b, c): (w,) for an, a, b, c, w in rows}

    def import_fields(self, campaign, record) -> tuple:
        return (record.a_id, record.b_id, record.winner)
