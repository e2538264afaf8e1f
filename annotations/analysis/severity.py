"""The error-severity page: minED errors on one absolute scale, or a span metric's error spans
(xCOMET, the LLM judge's spans mode), with human ESA spans and missing-content markers.

Severity (seed 004, `metrics/scorers/mined.py`): metric(hypothesis) -
metric(hypothesis with only that error corrected), where the metric is the
embedded one (SemDist, 1 - BERTScore F1, WER, CER) on its lower-is-better
[0, 1] scale. Every run of minWED / minCER shares that scale, so a token's
colour is a function of its severity alone: the same severity gets the same
bin on every output and every page, and an output that needs no correction
no longer looks as bad as one that needs seven (which it did while colours
were relative to each output's worst error).

The headline figures (span agreement between annotators, metric-human
overlap) are computed over every output the list holds across all its pages,
not over the page shown.
"""

from __future__ import annotations

from collections import defaultdict

from annotations import protocols
from annotations.analysis import spans as sp
from annotations.analysis.metric_scores import extras_by_output, latest_done_runs
from annotations.analysis.pages import _filter_outputs, item_url, with_places
from annotations.analysis.severity_scale import LEGEND, char_offsets, severity_bin, word_offsets
from annotations.models import Campaign, Item, Output
from annotations.selectors.figures_cache import cached, stamp
from annotations.selectors.judgements import INCLUDED, campaign_judgements
from annotations.selectors.outputs import output_index
from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

# MQM spans may be "neutral" too (its missing-content markers among them): sorted first, not a 500.
HUMAN_SEVERITIES = ("neutral", "minor", "major", "critical")


# Runs that store error spans (`spans` [{start, end, severity}] per output, character offsets):
# xCOMET always, the LLM judge in spans mode. Their spans are drawn as the human spans are.
SPAN_METRICS = ("xcomet", "llm-judge")


def is_span_run(metric: str, signature: str) -> bool:
    """A run whose per-output JSON holds error spans (llm-judge: its spans mode only)."""
    return metric == "xcomet" or (metric == "llm-judge" and "|mode:spans|" in signature)


def _span_labels(text: str, extra: dict) -> np.ndarray:
    """A span metric's character labels (spans.py's severity codes, 0: no error)."""
    found = []
    for s in extra.get("spans") or []:
        if isinstance(s, dict) and isinstance(s.get("start"), int) and isinstance(s.get("end"), int):
            found.append((s["start"], s["end"], str(s.get("severity") or "minor")))
    return sp.char_labels(len(text), found)


def _errors(text: str, extra: dict) -> tuple[list[dict], list[dict], np.ndarray]:
    """Tokens (each with its error, if any), errors with no token (deletions), and the metric's error characters.
    A span run has no tokens: its error characters are its spans'."""
    if isinstance(extra.get("spans"), list):
        return [], [], (_span_labels(text, extra) > 0).astype(np.int8)
    offsets = word_offsets(text) if extra.get("unit", "word") == "word" else char_offsets(text)
    corrected = set(extra.get("corrected") or [])
    tokens = [{"text": text[s:e], "error": None} for s, e in offsets]
    deletions = []
    metric_chars = np.zeros(len(text), dtype=np.int8)
    for k, e in enumerate(extra.get("errors") or []):
        info = {
            "index": k,
            "type": e.get("type"),
            "ref": e.get("ref"),
            "hyp": e.get("hyp"),
            "severity": e.get("severity"),
            "bin": severity_bin(e.get("severity")),
            "corrected": k in corrected,
        }
        pos = e.get("position")
        if e.get("type") == "deletion" or e.get("hyp") is None or pos is None or pos >= len(tokens):
            deletions.append(info)
            continue
        tokens[pos]["error"] = info
        s, t = offsets[pos]
        metric_chars[s:t] = 1
    return tokens, deletions, metric_chars


