"""Post-editing: the annotator edits the output into an acceptable one (optionally also rating it
on the criterion's scale); the human score of the output is HTER, the translation edit rate of the
output against its post-edit (Snover et al. 2006): TER as sacrebleu computes it, through the
workbench's own `ter` scorer (metrics.scorers.sacrebleu_metrics.TERMetric, sacrebleu's defaults),
in percent, lower is better.

The HTER is computed here, from the output's text and the post-edit, whenever an answer is checked
(page, REST API, `import_judgements`): like the MQM score it is never taken from outside, so an
exported file imports back to the same figures. It is stored as the judgement's `score`, so
agreement (interval alpha on HTER), the human score of an output (its mean HTER), rankings and
`outputs.jsonl`'s `human.<criterion>.mean` read it as they read any score. The post-edits also
export as new references (`references.jsonl`, with their provenance), which `import_references`
adds to a dataset.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal

from annotations.models import Output, PostEditJudgement
from annotations.protocols.base import RAW, AgreementSpec, Protocol, input_number
from annotations.protocols.errors import AnswerError
from annotations.protocols.imports import IMPORT_COMMON_OPTIONAL
from annotations.protocols.rows import JudgementRow
from metrics.scorers.registry import get_metric


@functools.cache
def _ter():
    """The workbench's TER scorer (sacrebleu's TER, default options), built once per process."""

    return get_metric("ter")


def hter(output: str, post_edit: str) -> float:
    """HTER of an output against its post-edit: sacrebleu's sentence TER with the post-edit as the
    only reference (edits / reference words, x 100)."""
    return float(_ter().score([output], [[post_edit]])[0].score)


class PostEdit(Protocol):
    name = "post-edit"
    label = "Post-editing (HTER)"
    guide = "tutorials/post-editing/"
    model = PostEditJudgement
    fields = (("output_id", "output_id"), ("score", "score"), ("post_edit", "post_edit"), ("rating", "rating"))
    # The human score is an edit rate: fewer edits, a better output. Rankings order systems by
    # lowest HTER first and `correlate` turns it round (as it does for metrics like TER).
    higher_is_better = False
    # Interval: HTER is a ratio of edits to words, compared as a number (raw: every annotator
    # edits the same outputs, and a per-annotator z-score would hide who edits more).
    agreement = AgreementSpec(level="interval", variant=RAW, unit="output", value="HTER")
    # A criterion's scale, when it has one, is the optional rating's; none is needed.
    default_scale = None
    # A degraded copy's HTER would be measured against a text that is no output, and a lower HTER
    # is the better answer: control units are not defined for post-editing yet.
    controls_refused = "post-editing campaigns have no quality-control units (degraded copies, repeats, gold) yet"
    template = "annotate/protocols/post_edit.html"
    script = "js/protocols/post_edit.js"
    shortcuts = "annotate/protocols/post_edit_keys.html"

    def settings_summary(self, campaign) -> list[tuple[str, str]]:
        return [
            ("Human score", "HTER: sacrebleu's TER of the output against its post-edit, lower is better"),
            ("Rating", "on the criteria that have a scale"),
        ]

    # ---- validation of one answer ---------------------------------------------------------------
    # `score` in an answer (the exported line carries the HTER) is accepted and recomputed.
    answer_keys = frozenset({"output", "post_edit", "rating", "score"})
    MAX_LENGTH = 20000

    def check_post_edit(self, value) -> str:
        if not isinstance(value, str):
            raise AnswerError("post_edit_type", "post_edit", value=value)
        if not value.strip():
            raise AnswerError("post_edit_empty", "post_edit")
        if len(value) > self.MAX_LENGTH:
            raise AnswerError("post_edit_long", "post_edit", limit=self.MAX_LENGTH)
        return value

    def check_rating(self, rating, *, campaign, criterion: str) -> float | None:
        """On a criterion with a scale, a number on it (required); on one without, none."""
        low, high = campaign.criterion_scale(criterion)
        if low is None and high is None:
            if rating is not None:
                raise AnswerError("rating_none", "rating", criterion=criterion)
            return None
        scale = f"{'-inf' if low is None else f'{low:g}'} to {'inf' if high is None else f'{high:g}'}"
        if rating is None:
            raise AnswerError("rating_missing", "rating", criterion=criterion, scale=scale)
        if isinstance(rating, bool) or not isinstance(rating, (int, float, Decimal)) or not math.isfinite(rating):
            raise AnswerError("rating_type", "rating", value=rating)
        rating = float(rating)
        if (low is not None and rating < low) or (high is not None and rating > high):
            raise AnswerError("rating_scale", "rating", rating=rating, scale=scale)
        return rating

    def check_value(self, answer, *, campaign, criterion, unit_outputs, texts) -> dict:
        out = {}
        if "output" in answer or unit_outputs is not None:
            out["output"] = self.check_output(answer.get("output"), unit_outputs)
        out["post_edit"] = self.check_post_edit(answer.get("post_edit"))
        out["rating"] = self.check_rating(answer.get("rating"), campaign=campaign, criterion=criterion)
        output = out.get("output", answer.get("output"))
        text = (texts or {}).get(output)
        if text is None:
            # The callers pass texts only to span protocols; one indexed read otherwise.
            text = Output.objects.filter(pk=output).values_list("text", flat=True).first() or ""
        out["score"] = hter(text, out["post_edit"])
        return out

    # ---- one answer, converted (the submit, the revise page) ----------------------------------------

    def judgement_row(self, campaign, base: dict, answer: Mapping, order) -> tuple:
        row, _ = super().judgement_row(campaign, base, answer, order)
        row.post_edit, row.rating = answer["post_edit"], answer.get("rating")
        return row, None

    def stored_answer(self, judgement, *, order, campaign) -> dict:
        return {
            **super().stored_answer(judgement, order=order, campaign=campaign),
            "post_edit": judgement.post_edit,
            "rating": judgement.rating,
        }

    def draft_answer(self, answer: Mapping, draft: dict, *, index: int, page_id) -> None:
        """The page's scale shows the rating (not the HTER), where the criterion has one; the
        edited text goes under `post_edits` by the page's output id (post_edit.js reads it)."""
        output = page_id(answer["output"])
        if answer.get("rating") is not None:
            name = f"s-{index}-{output}"
            draft["fields"][name] = input_number(answer["rating"])
            draft["touched"].append(name)
        if "post_edit" in answer:
            draft.setdefault("post_edits", {})[str(output)] = answer["post_edit"]

    # ---- allocation and simulated annotators ---------------------------------------------------

    def allocation_observations(self, campaign, criterion: str) -> list[tuple[int, str, float]]:
        """Minus the HTER: adaptive allocation compares systems by higher = better."""
        return [(item, system, -value) for item, system, value in super().allocation_observations(campaign, criterion)]

    def simulated_answers(self, campaign, criterion: str, outputs, impression, rng) -> list[dict]:
        """A simulated post-editor keeps each word with a chance that grows with their opinion of
        the output (a good output needs few edits), and rates it where the criterion has a scale."""
        low, high = campaign.criterion_scale(criterion)
        answers = []
        for output in outputs:
            value = impression(output)
            words = output["text"].split() or ["?"]
            kept = [w for w in words if rng.random() < 0.5 + value / 200] or words[:1]
            answer = {"criterion": criterion, "output": output["id"], "post_edit": " ".join(kept)}
            if low is not None and high is not None:
                answer["rating"] = float(round(low + (high - low) * value / 100))
            answers.append(answer)
        return answers

    # ---- human scores and export ----------------------------------------------------------------
    stat_keys = ("n", "mean", "sd", "consensus", "rating_mean")
    export_extra = ("post_edit", "rating")

    def unit_consensus(self, values: list, scale: tuple = (None, None)) -> float | None:
        """None: HTER has no bounded scale (the criterion's scale is the rating's)."""
        return None

    def output_stats(
        self, rows: Iterable[JudgementRow], *, output_ids: list[int], criteria: list[str], scales: dict[str, tuple]
    ) -> dict[int, dict[str, dict]]:
        """n, mean and sd of the output's HTER, and the mean of its ratings (None without a scale)."""
        rows = list(rows)
        stats = super().output_stats(rows, output_ids=output_ids, criteria=criteria, scales=scales)
        ratings: dict[tuple, list] = {}
        for r in rows:
            if r.rating is not None:
                ratings.setdefault((r.output_id, r.criterion), []).append(r.rating)
        for (output, criterion), values in ratings.items():
            entry = stats.get(output, {}).get(criterion)
            if entry is not None:
                entry["rating_mean"] = sum(values) / len(values)
        return stats

    def card_design(self, config: dict, fmt) -> list[str]:
        return [
            (
                "- Post-editing: annotators edited each output into an acceptable one; the human score is "
                "HTER, sacrebleu's TER of the output against its post-edit (default options: case-insensitive, "
                "tercom tokenisation), in percent, lower is better, averaged over annotators"
            ),
            "- The post-edits are in references.jsonl (one per annotator and output, with provenance)",
        ]

    # The post-edits as new references, beside judgements.jsonl (the campaign's first criterion:
    # one post-edit per annotator and output).
    export_file = "references.jsonl"
    export_file_header = ()

    def export_file_rows(
        self,
        row: JudgementRow,
        *,
        item: str,
        system: str,
        annotator: str,
        source: str,
        text: str,
        meta: dict,
        campaign: str = "",
    ) -> list:
        return [
            {
                "item": item,
                "reference": row.post_edit,
                "provenance": {
                    "kind": "post-edit",
                    "campaign": campaign,
                    "annotator": annotator,
                    "judgement": row.id,
                    "system": system,
                    "criterion": row.criterion,
                    "hter": row.score,
                },
            }
        ]

    # ---- import ---------------------------------------------------------------------------------
    import_keys = frozenset({"item", "system", "annotator", "criterion", "post_edit"})
    import_optional_keys = frozenset({"score", "rating"}) | IMPORT_COMMON_OPTIONAL
    import_columns = ("output_id", "score", "post_edit", "rating", "scale_min", "scale_max")

    def import_answer(self, record, obj: dict, *, output, shown_order, check, text, errors: list[str]) -> None:
        record.output_id = output(obj["system"], "system")
        answer = {"post_edit": obj.get("post_edit"), "rating": obj.get("rating")}
        texts = None
        if record.output_id is not None:
            answer["output"] = record.output_id
            texts = {record.output_id: text(record.output_id)}
        checked = check(answer, texts)
        if checked is not None:
            record.score, record.post_edit, record.rating = checked["score"], checked["post_edit"], checked["rating"]
        record.shown = [record.output_id]
        shown = shown_order()
        if shown is not None and record.output_id is not None:
            if record.output_id not in shown:
                errors.append("shown_order must include the judged system")
            record.shown = shown

    def import_value(self, record) -> tuple:
        return (record.score, getattr(record, "post_edit", None), getattr(record, "rating", None))

    def stored_for_import(self, campaign, names: dict[int, str]) -> dict[tuple, tuple]:
        rows = self.model.objects.filter(campaign=campaign, annotator_id__in=list(names)).values_list(
            "annotator_id", "output_id", "criterion", "score", "post_edit", "rating"
        )
        return {(names[a], o, c): (s, p, r) for a, o, c, s, p, r in rows}

    def import_fields(self, campaign, record) -> tuple:
        return (
            record.output_id,
            record.score,
            record.post_edit,
            record.rating,
            *campaign.criterion_scale(record.criterion),
        )
