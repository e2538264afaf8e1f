"""MQM error annotation (Freitag et al. 2021, as in WMT): error spans in one output, each with a
category from the campaign's typology and a severity; the output's score is the weighted MQM
score, computed from the spans (never given), as mt-metrics-eval's score_mqm.py computes it.

ESA's close relative: the same judgement model, spans, page machinery and span agreement; what
differs is the category of each span, the severities (neutral too), no score slider, and the
score, which is minus the sum of the spans' weights (`annotations.protocols.mqm_scoring`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from annotations.protocols import mqm_scoring as mq
from annotations.protocols.base import RAW, AgreementSpec
from annotations.protocols.errors import AnswerError
from annotations.protocols.esa import Esa
from annotations.protocols.imports import IMPORT_COMMON_OPTIONAL
from annotations.protocols.mqm_scoring import flat
from annotations.protocols.options import JSON, STRING, STRINGS, Option, OptionError, OptionsInvalid
from annotations.protocols.rows import JudgementRow


def _typology_clean(tree) -> list[dict]:
    try:
        return mq.typology_check(tree)
    except mq.TypologyError as exc:
        raise OptionError(f"typology {exc}") from None


def _weights_clean(text: str) -> str:
    try:
        return mq.weights_text(text)
    except mq.TypologyError as exc:
        raise OptionError(str(exc)) from None


class Mqm(Esa):
    name = "mqm"
    label = "MQM error annotation"
    guide = "tutorials/mqm-wmt/"
    # The score is the MQM score (<= 0 with non-negative weights): agreement compares it as a number.
    agreement = AgreementSpec(level="interval", variant=RAW, unit="output", value="MQM score")
    has_scale = False
    # Spans carry a typology category: the analysis offers the errors-by-category breakdown.
    error_categories = True
    default_scale = None
    options = (
        Option(
            "severities",
            STRINGS,
            list(mq.DEFAULT_SEVERITIES),
            "Error severities",
            choices=mq.SEVERITIES,
            flag="severities",
            help="The severities annotators may give an error, from neutral, minor, major, critical "
            "(default neutral, minor, major; critical needs a weight).",
        ),
        Option(
            "typology",
            JSON,
            mq.typology_check(None),
            "MQM error typology",
            check=_typology_clean,
            flag="typology",
            title="Error categories",
            help='A list of categories {"name", "key"?, "description"?, "children"?}; the default is the MQM '
            "core typology of WMT.",
            schema_extra={"type": "array", "items": {"type": "object", "required": ["name"]}},
            summary=lambda tree: ", ".join(mq.category_paths(tree)),
        ),
        Option(
            "mqm_weights",
            STRING,
            mq.DEFAULT_WEIGHTS,
            "MQM weights",
            check=_weights_clean,
            flag="mqm-weights",
            help="severity[/category[/subcategory]]:weight entries; the most specific match counts "
            "(mt-metrics-eval's score_mqm.py).",
        ),
    )
    # ESA's AI-suggested spans carry no category: not offered on MQM's set-up page (as before).
    extra_setup_fields = ()
    template = "annotate/protocols/mqm.html"
    # ESA's span marker (js/span_marker.js, inherited `scripts_first`) with MQM's questions.
    script = "js/protocols/mqm.js"
    shortcuts = "annotate/protocols/mqm_keys.html"
    span_keys = frozenset({"start", "end", "severity", "missing", "category", "suggestion", "note"})

    # ---- campaign settings -------------------------------------------------------------------

    def options_relate(self, options: dict) -> None:
        weights = mq.weights_parse(options["mqm_weights"])
        for severity in options["severities"]:
            if mq.needs_weight(weights, severity):
                raise OptionsInvalid(
                    [
                        f"options.mqm_weights: no weight for the severity {severity!r}: score_mqm.py "
                        f"would count its errors 0; add e.g. {severity.capitalize()}:10, or do not "
                        f"offer {severity}"
                    ]
                )

    def client_settings(self, campaign) -> dict:
        return {"typology": self.typology(campaign)}

    def typology(self, campaign) -> list[dict]:
        return self.option(campaign, "typology")

    def weights_text(self, campaign) -> str:
        return self.option(campaign, "mqm_weights")

    def weights(self, campaign) -> dict[str, float]:
        return mq.weights_parse(self.weights_text(campaign))

    def simulated_categories(self, campaign) -> list[str] | None:
        return mq.leaf_paths(self.typology(campaign))

    # A document's penalty (analysis.documents): the sum of its segments' penalties, each segment's the
    # mean over its raters (minus score_mqm.py's segment score), as WMT reports document-level MQM.
    document_total_name = "penalty"

    def document_total(self, segment_scores: list[float]) -> float | None:
        return -sum(segment_scores) + 0.0

    def score_of(self, campaign, spans: Iterable[Mapping]) -> float:
        """One rater's MQM score of an output from their (checked) spans."""
        return mq.judgement_score(self.weights(campaign), ((s["severity"], s.get("category") or "") for s in spans))

    # ---- validation of one answer ---------------------------------------------------------------
    # A score in the answer (the REST API's shape, an exported file) is accepted and replaced by
    # the one computed from the spans: the MQM score is never taken from outside.

    def check_value(self, answer, *, campaign, criterion, unit_outputs, texts) -> dict:
        out = {}
        if "output" in answer or unit_outputs is not None:
            out["output"] = self.check_output(answer.get("output"), unit_outputs)
        text = (texts or {}).get(out.get("output", answer.get("output")))
        out["spans"] = self.check_spans(answer.get("spans"), campaign=campaign, text=text)
        out["score"] = self.score_of(campaign, out["spans"])
        return out

    def check_span_extra(self, index: int, span: Mapping, *, campaign, cache: dict) -> dict:
        """The span's category: a path of the campaign's typology (any case; stored as the
        typology spells it)."""
        if "lookup" not in cache:
            cache["lookup"] = mq.category_lookup(self.typology(campaign))
        category = span.get("category")
        if not isinstance(category, str) or not category.strip():
            raise AnswerError("span_category_missing", "spans", index=index)
        found = cache["lookup"].get(mq.category_key(category))
        if found is None:
            raise AnswerError("span_category", "spans", index=index, value=category)
        return {"category": found}

    # ---- export -------------------------------------------------------------------------------
    stat_keys = ("n", "mean", "sd", "consensus", "neutral", "minor", "major", "critical", "missing")
    stat_counts = frozenset({"n", "neutral", "minor", "major", "critical", "missing"})

    def card_extra(self, config: dict, fmt) -> list[str]:
        return [
            "- MQM score: minus the sum of the errors' weights (the MQM weights above; most specific match, "
            "as mt-metrics-eval's score_mqm.py), averaged over raters"
        ]

    # A quality-control line's score, like an answer's, is computed from its spans.
    file_answer_optional = frozenset({"spans", "score"})

    # ---- WMT's MQM TSV -----------------------------------------------------------------------------
    import_formats = ("jsonl", "mqm-tsv")
    export_file = "judgements.mqm.tsv"
    export_file_header = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity")

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
    ) -> list[list[str]]:
        """One row per span (its place in the target marked <v>...</v>; a missing-content span
        unmarked), or one No-error row. The item is `seg_id`; `doc` / `doc_id` are the item's meta
        "doc" and "doc_id" when it has both, else the item id and 1, so score_mqm.py's
        contiguous-documents check passes."""

        meta = meta if isinstance(meta, dict) else {}
        doc, doc_id = (str(meta["doc"]), str(meta["doc_id"])) if "doc" in meta and "doc_id" in meta else (item, "1")
        head = [flat(system), flat(doc), flat(doc_id), flat(item), flat(annotator), flat(source or "")]
        target = flat(text or "")
        if not row.spans:
            return [head + [target, "No-error", "No-error"]]
        out = []
        for span in row.spans:
            marked = (
                target
                if span.get("missing")
                else (
                    target[: span["start"]]
                    + "<v>"
                    + target[span["start"] : span["end"]]
                    + "</v>"
                    + target[span["end"] :]
                )
            )
            out.append(head + [marked, span.get("category") or "", span["severity"].capitalize()])
        return out

    # ---- import -----------------------------------------------------------------------------------
    import_keys = frozenset({"item", "system", "annotator", "criterion"})
    import_optional_keys = frozenset({"spans", "score"}) | IMPORT_COMMON_OPTIONAL
