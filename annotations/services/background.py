"""Writes of a campaign's background questions (issue 41 part 4): one annotator's answers, once,
before their first unit. The questions are the campaign's option `background`
(annotations.protocols.common_options); every answer is checked against its question."""

from __future__ import annotations

import math
from collections.abc import Mapping

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotations.models import Annotator, BackgroundAnswer, Campaign
from annotations.protocols.common_options import BACKGROUND_TEXT_MAX, CHOICE, NUMBER_Q
from annotations.selectors.background import background_questions


def _value(question: dict, raw) -> object:
    """One answer checked against its question; ValueError says why."""
    text = "" if raw is None else str(raw).strip()
    if not text:
        if question.get("required", True):
            raise ValueError("please answer this question")
        return None
    if question["type"] == CHOICE:
        if text not in question["choices"]:
            raise ValueError("choose one of the options offered")
        return text
    if question["type"] == NUMBER_Q:
        try:
            number = float(text)
        except ValueError:
            raise ValueError("must be a number") from None
        if not math.isfinite(number):
            raise ValueError("must be a number")
        low, high = question.get("min"), question.get("max")
        if (low is not None and number < low) or (high is not None and number > high):
            raise ValueError(
                f"must be between {low if low is not None else '-inf'} and {high if high is not None else 'inf'}"
            )
        return int(number) if number.is_integer() else number
    if len(text) > BACKGROUND_TEXT_MAX:
        raise ValueError(f"at most {BACKGROUND_TEXT_MAX} characters")
    return text


def background_answers_save(*, campaign: Campaign, annotator: Annotator, data: Mapping) -> BackgroundAnswer:
    """Store an annotator's answers ({question name: value as typed}); ValidationError keyed by the
    question's name. Answered once: a second call keeps the first answers."""
    questions = background_questions(campaign)
    if not questions:
        raise ValidationError({"background": "This campaign asks no background questions."})
    unknown = sorted(str(k) for k in data if k not in {q["name"] for q in questions})
    if unknown:
        raise ValidationError({"background": f"Unknown question {', '.join(unknown)}."})
    answers, problems = {}, {}
    for question in questions:
        try:
            answers[question["name"]] = _value(question, data.get(question["name"]))
        except ValueError as exc:
            problems[question["name"]] = f"{question['label']}: {exc}."
    if problems:
        raise ValidationError(problems)
    try:
        with transaction.atomic():
            found, _ = BackgroundAnswer.objects.get_or_create(
                campaign=campaign, annotator=annotator, defaults={"answers": answers}
            )
    except IntegrityError:  # a concurrent first answer won: it stands
        found = BackgroundAnswer.objects.get(campaign=campaign, annotator=annotator)
    return found
