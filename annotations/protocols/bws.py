"""Best-worst scaling (Louviere et al. 2015; Kiritchenko & Mohammad 2017): the best and the
worst of a tuple of outputs of one input."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator

from annotations.models import BestWorstJudgement, JudgementBase, Output
from annotations.protocols.base import RAW, RELATIVE_COPY, AgreementSpec, Protocol, output_identity
from annotations.protocols.errors import AnswerError
from annotations.protocols.imports import IMPORT_COMMON_OPTIONAL
from annotations.protocols.options import INTEGER, Option
from annotations.protocols.rows import JudgementRow
from annotations.protocols.stats import degraded_passed, majority_share


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
    guide = "reference/protocols/"
    model = BestWorstJudgement
    fields = (("outputs", "outputs"), ("best_id", "best_id"), ("worst_id", "worst_id"))
    per_output = False
    scored = False
    has_scale = False
    score_floor = -1.0  # best-worst counting scores run from -1 to 1
    file_answer_keys = frozenset({"outputs", "best", "worst"})
    gold_expected_keys = frozenset({"best", "worst"})
    # Each output of a judged tuple is "best", "worst" or neither: one nominal value per
    # (tuple, output), so an annotator who swaps only the worst disagrees on two outputs, not
    # on the whole tuple.
    agreement = AgreementSpec(
        level="nominal", variant=RAW, unit="output within a tuple", value="best (1), worst (-1) or neither (0)"
    )
    template = "annotate/protocols/bws.html"
    script = "js/protocols/bws.js"
    shortcuts = "annotate/protocols/bws_keys.html"

    api_path = "/api/judgements/bestworst/"
    options = (
        Option(
            "tuple_size",
            INTEGER,
            4,
            "Outputs per screen",
            minimum=2,
            maximum=20,
            flag="tuple-size",
            help="Best-worst tuple size: 2 to 20 outputs (default 4).",
            title="Best-worst tuple size",
        ),
    )

    def plan_item(
        self, campaign, item_index: int, outputs: list[tuple[int, int]], rng: random.Random
    ) -> Iterator[list[tuple[int, int]]]:
        yield from balanced_tuples(outputs, max(2, self.option(campaign, "tuple_size")), rng)

    def units_of_item(self, campaign, n_outputs: int) -> int:
        size = max(2, self.option(campaign, "tuple_size"))  # balanced_tuples' counts
        if n_outputs <= size:
            return 1 if n_outputs >= 2 else 0
        if n_outputs % size == 0:
            return 2 * n_outputs // size
        return n_outputs * (size // math.gcd(n_outputs, size)) // size

    def agreement_triples(self, rows: Iterable[JudgementRow]) -> Iterator[tuple[object, int, float]]:
        for r in rows:
            key = tuple_key(r.outputs)
            for o in r.outputs:
                yield (key, o), r.annotator_id, 1.0 if o == r.best_id else -1.0 if o == r.worst_id else 0.0

    def agreement_unit_identity(self, key, identity) -> tuple[tuple, bool]:
        members, output = key
        return (
            tuple(sorted(output_identity(identity, int(o)) for o in members.split("-"))),
            output_identity(identity, output),
        ), False

    # ---- one answer, converted ------------------------------------------------------------------

    def judgement_row(self, campaign, base, answer, order) -> tuple:
        outputs = answer["outputs"]
        return self.model(
            **base,
            criterion=answer["criterion"],
            outputs=sorted(outputs),
            tuple_key=tuple_key(outputs),
            best_id=answer["best"],
            worst_id=answer["worst"],
        ), None

    def stored_answer(self, judgement, *, order, campaign) -> dict:
        return {"criterion": judgement.criterion, "best": judgement.best_id, "worst": judgement.worst_id}

    def control_submission(self, criterion, record, order) -> list[dict]:
        return [{"criterion": criterion, "best": record.get("best"), "worst": record.get("worst")}]

    def draft_answer(self, answer, draft, *, index, page_id) -> None:
        draft["fields"][f"b-{index}"] = str(page_id(answer["best"]))
        draft["fields"][f"x-{index}"] = str(page_id(answer["worst"]))

    degraded_file_hint = "a system of the tuple"

    def control_file_answer(self, obj, *, control, item_id, lookup, check, errors):
        systems = obj["outputs"]
        if not isinstance(systems, list):
            errors.append("outputs must be a list of system names")
            return None
        ids = [lookup.output(item_id, s, errors, "outputs entry") for s in systems]
        best = lookup.output(item_id, obj["best"], errors, "best")
        worst = lookup.output(item_id, obj["worst"], errors, "worst")
        if errors or check({"outputs": ids, "best": best, "worst": worst}, None) is None:
            return None
        names = dict(zip(systems, ids))
        output_id = None
        if control == "degraded":
            if obj["degraded"] not in names:
                errors.append("degraded must name a system of the tuple")
                return None
            output_id = names[obj["degraded"]]
        return {"best": best, "worst": worst, "outputs": ids}, output_id, names

    # A relative line: "outputs" the clean outputs' systems, "best" / "worst" a system of them or "degraded".
    relative_file_keys = frozenset({"outputs", "best", "worst"})
    relative_file_optional = frozenset()

    def relative_file_answer(self, obj, *, item_id, lookup, check, errors):
        systems = obj["outputs"]
        if not isinstance(systems, list) or not systems:
            errors.append("outputs must be a list of the clean outputs' system names")
            return None
        ids = {s: lookup.output(item_id, s, errors, "outputs entry") for s in systems if isinstance(s, str)}
        if len(ids) != len(systems):
            errors.append("outputs must name each system once")
        damaged = lookup.output(item_id, obj["degraded"], errors, "degraded")
        if errors:
            return None
        ids["degraded"] = RELATIVE_COPY
        chosen = {}
        for key in ("best", "worst"):
            if obj[key] not in ids:
                errors.append(f'{key} must name a system of outputs or "degraded"')
                return None
            chosen[key] = ids[obj[key]]
        outputs = [ids[s] for s in systems] + [RELATIVE_COPY]
        if check({"outputs": outputs, **chosen}, None) is None:
            return None
        return {**chosen, "outputs": outputs}, damaged

    def relative_file_line(self, answer, name, copy) -> dict:
        def named(value) -> str:
            return "degraded" if int(value) == copy else name(int(value))

        return {
            "outputs": [name(int(o)) for o in answer.get("outputs") or [] if int(o) != copy],
            "best": named(answer["best"]),
            "worst": named(answer["worst"]),
        }

    def gold_problems(self, spec, answer) -> list[str]:
        problems = super().gold_problems(spec, answer)
        if "best" in spec and answer.get("best") != spec["best"]:
            problems.append("another output was expected as the best")
        if "worst" in spec and answer.get("worst") != spec["worst"]:
            problems.append("another output was expected as the worst")
        return problems

    def simulated_answers(self, campaign, criterion, outputs, impression, rng) -> list[dict]:
        ranked = sorted(outputs, key=impression)
        return [{"criterion": criterion, "best": ranked[-1]["id"], "worst": ranked[0]["id"]}]

    def allocation_observations(self, campaign, criterion: str) -> list[tuple[int, str, float]]:
        """Each output of a judged tuple: +1 best, -1 worst, 0 for the others."""

        judgements = list(
            self.model.objects.filter(
                campaign=campaign,
                criterion=criterion,
                status=JudgementBase.Status.COMPLETE,
            ).values_list("item_id", "outputs", "best_id", "worst_id")
        )
        system_of = dict(
            Output.objects.filter(pk__in={o for _, outputs, _, _ in judgements for o in outputs}).values_list(
                "pk", "system_id"
            )
        )
        return [
            (item, str(system_of.get(output)), 1.0 if output == best else -1.0 if output == worst else 0.0)
            for item, outputs, best, worst in judgements
            for output in outputs
        ]

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

    def judged_outputs(self, judgements, output_ids: set[int]) -> set[int]:
        seen: set[int] = set()
        for ids in judgements.values_list("outputs", flat=True):
            if set(ids) <= output_ids:
                seen.update(ids)
        return seen

    def unit_key(self, row: JudgementRow) -> tuple:
        return tuple(sorted(row.outputs))

    def consensus_value(self, row: JudgementRow):
        return (row.best_id, row.worst_id)

    # ---- export -------------------------------------------------------------------------------
    stat_keys = ("n", "best", "worst", "score")
    stat_counts = frozenset({"n", "best", "worst"})
    one_output_per_unit = False

    def export_fields(
        self, row: JudgementRow, *, name, annotator: str, text, shown: list[int]
    ) -> tuple[dict, dict, list[int]]:
        order = shown if sorted(shown) == sorted(row.outputs) else list(row.outputs)
        fields = {
            "annotator": annotator,
            "criterion": row.criterion,
            "outputs": [name(o) for o in order],
            "best": name(row.best_id),
            "worst": name(row.worst_id),
        }
        return fields, {"output_texts": [text(o) for o in order]}, order

    def output_stats(
        self, rows: Iterable[JudgementRow], *, output_ids: list[int], criteria: list[str], scales: dict[str, tuple]
    ) -> dict[int, dict[str, dict]]:
        """n (tuples the output appeared in), best, worst, score = (best - worst) / n (Orme's counting score)."""
        stats = {o: {c: self.empty_stats() for c in criteria} for o in output_ids}
        for r in rows:
            for output in r.outputs:
                entry = stats.get(output, {}).get(r.criterion)
                if entry is None:
                    continue
                entry["n"] += 1
                entry["best"] += output == r.best_id
                entry["worst"] += output == r.worst_id
        for per_criterion in stats.values():
            for entry in per_criterion.values():
                entry["score"] = (entry["best"] - entry["worst"]) / entry["n"] if entry["n"] else None
        return stats

    def unit_consensus(self, values: list, scale: tuple = (None, None)) -> float | None:
        """The mean of the majority shares of "best" and of "worst"."""
        if len(values) < 2:
            return None
        return (majority_share([best for best, _ in values]) + majority_share([worst for _, worst in values])) / 2

    # ---- quality control -----------------------------------------------------------------------

    def qc_habit(self, row: JudgementRow):
        """The screen positions of the best and of the worst ("?" when not shown)."""
        shown = list(row.shown_order or row.outputs)
        return (
            shown.index(row.best_id) if row.best_id in shown else "?",
            shown.index(row.worst_id) if row.worst_id in shown else "?",
        )

    def qc_originals(self, row: JudgementRow) -> list[tuple[int, object]]:
        return [(o, 1 if o == row.best_id else -1 if o == row.worst_id else 0) for o in row.outputs]

    def degraded_pair(self, cj, control, *, originals, floor) -> tuple | None:
        """The damaged copy's score in its tuple (best 1, worst -1, else 0) against the original's mean
        score in the annotator's tuples."""
        if control is not None:
            degraded = control.degraded_alias
            real = control.real_output(degraded)
        else:
            real = degraded = cj.output_id
        best, worst = cj.answer.get("best"), cj.answer.get("worst")
        value = 1 if best == degraded else -1 if worst == degraded else 0
        found = originals(real)
        if not found:
            return None
        original = sum(found) / len(found)
        return value, original, -1, degraded_passed(value, original, floor=-1)

    def repeat_pairs(self, cj, control, mine: dict) -> list[tuple]:
        best, worst = cj.answer.get("best"), cj.answer.get("worst")
        outputs = cj.answer.get("outputs") or []
        if control is not None:
            outputs = [control.real_output(int(x)) for x in control.aliases]
            best, worst = control.real_output(int(best)), control.real_output(int(worst))
        first = mine.get((tuple(sorted(outputs)), cj.criterion))
        return [] if first is None else [(first, (best, worst))]

    relative_checks = True

    def relative_passed(self, answer, degraded: int) -> bool | None:
        """The degraded copy chosen as worst."""
        worst = answer.get("worst")
        return None if worst is None else int(worst) == degraded

    def control_answer(self, answer: dict, judgement, spans) -> None:
        answer.update({"best": judgement.best_id, "worst": judgement.worst_id, "outputs": list(judgement.outputs)})

    def gold_answers(self, answer: dict, real) -> list[dict]:
        return [{"best": real(int(answer["best"])), "worst": real(int(answer["worst"]))}]

    # ==== validation of one answer ====

    unit_sizes = (2, 10)
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

    # ---- import -----------------------------------------------------------------------------------
    # The tuple in the order shown (`shown_order`, when given, reorders it); stored as a sorted list and its key.
    import_keys = frozenset({"item", "annotator", "criterion", "outputs", "best", "worst"})
    import_optional_keys = IMPORT_COMMON_OPTIONAL
    import_columns = ("outputs", "tuple_key", "best_id", "worst_id")

    def import_answer(self, record, obj: dict, *, output, shown_order, check, text, errors: list[str]) -> None:
        systems = obj["outputs"]
        if not isinstance(systems, list):
            errors.append("outputs must be a list of system names")
            return
        ids = [output(s, "outputs entry") for s in systems]
        best, worst = output(obj["best"], "best"), output(obj["worst"], "worst")
        shown = shown_order()
        if shown is not None and None not in ids and sorted(shown) != sorted(ids):
            errors.append("shown_order must name the systems of outputs")
        elif shown is not None:
            ids = shown
        if not errors and check({"outputs": ids, "best": best, "worst": worst}) is not None:
            record.shown, record.best_id, record.worst_id = ids, best, worst

    def import_unit_key(self, record) -> tuple:
        return (record.annotator, tuple_key(record.shown), record.criterion)

    def import_value(self, record) -> tuple:
        return (record.best_id, record.worst_id)

    def stored_for_import(self, campaign, names: dict[int, str]) -> dict[tuple, tuple]:
        rows = self.model.objects.filter(campaign=campaign, annotator_id__in=list(names)).values_list(
            "annotator_id", "tuple_key", "criterion", "best_id", "worst_id"
        )
        return {(names[a], k, c): (b, w) for a, k, c, b, w in rows}

    def import_fields(self, campaign, record) -> tuple:
        return (sorted(record.shown), tuple_key(record.shown), record.best_id, record.worst_id)
