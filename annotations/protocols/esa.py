"""Error span annotation (ESA, Kocmi et al. 2024): error spans in one output, then a 0-100 score."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

from annotations.models import Campaign, ErrorSpan, SpanJudgement, SpanSuggestion
from annotations.protocols.base import RAW, AgreementSpec, Protocol
from annotations.protocols.errors import AnswerError
from annotations.protocols.imports import IMPORT_COMMON_COLUMNS, IMPORT_COMMON_OPTIONAL
from annotations.protocols.options import STRINGS, Option
from annotations.protocols.rows import JudgementRow

# MQM-style span weights (google/wmt-mqm-human-evaluation): more severe spans weigh more.
SPAN_WEIGHTS = {"minor": 1, "major": 5, "critical": 10}


def spans_weight(spans) -> float:
    return sum(SPAN_WEIGHTS.get(s.get("severity"), 1) for s in spans or [])


def spans_key(spans) -> tuple:
    """Spans in a comparable form (re-importing the same spans is a no-op)."""
    return tuple(
        sorted((s["missing"], s["start"] or 0, s["end"] or 0, s["severity"], s.get("category") or "") for s in spans)
    )


def span_record(span) -> dict:
    """One error span (an ErrorSpan or a dict) as every answer, draft and control record holds it:
    offsets (None for missing content), severity, the missing flag, the category when it has one
    (MQM) and the suggestion it keeps when it names one (ESA^AI). The one place a span's keys are
    listed, so none of them is dropped on one path."""
    get = span.get if isinstance(span, Mapping) else (lambda key: getattr(span, key, None))
    missing = bool(get("missing"))
    out = {
        "start": None if missing else get("start"),
        "end": None if missing else get("end"),
        "severity": get("severity"),
        "missing": missing,
    }
    if get("category"):
        out["category"] = get("category")
    if get("suggestion") is not None:
        out["suggestion"] = get("suggestion")
    if get("note"):
        out["note"] = get("note")
    return out


def suggestion_links(judgement, spans: list[dict]) -> None:
    """ESA^AI: each stored span that kept or edited a suggestion names it again (`suggestion`: its
    position), as the answer that stored it did, so a revision starts where the unit was left."""
    links: dict[tuple, list[int]] = {}
    for d in judgement.suggestion_decisions.all():
        if d.suggestion is not None and d.decision in ("accepted", "edited"):
            links.setdefault((d.missing, d.start, d.end, d.severity), []).append(d.suggestion.position)
    for span in spans:
        named = links.get((bool(span.get("missing")), span.get("start"), span.get("end"), span["severity"]))
        if named:
            span["suggestion"] = named.pop(0)


class Esa(Protocol):
    name = "esa"
    label = "Error span annotation (ESA)"
    guide = "tutorials/first-study/#an-esa-campaign-instead"
    model = SpanJudgement
    fields = (("output_id", "output_id"), ("score", "score"))
    has_spans = True
    file_answer_keys = frozenset({"system", "score", "spans"})
    gold_expected_keys = frozenset({"min", "max", "spans", "missing"})
    agreement = AgreementSpec(level="interval", variant=RAW, unit="output", value="0-100 score")
    default_scale = (0.0, 100.0)
    options = (
        Option(
            "severities",
            STRINGS,
            ["minor", "major"],
            "Error severities",
            choices=("minor", "major", "critical"),
            help="The severities annotators may give a span, from minor, major, critical (default minor, major).",
            flag="severities",
        ),
    )
    # The keys a span may have (MQM adds "category", checked by `check_span_extra`).
    # `suggestion`: the suggested span (ESA^AI, annotations.services.prefill) a span keeps or edits.
    span_keys = frozenset({"start", "end", "severity", "missing", "suggestion", "note"})
    api_path = "/api/judgements/spans/"
    extra_setup_fields = ("prefill_run", "prefill_holdout")
    template = "annotate/protocols/esa.html"
    script = "js/protocols/esa.js"
    scripts_first = ("js/span_marker.js",)
    shortcuts = "annotate/protocols/esa_keys.html"
    # Whole documents on one screen (context=document): a card per segment; MQM and cESA inherit it.
    documents = True

    # ---- export -------------------------------------------------------------------------------
    stat_keys = ("n", "mean", "sd", "consensus", "minor", "major", "critical", "missing")
    stat_counts = frozenset({"n", "minor", "major", "critical", "missing"})
    export_extra = ("spans",)

    def output_stats(
        self, rows: Iterable[JudgementRow], *, output_ids: list[int], criteria: list[str], scales: dict[str, tuple]
    ) -> dict[int, dict[str, dict]]:
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

    def card_extra(self, config: dict, fmt) -> list[str]:
        lines = []
        prefill = config.get("prefill")
        if prefill:
            lines.append(
                f"- AI-suggested spans (ESA^AI): from {prefill['metric']} run {prefill['run']} "
                f"(signature {prefill['signature'] or 'none'}); annotators accepted, edited or deleted "
                f"each and were not told the source; {prefill['held_back_outputs']} output(s) "
                f"(share {prefill['holdout']}) shown without suggestions"
            )
        return lines

    # ---- one answer, converted ------------------------------------------------------------------

    def judgement_row(self, campaign, base, answer, order) -> tuple:
        row, _ = super().judgement_row(campaign, base, answer, order)
        if campaign.prefilled:
            # ESA^AI: which suggestion each span keeps or edits (decisions_record after the insert).
            row.final_spans, row.suggestion_links = answer.get("spans") or [], answer.get("suggestion_links") or []
        return row, answer.get("spans")

    def spans_of(self, judgement) -> list[dict]:
        return [span_record(s) for s in sorted(judgement.spans.all(), key=lambda s: s.pk)]

    def stored_answer(self, judgement, *, order, campaign) -> dict:
        answer = {**super().stored_answer(judgement, order=order, campaign=campaign), "spans": self.spans_of(judgement)}
        if campaign.prefilled:
            suggestion_links(judgement, answer["spans"])
        return answer

    def control_submission(self, criterion, record, order) -> list[dict]:
        spans = record.get("spans") or {}
        return [
            {**answer, "spans": [span_record(s) for s in spans.get(str(answer["output"]), [])]}
            for answer in super().control_submission(criterion, record, order)
        ]

    def draft_answer(self, answer, draft, *, index, page_id) -> None:
        # Each output's spans under its page id (cESA shows several); `spans`: the first's (ESA).
        super().draft_answer(answer, draft, index=index, page_id=page_id)
        mine = [span_record(s) for s in answer.get("spans") or []]
        draft.setdefault("spans_by_output", {}).setdefault(str(page_id(answer["output"])), mine)
        draft["spans"] = draft.get("spans") or mine

    def gold_problems(self, spec, answer) -> list[str]:
        """The score's range, and the expected spans: each overlapped by a marked span."""
        problems = super().gold_problems(spec, answer)
        marked = [s for s in answer.get("spans") or [] if not s.get("missing")]
        for expected in spec.get("spans", []):
            if not any(s["start"] < expected["end"] and expected["start"] < s["end"] for s in marked):
                problems.append(f"an error at characters {expected['start']}-{expected['end']} was not marked")
        if spec.get("missing") and not any(s.get("missing") for s in answer.get("spans") or []):
            problems.append("missing content was expected to be marked")
        return problems

    # ---- simulated annotators --------------------------------------------------------------------

    def simulated_categories(self, campaign) -> list[str] | None:
        """The span categories a simulated annotator picks from (MQM: the typology's leaves)."""
        return None

    def simulated_extra(self, campaign, output, value, rng) -> dict:
        """Error spans on whole words: more and worse where the impression is poor; with categories
        (MQM), each span gets one, and a poor output may also miss content."""
        words = [(m.start(), m.end()) for m in re.finditer(r"\w+", output["text"])]
        spans = []
        if words and value < 75:
            start, end = rng.choice(words)
            spans.append({"start": start, "end": end, "severity": "minor"})
        if len(words) > 1 and value < 45:
            start, end = rng.choice([w for w in words if w[0] != spans[0]["start"]])
            spans.append({"start": start, "end": end, "severity": "major"})
        categories = self.simulated_categories(campaign)
        if categories:
            if value < 30:
                spans.append({"missing": True, "severity": "major"})
            for span in spans:
                span["category"] = rng.choice(categories)
        return {"spans": spans}

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
        passed = (
            score < original_score
            or (score == original_score and spans_weight(spans) > original_weight)
            or (floor is not None and score == original_score == floor)
        )
        return score, original_score, floor, passed

    def control_answer(self, answer: dict, judgement, spans) -> None:
        super().control_answer(answer, judgement, spans)
        answer.setdefault("spans", {})[str(judgement.output_id)] = [
            {k: v for k, v in span_record(span).items() if v is not None} for span in spans or []
        ]

    # ==== validation of one answer ====

    answer_keys = frozenset({"output", "score", "spans"})
    MAX_SPANS = 200

    def severities(self, campaign) -> list[str]:
        return list(self.option(campaign, "severities"))

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
        cleaned, cache = [], {}
        for index, span in enumerate(spans, start=1):
            if not isinstance(span, Mapping):
                raise AnswerError("span_object", "spans", index=index)
            # `suggestion`: the suggested span (ESA^AI, annotations.services.prefill) this one keeps or edits.
            unknown = set(span) - self.span_keys
            if unknown:
                raise AnswerError("span_keys", "spans", index=index, keys=", ".join(sorted(map(str, unknown))))
            severity = span.get("severity")
            if severity not in allowed:
                raise AnswerError("span_severity", "spans", index=index, allowed=", ".join(allowed), value=severity)
            missing = span.get("missing", False)
            if not isinstance(missing, bool):
                raise AnswerError("span_missing_flag", "spans", index=index)
            extra = self.check_span_extra(index, span, campaign=campaign, cache=cache)
            if span.get("note"):
                extra["note"] = self.check_span_note(index, span["note"], campaign=campaign)
            if missing:
                if span.get("start") is not None or span.get("end") is not None:
                    raise AnswerError("span_missing_offsets", "spans", index=index)
                cleaned.append({"start": None, "end": None, "severity": severity, "missing": True, **extra})
                continue
            self.check_span_offsets(index, span.get("start"), span.get("end"), text)
            cleaned.append(
                {"start": span["start"], "end": span["end"], "severity": severity, "missing": False, **extra}
            )
        return cleaned

    def check_span_note(self, index: int, note, *, campaign) -> str:
        """A span's free text (option `span_text`): text, within the campaign's length limit."""
        if not self.option(campaign, "span_text"):
            raise AnswerError("span_note_off", "spans", index=index)
        limit = self.option(campaign, "text_max_length")
        if not isinstance(note, str) or len(note) > limit:
            raise AnswerError("span_note", "spans", index=index, limit=limit)
        return note.strip()

    def check_span_extra(self, index: int, span: Mapping, *, campaign, cache: dict) -> dict:
        """What a protocol adds to a span beyond offsets and severity (MQM: its category)."""
        return {}

    def check_value(self, answer, *, campaign, criterion, unit_outputs, texts) -> dict:
        out = super().check_value(
            answer, campaign=campaign, criterion=criterion, unit_outputs=unit_outputs, texts=texts
        )
        output = out.get("output", answer.get("output"))
        text = (texts or {}).get(output)
        out["spans"] = self.check_spans(answer.get("spans"), campaign=campaign, text=text)
        out["suggestion_links"] = suggestion_links_check(answer.get("spans"), campaign=campaign, output_id=output)
        return out

    # ---- import -----------------------------------------------------------------------------------
    # A rating's line with optional spans instead of a rank; the value compared is the score and the spans.
    import_optional_keys = frozenset({"spans"}) | IMPORT_COMMON_OPTIONAL

    def import_value(self, record) -> tuple:
        return (record.score, spans_key(record.spans))

    def stored_for_import(self, campaign, names: dict[int, str]) -> dict[tuple, tuple]:
        judged = list(
            self.model.objects.filter(campaign=campaign, annotator_id__in=list(names)).values_list(
                "id", "annotator_id", "output_id", "criterion", "score"
            )
        )
        spans = defaultdict(list)
        for row in ErrorSpan.objects.filter(judgement_id__in=[j[0] for j in judged]).values(
            "judgement_id", "start", "end", "severity", "missing", "category"
        ):
            spans[row.pop("judgement_id")].append(row)
        return {(names[a], o, c): (s, spans_key(spans[pk])) for pk, a, o, c, s in judged}

    def import_write(self, campaign, records: list, annotators: dict[str, int]) -> None:
        # bulk_create rather than COPY: the spans need the judgements' ids.
        judgements = self.model.objects.bulk_create(
            [
                self.model(
                    **dict(zip(IMPORT_COMMON_COLUMNS, self.import_common(campaign, r, annotators))),
                    output_id=r.output_id,
                    score=r.score,
                    scale_min=campaign.criterion_scale(r.criterion)[0],
                    scale_max=campaign.criterion_scale(r.criterion)[1],
                )
                for r in records
            ],
            batch_size=2000,
        )
        ErrorSpan.objects.bulk_create(
            [ErrorSpan(judgement=j, **span) for j, r in zip(judgements, records) for span in r.spans],
            batch_size=2000,
        )


def suggestion_links_check(spans, *, campaign: Campaign, output_id) -> list:
    """The `suggestion` each answered span names (a position among the output's shown
    suggestions) or None; each suggestion named at most once. Reads the database only when a
    span names one."""
    named = [s.get("suggestion") if isinstance(s, dict) else None for s in spans or []]
    if all(n is None for n in named):
        return named
    positions = (
        set(
            SpanSuggestion.objects.filter(campaign=campaign, output_id=output_id, held_back=False).values_list(
                "position", flat=True
            )
        )
        if campaign.prefilled
        else set()
    )
    seen = set()
    for index, n in enumerate(named, start=1):
        if n is None:
            continue
        if isinstance(n, bool) or not isinstance(n, int) or n not in positions:
            raise AnswerError("span_suggestion", "spans", index=index)
        if n in seen:
            raise AnswerError("span_suggestion_twice", "spans", index=index)
        seen.add(n)
    return named
