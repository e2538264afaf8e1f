"""Likert / direct assessment: one output per unit, a score per criterion on the campaign's scale."""

from __future__ import annotations

from annotations.models import RatingJudgement
from annotations.protocols.base import RAW, AgreementSpec, Protocol


class Likert(Protocol):
    name = "likert"
    label = "Likert / direct assessment"
    guide = "tutorials/first-study/"
    model = RatingJudgement
    fields = (("output_id", "output_id"), ("score", "score"), ("rank", "rank"))
    # Interval: Likert points and 0-100 direct assessment are analysed as numbers (means,
    # z-scores) everywhere else, so agreement treats them the same way.
    agreement = AgreementSpec(level="interval", variant=RAW, unit="output", value="score")
    scale_required = True
    # The set-up form's suggestion (a campaign must still name its scale).
    form_scale = (1.0, 5.0)
    api_path = "/api/judgements/ratings/"
    template = "annotate/protocols/likert.html"
    script = "js/protocols/likert.js"
    shortcuts = "annotate/protocols/likert_keys.html"
    documents = True

    # ---- export -------------------------------------------------------------------------------
    export_extra = ("rank",)