def _esa_campaigns(campaign: Campaign) -> list[Campaign]:
    """This campaign if it is ESA, else every ESA campaign on the same dataset."""
    if protocols.of(campaign).has_spans:
        return [campaign]
    return [c for c in Campaign.objects.filter(dataset=campaign.dataset).order_by("pk") if protocols.of(c).has_spans]


def _human_spans(campaigns: list[Campaign], output_ids: set[int], annotators: str) -> dict[int, list[dict]]:
    """Complete ESA judgements on these outputs, by output: annotator, criterion, spans, missing-content markers.

    Quality control's exclusions apply as in every analysis reader (`annotators`: included | all)."""
    out: dict[int, list[dict]] = defaultdict(list)
    item_ids = sorted(set(Output.objects.filter(pk__in=list(output_ids)).values_list("item_id", flat=True)))
    for c in campaigns:
        for r in campaign_judgements(campaign=c, annotators=annotators, item_ids=item_ids):
            if r.output_id in output_ids:
                out[r.output_id].append(
                    {
                        "campaign": c.pk,
                        "annotator": r.annotator_id,
                        "criterion": r.criterion,
                        "spans": [(s["start"], s["end"], s["severity"]) for s in r.spans if not s.get("missing")],
                        "missing": [s["severity"] for s in r.spans if s.get("missing")],
                    }
                )
    return out


def _segments(text: str, labels: np.ndarray) -> list[dict]:
    """The text cut where the severity label changes: [{"text", "severity"}]."""
    out, start = [], 0
    names = {0.0: "", 0.5: "neutral", 1.0: "minor", 2.0: "major", 3.0: "critical"}
    for k in range(1, len(text) + 1):
        if k == len(text) or labels[k] != labels[start]:
            out.append({"text": text[start:k], "severity": names.get(float(labels[start]), "") if len(labels) else ""})
            start = k
    return out


def _listed(campaign: Campaign, run, systems: list[str] | None) -> tuple[list[int], dict, dict]:
    extras = extras_by_output(run=run)
    outputs = _filter_outputs(output_index(campaign=campaign), systems)
    ids = sorted((o for o in extras if o in outputs), key=lambda o: (outputs[o]["position"], outputs[o]["system"]))
    return ids, outputs, extras


