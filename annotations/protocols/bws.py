"""Best-worst scaling (Louviere et al. 2015; Kiritchenko & Mohammad 2017): the best and the
worst of a tuple of outputs of one input."""
from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator

from annotations.models import BestWorstJudgement
from annotations.protocols.base import RAW, AgreementSpec, AnswerError, JudgementRow, Protocol


def balanced_tuples(values: list, size: int, rng: random.Random) -> list[list]:
    """Tuples of `size` distinct values in which every value appears equally often.

    n values, tuple size t <= n: with t dividing n, two rounds of fresh random
    permutations cut into consecutive tuples (each value twice); otherwise the
    t/gcd(n, t) windows of a cyclic order that start at multiples of t, which
    are all different and cover every value exactly t/gcd(n, t) times.
    """
    n = len(values)
    if n <= size:
        return [list(values)] if n >= 2 else []
    if n % size == 0:
        first = values[:]
        rng.shuffle(first)
        tuples = [first[i : i + size] for i in range(0, n, size)]
        seen = {frozenset(t) for t in tuples}
        for _ in range(20):
            second = values[:]
            rng.shuffle(second)
            candidate = [second[i : i + size] for i in range(0, n, size)]
            if not seen & {frozenset(t) for t in candidate}:
                break
        return tuples + candidate
    order = values[:]
    rng.shuffle(order)
    rounds = size // math.gcd(n, size)
    count = n * rounds // size
    return [[order[(j * size + m) % n] for m in range(size)] for j in range(count)]


def tuple_key(outputs) -> str:
    return "-".join(map(str, sorted(outputs)))


class BestWorst(Protocol):
    name = "bws"
    label = "Best-worst scaling"
    model = BestWorstJudgement
    fields = (("outputs", "outputs"), ("best_id", "best_id"), ("worst_id", "worst_id"))
    per_output = False
    scored = False
    kind = "bws"
    # Each output of a judged tuple is "best", "worst" or neither: one nominal value per
    # (tuple, output), so an annotator who swaps only the worst disagrees on two outputs, not
    # on the whole tuple.
    agreement = AgreementSpec(level="nominal", variant=RAW, unit="output within a tuple",
                              value="best (1), worst (-1) or neither (0)")
    template = "annotate/protocols/bws.html"
    script = "js/protocols/bws.js"

    def plan_item(self, campaign, item_index: int, outputs: list[tuple[int, int]],
                  rng: random.Random) -> Iterator[list[tuple[int, int]]]:
        yield from balanced_tuples(outputs, max(2, campaign.tuple_size), rng)

    def agreement_triples(self, rows: Iterable[JudgementRow]) -> Iterator[tuple[object, int, float]]:
        for r in rows:
            key = tuple_key(r.outputs)
            for o in r.outputs:
                yield (key, o), r.annotator_id, 1.0 if o == r.best_id else -1.0 if o == r.worst_id else 0.0

    def output_scores(self, rows: list[JudgementRow], *, normalize: str = "none") -> dict[int, float]:
        """(#best - #worst) / #appearances of each output (Orme 2009's counting score)."""
        seen: dict = {}
        net: dict = {}
        for r in rows:
            for o in r.outputs:
                seen[o] = seen.get(o, 0) + 1
                net.setdefault(o, 0)
            net[r.best_id] = net.get(r.best_id, 0) + 1
            net[r.worst_id] = net.get(r.worst_id, 0) - 1
        return {o: net[o] / seen[o] for o in seen}

    def wins(self, rows: list[JudgementRow], system_of: dict[int, str]) -> list[tuple[str, str]]:
        """Best beats every other output of its tuple; every other output beats the worst."""
        out = []
        for r in rows:
            names = {o: system_of[o] for o in r.outputs if o in system_of}
            best, worst = names.get(r.best_id), names.get(r.worst_id)
            for o, name in names.items():
                if o != r.best_id and best:
                    out.append((best, name))
                if o != r.worst_id and worst:
                    out.append((name, worst))
        return out

    def unit_key(self, row: JudgementRow) -> tuple:
        return tuple(sorted(row.outputs))

    def consensus_value(self, row: JudgementRow):
        return (row.best_id, row.worst_id)

    # ==== validation of one answer ====

    unit_sizes = (2, 10)
    answer_shape = "tuple"
    answer_keys = frozenset({"best", "worst"})

    def check_tuple(self, outputs) -> list[int]:
        """The outputs of a tuple: at least 2, none twice."""
        if not isinstance(outputs, (list, tuple)) or len(outputs) < 2:
            raise AnswerError("tuple_size", "outputs")
        outputs = list(outputs)
        if len(set(outputs)) != len(outputs):
            raise AnswerError("tuple_twice", "outputs")
        if len(tuple_key(outputs)) > self.model._meta.get_field("tuple_key").max_length:
            raise AnswerError("tuple_long", "outputs")
        return outputs

    def check_choice(self, best, worst, outputs) -> None:
        """Best and worst (either may be None in a gold expectation): outputs of the tuple, different."""
        for value in (best, worst):
            if value is not None and (isinstance(value, bool) or value not in outputs):
                raise AnswerError("best_worst_in_tuple", "best")
        if best is not None and best == worst:
            raise AnswerError("best_worst_differ", "worst")

    def check_value(self, answer, *, campaign, criterion, unit_outputs, texts) -> dict:
        outputs = self.check_tuple(answer["outputs"] if "outputs" in answer else unit_outputs)
        if unit_outputs is not None and not set(outputs) <= set(unit_outputs):
            raise AnswerError("best_worst_in_tuple", "outputs")
        best, worst = answer.get("best"), answer.get("worst")
        if best is None or worst is None:
            raise AnswerError("best_worst_in_tuple", "best")
        self.check_choice(best, worst, outputs)
        return {"outputs": outputs, "best": best, "worst": worst}
