"""Error span annotation (ESA, Kocmi et al. 2024): error spans in one output, then a 0-100 score."""
from __future__ import annotations

from collections.abc import Iterable

from annotations.models import SpanJudgement
from annotations.protocols.base import RAW, AgreementSpec, JudgementRow, Protocol

# MQM-style span weights (google/wmt-mqm-human-evaluation): more severe spans weigh more.
SPAN_WEIGHTS = {"minor": 1, "major": 5, "critical": 10}


def spans_weight(spans) -> float:
    return sum(SPAN_WEIGHTS.get(s.get("severity"), 1) for s in spans or [])


class Esa(Protocol):
    name = "esa"
    label = "Error span annotation (ESA)"
    model = SpanJudgement
    fields = (("output_id", "output_id"), ("score", "score"))
    kind = "esa"
    has_spans = True
    agreement = AgreementSpec(level="interval", variant=RAW, unit="output", value="0-100 score")
    default_scale = (0.0, 100.0)
    default_severities = ("minor", "major")
    api_path = "/api/judgements/spans/"
    setup_fields = ("severities",)

    def settings_summary(self, campaign) -> list[tuple[str, str]]:
        return [("Severities", ", ".join(campaign.severities or self.default_severities))]
    template = "annotate/protocols/esa.html"
    script = "js/protocols/esa.js"
    shortcuts = "annotate/protocols/esa_keys.html"

    # ---- export -------------------------------------------------------------------------------
    stat_keys = ("n", "mean", "sd", "consensus", "minor", "major", "critical", "missing")
    stat_counts = frozenset({"n", "minor", "major", "critical", "missing"})
    export_extra = ("spans",)

    def output_stats(self, rows: Iterable[JudgementRow], *, output_ids: list[int], criteria: list[str],
                     scales: dict[str, tuple]) -> dict[int, dict[str, dict]]:
        """The ratings' figures, plus how many minor / major / critical spans and missing-content
        markers the annotators marked in total."""
        rows = list(rows)
        stats = super().output_stats(rows, output_ids=output_ids, criteria=criteria, scales=scales)
        for r in rows:
            entry = stats.get(r.output_id, {}).get(r.criterion)
            if entry is not None:
                for span in r.spans:
                    entry["missing" if span.get("missing") else span["severity"]] += 1
        return stats

    def card_design(self, config: dict, fmt) -> list[str]:
        return [f"- Error severities: {', '.join(config['severities']) or 'minor, major'}"]

    # ---- quality control -----------------------------------------------------------------------

    def qc_originals(self, row: JudgementRow) -> list[tuple[int, object]]:
        return [(row.output_id, (row.score, spans_weight(row.spans)))]

    def degraded_pair(self, cj, control, *, originals, floor) -> tuple | None:
        """A damaged copy passes when scored lower, or scored the same with heavier error spans
        (or both at the scale's floor)."""
        if control is not None:
            alias = control.degraded_alias
            real, score = control.real_output(alias), cj.answer.get("scores", {}).get(str(alias))
            spans = (cj.answer.get("spans") or {}).get(str(alias))
        else:
            real, score, spans = cj.output_id, cj.answer.get("score"), cj.answer.get("spans")
        original = (originals(real) or [None])[0]
        if score is None or original is None:
            return None
        original_score, original_weight = original
        passed = (score < original_score or (score == original_score and spans_weight(spans) > original_weight)
                  or (floor is not None and score == original_score == floor))
        return score, original_score, floor, passed

    def control_answer(self, answer: dict, judgement, spans) -> None:
        super().control_answer(answer, judgement, spans)
        answer.setdefault("spans", {})[str(judgement.output_id)] = [
            {k: v for k, v in span.items() if v is not None} for span in spans or []]
