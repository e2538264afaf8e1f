"""Likert / direct assessment: one output per unit, a score per criterion on the campaign's scale."""
from __future__ import annotations

from annotations.models import RatingJudgement
from annotations.protocols.base import RAW, AgreementSpec, Protocol


class Likert(Protocol):
    name = "likert"
    label = "Likert / direct assessment"
    model = RatingJudgement
    fields = (("output_id", "output_id"), ("score", "score"), ("rank", "rank"))
    kind = "rating"
    # Interval: Likert points and 0-100 direct assessment are analysed as numbers (means,
    # z-scores) everywhere else, so agreement treats them the same way.
    agreement = AgreementSpec(level="interval", variant=RAW, unit="output", value="score")
    template = "annotate/protocols/likert.html"
    script = "js/protocols/likert.js"

    # ==== validation of one answer ====

    def check_value(self, answer, *, campaign, criterion, unit_outputs, texts) -> dict:
        out = super().check_value(answer, campaign=campaign, criterion=criterion, unit_outputs=unit_outputs,
                                  texts=texts)
        if answer.get("rank") is not None:
            out["rank"] = self.check_rank(answer["rank"])
        return out
