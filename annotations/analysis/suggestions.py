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

from array import array
from collections import Counter, defaultdict

from annotations.models import Campaign, SpanSuggestion, SuggestionDecision
from annotations.protocols.rows import JudgementRow
from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")


def _chars(spans) -> set[int]:
    out: set[int] = set()
    for start, end in spans:
        out.update(range(start, end))
    return out


def _agreement(tally: dict) -> dict:
    """Micro character-level precision / recall / F1 of the suggestions against the human spans,
    from the judgements' summed counts (tp: characters both marked, fp: suggested only, fn: human only)."""
    tp, fp, fn = tally["tp"], tally["fp"], tally["fn"]
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {
        "judgements": tally["judgements"],
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "suggested_chars": tp + fp,
        "human_chars": tp + fn,
    }


def _mean(values) -> float | None:
    return float(np.mean(values)) if len(values) else None


class SuggestionTally:
    """The figures of one criterion's rows (complete judgements, as the reader counts them), fed a
    chunk at a time: each judgement leaves its character counts, score and span count (issue 46)."""

    def __init__(self, campaign: Campaign):
        self.campaign = campaign
        self.held = set(campaign.prefill.held_back)
        self.decisions: Counter = Counter()
        self.groups = {
            g: {"judgements": 0, "tp": 0, "fp": 0, "fn": 0, "scores": array("d"), "spans": array("d")}
            for g in ("shown", "held_back")
        }

    def add(self, rows: list[JudgementRow]) -> None:
        suggested: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for o, start, end in SpanSuggestion.objects.filter(
            campaign=self.campaign, output_id__in={r.output_id for r in rows}, missing=False
        ).values_list("output_id", "start", "end"):
            suggested[o].append((start, end))
        self.decisions.update(
            SuggestionDecision.objects.filter(judgement_id__in=[r.id for r in rows]).values_list("decision", flat=True)
        )
        for r in rows:
            g = self.groups["held_back" if r.output_id in self.held else "shown"]
            machine = _chars(suggested.get(r.output_id, []))
            human = _chars((s["start"], s["end"]) for s in r.spans if not s.get("missing"))
            g["judgements"] += 1
            g["tp"] += len(machine & human)
            g["fp"] += len(machine - human)
            g["fn"] += len(human - machine)
            g["scores"].append(float(r.score))
            g["spans"].append(len(r.spans))

    def figures(self) -> dict:
        prefill = self.campaign.prefill
        shown, back = self.groups["shown"], self.groups["held_back"]
        out = {
            "source": {"run": prefill.run_id, "metric": prefill.metric, "signature": prefill.signature},
            "holdout": prefill.holdout,
            "held_back_outputs": len(self.held),
            "decisions": {d: self.decisions.get(d, 0) for d in ("accepted", "edited", "deleted", "added")},
            "agreement_with_suggestions": {
                "definition": "character-level precision / recall / F1 of the suggested "
                "spans against the final human spans (severity ignored), "
                "micro over judgements",
                "shown": _agreement(shown),
                "held_back": _agreement(back),
            },
            "automation_bias": None,
        }
        if shown["scores"] and back["scores"]:
            from scipy.stats import mannwhitneyu  # lazy: scipy costs each web worker ~0.5 s and ~40 MB

            a = out["agreement_with_suggestions"]["shown"]["f1"]
            b = out["agreement_with_suggestions"]["held_back"]["f1"]
            scores = {g: np.frombuffer(self.groups[g]["scores"]) for g in self.groups}
            spans = {g: np.frombuffer(self.groups[g]["spans"]) for g in self.groups}
            out["automation_bias"] = {
                "judgements": {"shown": len(scores["shown"]), "held_back": len(scores["held_back"])},
                "mean_score": {"shown": _mean(scores["shown"]), "held_back": _mean(scores["held_back"])},
                "score_difference": _mean(scores["shown"]) - _mean(scores["held_back"]),
                "score_mannwhitney_p": float(
                    mannwhitneyu(scores["shown"], scores["held_back"], alternative="two-sided").pvalue
                ),
                "spans_per_judgement": {"shown": _mean(spans["shown"]), "held_back": _mean(spans["held_back"])},
                "spans_difference": _mean(spans["shown"]) - _mean(spans["held_back"]),
                "f1_difference": None if a is None or b is None else a - b,
                "definition": "shown minus held back: units shown with suggestions against a random share held "
                "back without them",
            }
        return out


def suggestion_report(campaign: Campaign, rows: list[JudgementRow]) -> dict | None:
    """The figures of one criterion's rows (complete judgements, as the reader counts them)."""
    if not campaign.prefilled:
        return None
    tally = SuggestionTally(campaign)
    tally.add(rows)
    return tally.figures()
