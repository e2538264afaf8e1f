"""ESA^AI: a span campaign that starts from a done metric run's spans (Zouhar et al. 2025,
"AI-Assisted Human Evaluation of Machine Translation").

Where spans come from is one function per metric (SPAN_SOURCES), all turning the run's stored
per-output JSON into spans of the output text: `llm-judge` in spans mode and `xcomet` (`spans`), minWED /
minCED (`errors`: the edit errors with a severity on the embedded metric's scale) and NLI
(`omitted` facts: missing-content markers). The mechanism knows nothing of ESA beyond
`protocol.has_spans` and the campaign's severities, so any span protocol (MQM) can use it.

Annotators decide on each suggestion (accept, edit or delete) and may add spans; the unit
submit records the decisions (`decisions_record`), derived from the answer: a span that names
a suggestion and equals it is "accepted", one that names it but differs is "edited", a
suggestion no span names is "deleted", a span naming none is "added".
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable

from django.core.exceptions import ValidationError

from annotations import protocols
from annotations.analysis.severity_scale import char_offsets, severity_bin, word_offsets
from annotations.models import Campaign, Output, SpanPrefill, SpanSuggestion, SuggestionDecision
from metrics.models import MetricRun, OutputScore, RunStatus

MAX_SUGGESTIONS = 50  # per output: more would bury the text (and a prompt gone wrong)


def _severity(wanted: str | None, allowed: list[str]) -> str:
    """The campaign's severity nearest to the source's: itself when offered, else the most
    severe offered for anything above "minor", else the least severe."""
    if wanted in allowed:
        return wanted
    order = ["neutral", "minor", "major", "critical"]
    rank = order.index(wanted) if wanted in order else 1
    below = [s for s in allowed if s in order and order.index(s) <= rank]
    return below[-1] if below else allowed[0]


def judge_spans(extra: dict, text: str, allowed: list[str]) -> list[dict]:
    """`llm-judge` spans mode: `spans` [{"start", "end", "severity", "category"?}] (missing: true allowed)."""
    out = []
    for s in extra.get("spans") or []:
        if not isinstance(s, dict):
            continue
        severity = _severity(s.get("severity"), allowed)
        category = str(s.get("category") or "")[:200]
        if s.get("missing"):
            out.append({"start": None, "end": None, "severity": severity, "missing": True, "category": category})
            continue
        start, end = s.get("start"), s.get("end")
        if isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text):
            out.append({"start": start, "end": end, "severity": severity, "missing": False, "category": category})
    return out


def mined_spans(extra: dict, text: str, allowed: list[str]) -> list[dict]:
    """minWED / minCED: each error on a word (character) of the output is a span, its severity
    from the error's weight on the severity page's scale (bins 4-5, worth at least the default
    threshold 0.1 alone: major; bins 1-3: minor; bin 0, no gain when corrected: no span);
    a deletion (a word the output lacks) is a missing-content marker."""
    offsets = word_offsets(text) if extra.get("unit", "word") == "word" else char_offsets(text)
    out = []
    for e in extra.get("errors") or []:
        if not isinstance(e, dict):
            continue
        level = severity_bin(e.get("severity") if isinstance(e.get("severity"), (int, float)) else None)
        if level == 0:
            continue
        severity = _severity("major" if level >= 4 else "minor", allowed)
        pos = e.get("position")
        if e.get("type") == "deletion" or e.get("hyp") is None or not isinstance(pos, int) or pos >= len(offsets):
            out.append({"start": None, "end": None, "severity": severity, "missing": True, "category": ""})
            continue
        start, end = offsets[pos]
        out.append({"start": start, "end": end, "severity": severity, "missing": False, "category": ""})
    return out


def nli_spans(extra: dict, text: str, allowed: list[str]) -> list[dict]:
    """NLI: one missing-content marker (major) per fact of the input the output omits."""
    return [
        {"start": None, "end": None, "severity": _severity("major", allowed), "missing": True, "category": ""}
        for _fact in (extra.get("omitted") or [])
    ]


SPAN_SOURCES: dict[str, Callable[[dict, str, list[str]], list[dict]]] = {
    "llm-judge": judge_spans,
    "xcomet": judge_spans,  # the same span output: [{start, end, severity, ...}]
    "minwed": mined_spans,
    "mincer": mined_spans,
    "nli": nli_spans,
}


def _merge(spans: list[dict]) -> list[dict]:
    """Sorted, without exact duplicates; overlapping spans keep the first (longest at a start),
    as the page shows one span per character."""
    out, reach = [], -1
    for s in sorted((s for s in spans if not s["missing"]), key=lambda s: (s["start"], -s["end"])):
        if s["start"] >= reach:
            out.append(s)
            reach = s["end"]
    out += [s for s in spans if s["missing"]]  # one marker per omission (e.g. per omitted fact)
    return out[:MAX_SUGGESTIONS]


def span_runs(*, project) -> list:
    """Done runs on the project's datasets whose metric produces spans (the set-up page's choices)."""

    return list(
        MetricRun.objects.filter(dataset__project=project, status=RunStatus.DONE, metric__in=sorted(SPAN_SOURCES))
        .select_related("dataset")
        .order_by("dataset__name", "-id")[:200]
    )


def prefill_check(*, campaign_dataset, protocol: str, run_id, holdout) -> tuple:
    """The run (done, on the campaign's dataset, of a metric that produces spans) and the held-back share."""

    if not protocols.get(protocol).has_spans:
        raise ValidationError({"prefill_run": "Only span protocols (ESA, MQM) can start from suggested spans."})
    try:
        run_id = int(run_id)
    except (TypeError, ValueError):
        raise ValidationError({"prefill_run": "Give the id of a metric run."}) from None
    run = MetricRun.objects.filter(pk=run_id, dataset=campaign_dataset, status=RunStatus.DONE).first()
    if run is None:
        raise ValidationError({"prefill_run": f"No done metric run {run_id} on dataset {campaign_dataset.name!r}."})
    if run.metric not in SPAN_SOURCES:
        raise ValidationError(
            {
                "prefill_run": f"Run {run_id} ({run.metric}) produced no spans; runs of "
                f"{', '.join(sorted(SPAN_SOURCES))} do."
            }
        )
    try:
        holdout = float(holdout or 0)
    except (TypeError, ValueError):
        raise ValidationError({"prefill_holdout": "The held-back share is a number from 0 to under 1."}) from None
    if not 0 <= holdout < 1:
        raise ValidationError({"prefill_holdout": "The held-back share is a number from 0 to under 1."})
    return run, holdout


def campaign_prefill(*, campaign: Campaign, run, holdout: float) -> SpanPrefill:
    """Copy the run's spans into suggestions for the campaign's outputs; hold back a random
    share of the outputs (drawn with the campaign's seed, over outputs in the data's order)."""

    allowed = list(protocols.of(campaign).severities(campaign))
    outputs = Output.objects.filter(item__dataset=campaign.dataset)
    chosen = list(campaign.systems.values_list("pk", flat=True))
    if chosen:
        outputs = outputs.filter(system_id__in=chosen)
    outputs = list(outputs.order_by("item__position", "item__external_id", "system__name").values_list("pk", "text"))
    n_held = round(holdout * len(outputs))
    held = set(random.Random(campaign.seed).sample([pk for pk, _ in outputs], n_held)) if n_held else set()
    extras = dict(
        OutputScore.objects.filter(run=run, output_id__in=[pk for pk, _ in outputs]).values_list("output_id", "extra")
    )
    source = SPAN_SOURCES[run.metric]
    rows = []
    for pk, text in outputs:
        spans = _merge(source(extras.get(pk) or {}, text, allowed)) if isinstance(extras.get(pk), dict) else []
        rows += [
            SpanSuggestion(campaign=campaign, output_id=pk, position=k, held_back=pk in held, **s)
            for k, s in enumerate(spans)
        ]
    SpanSuggestion.objects.bulk_create(rows, batch_size=2000)
    Campaign.objects.filter(pk=campaign.pk).update(prefilled=True)
    campaign.prefilled = True
    return SpanPrefill.objects.create(
        campaign=campaign,
        run_id=run.pk,
        metric=run.metric,
        signature=run.signature,
        holdout=holdout,
        seed=campaign.seed,
        held_back=sorted(held),
    )


# ---- what annotators see and answer --------------------------------------------------------


def decisions_record(*, campaign: Campaign, judgements: list) -> None:
    """After a unit's judgements are written: one decision per shown suggestion and per added
    span. `judgements`: saved span judgements, each with `suggestion_links` (per final span,
    the suggestion's position or None) and `final_spans` set by the answer's check."""
    if not campaign.prefilled or not judgements:
        return
    # Held-back units had nothing to decide on: their spans are plain ESA spans, not "added".
    held = set(SpanPrefill.objects.filter(campaign=campaign).values_list("held_back", flat=True).first() or [])
    judgements = [j for j in judgements if j.output_id not in held]
    shown: dict[int, list[SpanSuggestion]] = defaultdict(list)
    for s in SpanSuggestion.objects.filter(
        campaign=campaign, held_back=False, output_id__in={j.output_id for j in judgements}
    ).order_by("position"):
        shown[s.output_id].append(s)
    rows = []
    D = SuggestionDecision.Decision
    for j in judgements:
        spans, links = getattr(j, "final_spans", None) or [], getattr(j, "suggestion_links", None) or []
        mine = {s.position: s for s in shown.get(j.output_id, [])}
        used = set()
        for span, link in zip(spans, links + [None] * (len(spans) - len(links))):
            suggestion = mine.get(link) if link is not None else None
            if suggestion is None:
                decision = D.ADDED
            else:
                used.add(link)
                same = (suggestion.missing, suggestion.start, suggestion.end, suggestion.severity) == (
                    span["missing"],
                    span["start"],
                    span["end"],
                    span["severity"],
                )
                decision = D.ACCEPTED if same else D.EDITED
            rows.append(
                SuggestionDecision(
                    judgement=j,
                    suggestion=suggestion,
                    decision=decision,
                    start=span["start"],
                    end=span["end"],
                    severity=span["severity"],
                    missing=span["missing"],
                )
            )
        rows += [
            SuggestionDecision(judgement=j, suggestion=s, decision=D.DELETED) for k, s in mine.items() if k not in used
        ]
    SuggestionDecision.objects.bulk_create(rows)
