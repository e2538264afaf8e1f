"""What annotators say beside their judgements (issue 41): answers to a campaign's background
questions (once per annotator), and per unit a free-text field and special answers."""

from django.db import models

from annotations.models.base import TimeStampedModel
from annotations.models.campaigns import Annotator, Assignment, Campaign
from annotations.models.datasets import Item


class BackgroundAnswer(TimeStampedModel):
    """One annotator's answers to the campaign's background questions (`options.background`):
    {question name: value}, asked once before the first unit."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="background_answers")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="background_answers")
    answers = models.JSONField(default=dict)

    class Meta:
        ordering = ["campaign", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "annotator"], name="background_once_per_annotator"),
        ]


class UnitNote(TimeStampedModel):
    """Beside the judgements of one unit: the annotator's free text for the unit (criterion ""), or a
    special answer given for one criterion instead of a judgement (`special`, e.g. "[missing]"; no
    judgement row is stored for that criterion, so scores and agreement never see it)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="unit_notes")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="unit_notes")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="unit_notes")
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="unit_notes"
    )
    # The unit's output ids, sorted; `unit_key` joins them with '-' (one note per unit and criterion).
    outputs = models.JSONField(default=list)
    unit_key = models.CharField(max_length=255)
    criterion = models.CharField(max_length=100, blank=True, default="")
    special = models.CharField(max_length=40, blank=True, default="")
    text = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["campaign", "item", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "annotator", "unit_key", "criterion"], name="unitnote_one_per_unit_criterion"
            ),
        ]
