"""Reads of background answers (issue 41 part 4): whether an annotator has answered, and the
answers in aggregate for researchers (campaign page, dataset card). Never one annotator's answers
beside their name: the aggregate counts choices and summarises numbers."""

from __future__ import annotations

import statistics
from collections import Counter

from annotations import protocols
from annotations.models import BackgroundAnswer, Campaign
from annotations.protocols.common_options import CHOICE, NUMBER_Q

# Free-text answers given at least this often are listed; rarer ones are only counted (a rare answer
# could tell who gave it).
TEXT_SHOWN_FROM = 2


def background_questions(campaign: Campaign) -> list[dict]:
    """The campaign's questions (none: []). Reads the loaded row: no query."""
    return list(protocols.of(campaign).option(campaign, "background") or [])


def background_answered(*, campaign: Campaign, annotator) -> bool:
    if annotator is None:
        return False
    return BackgroundAnswer.objects.filter(campaign=campaign, annotator=annotator).exists()


def background_summary(*, campaign: Campaign, questions: list[dict]) -> dict:
    """{"n": annotators who answered, "questions": [{name, label, type, answered, ...}]}: choices
    with their counts (every choice, in the question's order); numbers' mean, median, min, max;
    free texts' common answers. One query."""
    rows = list(BackgroundAnswer.objects.filter(campaign=campaign).values_list("answers", flat=True))
    out = []
    for q in questions:
        values = [r.get(q["name"]) for r in rows if r.get(q["name"]) is not None]
        entry = {"name": q["name"], "label": q["label"], "type": q["type"], "answered": len(values)}
        if q["type"] == CHOICE:
            counts = Counter(values)
            entry["counts"] = [(choice, counts.get(choice, 0)) for choice in q["choices"]]
        elif q["type"] == NUMBER_Q:
            numbers = [float(v) for v in values]
            entry.update(
                mean=statistics.fmean(numbers) if numbers else None,
                median=statistics.median(numbers) if numbers else None,
                min=min(numbers) if numbers else None,
                max=max(numbers) if numbers else None,
            )
        else:
            counts = Counter(str(v).strip().casefold() for v in values)
            entry["common"] = [(text, n) for text, n in counts.most_common(10) if n >= TEXT_SHOWN_FROM]
        out.append(entry)
    return {"n": len(rows), "questions": out}


def background_line(entry: dict) -> str:
    """One question's aggregate in one line (campaign page and card)."""
    if entry["type"] == CHOICE:
        body = ", ".join(f"{choice} {n}" for choice, n in entry["counts"])
    elif entry["type"] == NUMBER_Q:
        if entry["mean"] is None:
            body = "no answers"
        else:
            body = f"mean {entry['mean']:.4g}, median {entry['median']:.4g}, range {entry['min']:g}-{entry['max']:g}"
    else:
        common = ", ".join(f"{text} {n}" for text, n in entry["common"])
        body = f"free text; {'common answers: ' + common if common else 'no answer given twice'}"
    return f"{entry['label']} ({entry['answered']} answered): {body}"
