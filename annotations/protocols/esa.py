"""Error span annotation (ESA, Kocmi et al. 2024): error spans in one output, then a 0-100 score."""
from __future__ import annotations

from annotations.models import SpanJudgement
from annotations.protocols.base import RAW, AgreementSpec, Protocol


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
