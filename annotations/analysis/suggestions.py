"""ESA^AI: how the annotators used the AI-suggested spans, and whether the suggestions swayed them.

- Decisions: per criterion, how many suggestions were accepted as suggested, edited or
  deleted, and how many spans the annotators added themselves.
- Span agreement of the suggestions with the final human spans: character-level precision,
  recall and F1 (error characters, severity ignored; the human spans are the reference),
  summed over judgements (micro), for the units shown with suggestions and, separately, for
  the held-back units whose suggestions the annotators never saw.
- Automation bias (Zouhar et al. 2025): between units shown with suggestions and held-back
  units (a random share drawn when the campaign was created), the difference in mean score,
  in marked spans per judgement and in agreement with the suggestions; the scores' two-sided
  Mann-Whitney U p-value. Agreement with the suggestions much higher where they were shown
  means the annotators followed them.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from workbench.lazy import lazy_module

from annotations.models import Campaign, SpanSuggestion, SuggestionDecision
from annotations.protocols.rows import JudgementRow

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")


def _chars(spans) -> set[int]:
    out: set[int] = set()
    for start, end in spans:
        out.update(range(start, end))
    return out


def _agreement(pairs: list[tuple[set, set]]) -> dict:
    """Micro character-level precision / recall / F1 of the suggestions (first) against the
    human spans (second), over the judgements in `pairs`."""
    tp = sum(len(s & h) for s, h in pairs)
    fp = sum(len(s - h) for s, h in pairs)
    fn = sum(len(h - s) for s, h in pairs)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {
        "judgements": len(pairs),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "suggested_chars": tp + fp,
        "human_chars": tp + fn,
    }


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def suggestion_report(campaign: Campaign, rows: list[JudgementRow]) -> dict | None:
    """The figures of one criterion's rows (complete judgements, as the reader counts them)."""
    if not campaign.prefilled:
        return None
    prefill = campaign.prefill
    held = set(prefill.held_back)
    outputs = {r.output_id for r in rows}
    suggested: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for o, start, end in SpanSuggestion.objects.filter(
        campaign=campaign, output_id__in=outputs, missing=False
    ).values_list("output_id", "start", "end"):
        suggested[o].append((start, end))
    decisions = Counter(
        SuggestionDecision.objects.filter(judgement_id__in=[r.id for r in rows]).values_list("decision", flat=True)
    )
    groups: dict[str, dict[str, list]] = {"shown": defaultdict(list), "held_back": defaultdict(list)}
    for r in rows:
        g = groups["held_back" if r.output_id in held else "shown"]
        human = _chars((s["start"], s["end"]) for s in r.spans if not s.get("missing"))
        g["pairs"].append((_chars(suggested.get(r.output_id, [])), human))
        g["scores"].append(float(r.score))
        g["spans"].append(len(r.spans))
    shown, back = groups["shown"], groups["held_back"]
    out = {
        "source": {"run": prefill.run_id, "metric": prefill.metric, "signature": prefill.signature},
        "holdout": prefill.holdout,
        "held_back_outputs": len(held),
        "decisions": {d: decisions.get(d, 0) for d in ("accepted", "edited", "deleted", "added")},
        "agreement_with_suggestions": {
            "definition": "character-level precision / recall / F1 of the suggested "
            "spans against the final human spans (severity ignored), "
            "micro over judgements",
            "shown": _agreement(shown["pairs"]),
            "held_back": _agreement(back["pairs"]),
        },
        "automation_bias": None,
    }
    if shown["scores"] and back["scores"]:
        from scipy.stats import mannwhitneyu  # lazy: scipy costs each web worker ~0.5 s and ~40 MB

        a, b = out["agreement_with_suggestions"]["shown"]["f1"], out["agreement_with_suggestions"]["held_back"]["f1"]
        out["automation_bias"] = {
            "judgements": {"shown": len(shown["scores"]), "held_back": len(back["scores"])},
            "mean_score": {"shown": _mean(shown["scores"]), "held_back": _mean(back["scores"])},
            "score_difference": _mean(shown["scores"]) - _mean(back["scores"]),
            "score_mannwhitney_p": float(mannwhitneyu(shown["scores"], back["scores"], alternative="two-sided").pvalue),
            "spans_per_judgement": {"shown": _mean(shown["spans"]), "held_back": _mean(back["spans"])},
            "spans_difference": _mean(shown["spans"]) - _mean(back["spans"]),
            "f1_difference": None if a is None or b is None else a - b,
            "definition": "shown minus held back: units shown with suggestions against a random share held "
            "back without them",
        }
    return out
