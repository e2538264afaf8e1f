"""AI-prefilled error spans (ESA^AI): suggestions a span campaign starts from, and what each
annotator did with each one.

A campaign pre-filled from a done metric run that produced spans (an `llm-judge` run in spans
mode, minWED/minCED errors, NLI's omitted facts) holds the run's spans as suggestions per
output, copied when the campaign is created (the run may be deleted later; its id, metric and
signature stay as provenance). A random share of the outputs is held back: annotators judge
them without suggestions, so the analysis can measure automation bias. Annotators never learn
where the suggestions came from (no metric name, no score).
"""

from django.db import models
from django.db.models import F, Q

from annotations.models.campaigns import Campaign
from annotations.models.datasets import Output
from annotations.models.judgements import SpanJudgement

SEVERITIES = ["neutral", "minor", "major", "critical"]


class SpanPrefill(models.Model):
    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="prefill")
    run_id = models.PositiveIntegerField()
    metric = models.CharField(max_length=64)
    signature = models.TextField(blank=True, default="")
    holdout = models.FloatField(default=0.0)
    seed = models.BigIntegerField(default=0)
    # Outputs shown without suggestions (the random share held back), sorted ids.
    held_back = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(holdout__gte=0) & Q(holdout__lt=1), name="spanprefill_holdout_share")
        ]


class SpanSuggestion(models.Model):
    """One suggested span of one output: characters [start, end) of its text, or a
    missing-content marker; `position` orders an output's suggestions (the annotator's
    answer names a suggestion by it)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="span_suggestions")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="span_suggestions")
    position = models.PositiveSmallIntegerField()
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    severity = models.CharField(max_length=10)
    missing = models.BooleanField(default=False)
    category = models.CharField(max_length=200, blank=True, default="")
    # Held back: stored (the analysis compares them with the spans marked without them), never shown.
    held_back = models.BooleanField(default=False)

    class Meta:
        ordering = ["campaign", "output", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "output", "position"], name="spansuggestion_unique_position"),
            models.CheckConstraint(condition=Q(severity__in=SEVERITIES), name="spansuggestion_severity_valid"),
            models.CheckConstraint(
                condition=(
                    Q(missing=True, start__isnull=True, end__isnull=True)
                    | Q(missing=False, start__isnull=False, end__isnull=False, start__lt=F("end"))
                ),
                name="spansuggestion_offsets_or_missing",
            ),
        ]


class SuggestionDecision(models.Model):
    """What an annotator did with one suggestion in one judgement (accepted as suggested,
    edited, deleted), or a span they added themselves (no suggestion); the final span's
    extent and severity are copied (none for a deleted suggestion).

    The judgement's foreign key cascades in the database (migration): judgements of a unit
    are replaced with plain DELETEs when it is submitted again or revised."""

    class Decision(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        EDITED = "edited", "Edited"
        DELETED = "deleted", "Deleted"
        ADDED = "added", "Added"

    judgement = models.ForeignKey(
        SpanJudgement, on_delete=models.CASCADE, related_name="suggestion_decisions", db_constraint=False
    )
    suggestion = models.ForeignKey(
        SpanSuggestion, on_delete=models.CASCADE, null=True, blank=True, related_name="decisions"
    )
    decision = models.CharField(max_length=10, choices=Decision.choices)
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    severity = models.CharField(max_length=10, blank=True, default="")
    missing = models.BooleanField(default=False)

    class Meta:
        ordering = ["judgement", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision__in=["accepted", "edited", "deleted", "added"]), name="suggestiondecision_valid"
            ),
            models.CheckConstraint(
                condition=Q(decision="added", suggestion__isnull=True)
                | (~Q(decision="added") & Q(suggestion__isnull=False)),
                name="suggestiondecision_added_has_no_suggestion",
            ),
        ]