def headline(campaign: Campaign, *, run_id: int, systems: list[str] | None = None, annotators: str = INCLUDED) -> dict:
    """Span figures over every listed output (all pages): annotator-annotator span F1 and metric-human overlap.

    Span F1 between two annotators is spans.py's character-level F1 (the
    dashboard's `spans` figure); pairs where neither marked an error have no F1
    and are not counted in the mean, as there.
    """
    esa = _esa_campaigns(campaign)

    def compute():
        run = latest_done_runs(dataset=campaign.dataset).get(pk=run_id)
        ids, _outputs, extras = _listed(campaign, run, systems)
        human = _human_spans(esa, set(ids), annotators)
        texts = dict(Output.objects.filter(pk__in=list(human)).values_list("pk", "text"))
        per_unit: dict[tuple, dict] = defaultdict(dict)
        overlaps = []
        for o, judgements in human.items():
            text = texts.get(o, "")
            labels = []
            for j in judgements:
                lab = sp.char_labels(len(text), j["spans"])
                per_unit[(j["campaign"], j["criterion"], o)][j["annotator"]] = lab
                labels.append(lab)
            _tokens, _deletions, metric_chars = _errors(text, extras.get(o) or {})
            overlap = sp.overlap(metric_chars, np.maximum.reduce(labels))
            if overlap is not None:
                overlaps.append(overlap)
        shared = {k: v for k, v in per_unit.items() if len(v) >= 2}
        f1 = sp.pairwise_f1(shared)
        n_pairs = sum(len(v) * (len(v) - 1) // 2 for v in shared.values())
        # Each campaign named with its protocol: MQM spans are not ESA spans.
        return {
            "listed": len(ids),
            "campaigns": [f"{c.name} ({protocols.of(c).label})" for c in esa],
            "annotators": annotators,
            "span_f1": {**f1, "outputs": len({k[2] for k in shared}), "all_pairs": n_pairs},
            "metric_overlap": {"mean_f1": float(np.mean(overlaps)) if overlaps else None, "outputs": len(overlaps)},
        }

    # The ESA campaigns' own stamps join the key: their new judgements change the figures too.
    return cached(
        campaign,
        "severity-headline",
        {"run": run_id, "s": systems, "a": annotators, "esa": [stamp(c) for c in esa if c.pk != campaign.pk]},
        compute,
    )


def severity_view(
    campaign: Campaign,
    *,
    run_id: int,
    systems: list[str] | None = None,
    limit: int = 50,
    offset: int = 0,
    annotators: str = INCLUDED,
) -> dict:
    """One page of outputs: each token with its minED severity and bin, the accepted corrections, the reference,
    and the human ESA spans and missing-content markers; with the headline over every listed output."""
    run = latest_done_runs(dataset=campaign.dataset).get(pk=run_id)
    ids, outputs, extras = _listed(campaign, run, systems)
    page = ids[offset : offset + limit]
    texts = dict(Output.objects.filter(pk__in=page).values_list("pk", "text"))
    refs = {}
    for item_id, text in Item.objects.filter(pk__in={outputs[o]["item"] for o in texts}).values_list(
        "pk", "references__text"
    ):
        refs.setdefault(item_id, text)
    human = _human_spans(_esa_campaigns(campaign), set(page), annotators)
    rows = []
    for o in page:
        extra = extras[o] or {}
        text = texts.get(o, "")
        tokens, deletions, metric_chars = _errors(text, extra)
        judgements = sorted(human.get(o, []), key=lambda j: (j["annotator"], j["campaign"], j["criterion"]))
        names = {a: f"A{n + 1}" for n, a in enumerate(sorted({j["annotator"] for j in judgements}))}
        labels = [sp.char_labels(len(text), j["spans"]) for j in judgements]
        overlap = sp.overlap(metric_chars, np.maximum.reduce(labels)) if labels else None
        errors = [t["error"] for t in tokens if t["error"]] + deletions
        rows.append(
            {
                "output": o,
                "item": outputs[o]["item_ext"],
                "item_id": outputs[o]["item"],
                "system": outputs[o]["system"],
                "url": item_url(outputs[o]["item"]),
                "text": text,
                "tokens": tokens,
                "missing": deletions,
                "reference": refs.get(outputs[o]["item"], ""),
                "k": extra.get("k"),
                "E": extra.get("E"),
                "reached": extra.get("reached"),
                "capped": extra.get("capped"),
                "worst_bin": max((e["bin"] for e in errors), default=None),
                "corrections": [e for e in errors if e["corrected"]],
                "human": [
                    {
                        "annotator": names[j["annotator"]],
                        "criterion": j["criterion"],
                        "segments": _segments(text, lab),
                        "missing": sorted(j["missing"], key=HUMAN_SEVERITIES.index),
                    }
                    for j, lab in zip(judgements, labels)
                ],
                "overlap": overlap,
                "metric_spans": _segments(text, _span_labels(text, extra)) if "spans" in extra else None,
            }
        )
    first = next((extras[o] for o in ids if extras[o]), None) or {}
    return {
        "run": run.pk,
        "metric": run.metric,
        "spans": is_span_run(run.metric, run.signature),
        "signature": run.signature,
        "rows": with_places(rows),
        "total": len(ids),
        "offset": offset,
        "limit": limit,
        "end": offset + len(rows),
        "embedded": first.get("metric"),
        "threshold": first.get("threshold"),
        "legend": LEGEND,
        "headline": headline(campaign, run_id=run_id, systems=systems, annotators=annotators),
    }
