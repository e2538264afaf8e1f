"""Error span annotation (ESA, Kocmi et al. 2024): error spans in one output, then a 0-100 score."""
from __future__ import annotations

from collections.abc import Mapping

from annotations.models import SpanJudgement
from annotations.protocols.base import RAW, AgreementSpec, AnswerError, Protocol


class Esa(Protocol):
    name = "esa"
    label = "Error span annotation (ESA)"
    model = SpanJudgement
    fields = (("output_id", "output_id"), ("score", "score"))
    kind = "esa"
    has_spans = True
    agreement = AgreementSpec(level="interval", variant=RAW, unit="output", value="0-100 score")
    template = "annotate/protocols/esa.html"
    script = "js/protocols/esa.js"

    # ==== validation of one answer ====

    answer_keys = frozenset({"output", "score", "spans"})
    DEFAULT_SEVERITIES = ("minor", "major")
    MAX_SPANS = 200

    def severities(self, campaign) -> list[str]:
        return list(campaign.severities or self.DEFAULT_SEVERITIES)

    def check_span_offsets(self, index: int, start, end, text: str | None) -> None:
        """Character offsets (Unicode code points, end exclusive) inside the output's text
        (only 0 <= start < end when the text is unknown, e.g. a degraded copy's)."""
        for name, value in (("start", start), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise AnswerError("span_offset_type", "spans", index=index, name=name)
        if text is None and not 0 <= start < end:
            raise AnswerError("span_order", "spans", index=index, start=start, end=end)
        if text is not None and not 0 <= start < end <= len(text):
            raise AnswerError("span_range", "spans", index=index, length=len(text), start=start, end=end)

    def check_spans(self, spans, *, campaign, text: str | None) -> list[dict]:
        """`[{"start", "end", "severity"} | {"missing": true, "severity"}]`, cleaned."""
        if spans is None:
            return []
        if not isinstance(spans, list):
            raise AnswerError("spans_list", "spans")
        if len(spans) > self.MAX_SPANS:
            raise AnswerError("spans_many", "spans", limit=self.MAX_SPANS)
        allowed = self.severities(campaign)
        cleaned = []
        for index, span in enumerate(spans, start=1):
            if not isinstance(span, Mapping):
                raise AnswerError("span_object", "spans", index=index)
            unknown = set(span) - {"start", "end", "severity", "missing"}
            if unknown:
                raise AnswerError("span_keys", "spans", index=index, keys=", ".join(sorted(map(str, unknown))))
            severity = span.get("severity")
            if severity not in allowed:
                raise AnswerError("span_severity", "spans", index=index, allowed=", ".join(allowed), value=severity)
            missing = span.get("missing", False)
            if not isinstance(missing, bool):
                raise AnswerError("span_missing_flag", "spans", index=index)
            if missing:
                if span.get("start") is not None or span.get("end") is not None:
                    raise AnswerError("span_missing_offsets", "spans", index=index)
                cleaned.append({"start": None, "end": None, "severity": severity, "missing": True})
                continue
            self.check_span_offsets(index, span.get("start"), span.get("end"), text)
            cleaned.append({"start": span["start"], "end": span["end"], "severity": severity, "missing": False})
        return cleaned

    def check_value(self, answer, *, campaign, criterion, unit_outputs, texts) -> dict:
        out = super().check_value(answer, campaign=campaign, criterion=criterion, unit_outputs=unit_outputs,
                                  texts=texts)
        text = (texts or {}).get(out.get("output", answer.get("output")))
        out["spans"] = self.check_spans(answer.get("spans"), campaign=campaign, text=text)
        return out
