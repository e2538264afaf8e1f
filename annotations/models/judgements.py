"""Judgements of every protocol, and the error spans of ESA judgements."""

from django.db import models
from django.db.models import F, Q

from annotations.models.base import TimeStampedModel
from annotations.models.campaigns import Annotator, Campaign
from annotations.models.datasets import Item, Output


class JudgementBase(TimeStampedModel):
    class Origin(models.TextChoices):
        BROWSER = "browser", "Collected in the workbench's pages"
        API = "api", "Submitted through the REST API"
        IMPORT = "import", "Imported"

    class Status(models.TextChoices):
        # Part of a finished unit (or imported): counts in every analysis.
        COMPLETE = "complete", "Complete"
        # Submitted one by one for a unit that is not finished yet.
        PARTIAL = "partial", "Partial (unit not finished)"
        # Partial work of an assignment that timed out or was released: kept,
        # never counted (the unit went back to the pool).
        ABANDONED = "abandoned", "Abandoned"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="%(class)ss")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="%(class)ss")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="%(class)ss")
    criterion = models.CharField(max_length=100)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    # Output ids in the order they were shown to the annotator (left to right).
    shown_order = models.JSONField(default=list, blank=True)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.BROWSER)
    # A database default too, so bulk writers (the importer's COPY) need not name it.
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.COMPLETE, db_default=Status.COMPLETE.value
    )
    # The assignment it was submitted for; null for imported judgements.
    assignment = models.ForeignKey(
        "Assignment", null=True, blank=True, on_delete=models.SET_NULL, related_name="%(class)ss"
    )

    class Meta:
        abstract = True


class RatingJudgement(JudgementBase):
    """Likert, direct assessment (0-100) or RankME magnitude for one output."""

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="ratings")
    score = models.FloatField()
    rank = models.PositiveSmallIntegerField(null=True, blank=True)
    # The campaign's scale, copied at write time so the database itself can
    # refuse a score outside it (a check constraint cannot join tables).
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "item", "id"]
        # The newest change of a campaign's judgements in one index probe: the key of the cached
        # figures (annotations.selectors.figures_cache.stamp).
        indexes = [models.Index(fields=["campaign", "updated_at"], name="rating_campaign_updated")]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "annotator", "output", "criterion"], name="rating_one_per_annotator_unit"
            ),
            models.CheckConstraint(
                condition=Q(scale_min__isnull=True) | Q(score__gte=F("scale_min")), name="rating_score_above_min"
            ),
            models.CheckConstraint(
                condition=Q(scale_max__isnull=True) | Q(score__lte=F("scale_max")), name="rating_score_below_max"
            ),
        ]


class PairwiseJudgement(JudgementBase):
    """Side-by-side preference. Stored with output_a.id < output_b.id; the
    order actually shown is in `shown_order`."""

    class Winner(models.TextChoices):
        A = "a", "A"
        B = "b", "B"
        TIE = "tie", "Tie"

    output_a = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="pairwise_as_a")
    output_b = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="pairwise_as_b")
    winner = models.CharField(max_length=3, choices=Winner.choices)

    class Meta:
        ordering = ["campaign", "item", "id"]
        # The newest change of a campaign's judgements in one index probe: the key of the cached
        # figures (annotations.selectors.figures_cache.stamp).
        indexes = [models.Index(fields=["campaign", "updated_at"], name="pairwise_campaign_updated")]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "annotator", "output_a", "output_b", "criterion"],
                name="pairwise_one_per_annotator_unit",
            ),
            models.CheckConstraint(condition=Q(output_a__lt=F("output_b")), name="pairwise_canonical_order"),
            models.CheckConstraint(condition=Q(winner__in=["a", "b", "tie"]), name="pairwise_winner_valid"),
        ]


class BestWorstJudgement(JudgementBase):
    """Best-worst scaling over a tuple of outputs of one item."""

    outputs = models.JSONField()  # output ids of the tuple, sorted
    tuple_key = models.CharField(max_length=255)  # the sorted ids joined by '-'
    best = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="bws_best")
    worst = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="bws_worst")

    class Meta:
        ordering = ["campaign", "item", "id"]
        # The newest change of a campaign's judgements in one index probe: the key of the cached
        # figures (annotations.selectors.figures_cache.stamp).
        indexes = [models.Index(fields=["campaign", "updated_at"], name="bestworst_campaign_updated")]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "annotator", "tuple_key", "criterion"], name="bws_one_per_annotator_unit"
            ),
            models.CheckConstraint(condition=~Q(best=F("worst")), name="bws_best_differs_from_worst"),
        ]


class SpanJudgement(JudgementBase):
    """Error span annotation (ESA): error spans in one output, then a 0-100 score."""

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="span_judgements")
    score = models.FloatField()
    # The criterion's scale, copied so the database can refuse scores outside it.
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "item", "id"]
        # The newest change of a campaign's judgements in one index probe: the key of the cached
        # figures (annotations.selectors.figures_cache.stamp).
        indexes = [models.Index(fields=["campaign", "updated_at"], name="span_campaign_updated")]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "annotator", "output", "criterion"], name="span_one_per_annotator_unit"
            ),
            models.CheckConstraint(
                condition=Q(scale_min__isnull=True) | Q(score__gte=F("scale_min")), name="span_score_above_min"
            ),
            models.CheckConstraint(
                condition=Q(scale_max__isnull=True) | Q(score__lte=F("scale_max")), name="span_score_below_max"
            ),
        ]


class PostEditJudgement(JudgementBase):
    """Post-editing: the annotator's edit of one output into an acceptable one (`post_edit`); `score`
    is its HTER, the TER of the output against the post-edit (annotations.protocols.post_edit),
    stored so every reader of `score` (agreement, rankings, export) takes it as it is. `rating`:
    the optional score on the campaign's scale (null when the criterion has none)."""

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="post_edits")
    post_edit = models.TextField()
    score = models.FloatField()
    rating = models.FloatField(null=True, blank=True)
    # The criterion's scale, copied so the database can refuse ratings outside it.
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "item", "id"]
        # The newest change of a campaign's judgements in one index probe: the key of the cached
        # figures (annotations.selectors.figures_cache.stamp).
        indexes = [models.Index(fields=["campaign", "updated_at"], name="postedit_campaign_updated")]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "annotator", "output", "criterion"], name="postedit_one_per_annotator_unit"
            ),
            models.CheckConstraint(condition=Q(score__gte=0), name="postedit_hter_not_negative"),
            models.CheckConstraint(
                condition=Q(rating__isnull=True) | Q(scale_min__isnull=True) | Q(rating__gte=F("scale_min")),
                name="postedit_rating_above_min",
            ),
            models.CheckConstraint(
                condition=Q(rating__isnull=True) | Q(scale_max__isnull=True) | Q(rating__lte=F("scale_max")),
                name="postedit_rating_below_max",
            ),
        ]


class ErrorSpan(models.Model):
    """One error of an ESA judgement: characters [start, end) of the output
    text (Unicode code points, end exclusive), or a "missing content" marker
    with no offsets."""

    class Severity(models.TextChoices):
        NEUTRAL = "neutral", "Neutral"  # MQM only
        MINOR = "minor", "Minor"
        MAJOR = "major", "Major"
        CRITICAL = "critical", "Critical"

    judgement = models.ForeignKey(SpanJudgement, on_delete=models.CASCADE, related_name="spans")
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    missing = models.BooleanField(default=False)
    # MQM: the error's category as a typology path, e.g. "Accuracy/Mistranslation"; "" for ESA.
    category = models.CharField(max_length=300, blank=True, default="", db_default="")
    # The annotator's free text for this span (option `span_text`); "" when none.
    note = models.TextField(blank=True, default="", db_default="")

    class Meta:
        ordering = ["judgement", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(severity__in=["neutral", "minor", "major", "critical"]), name="errorspan_severity_valid_mqm"
            ),
            models.CheckConstraint(
                condition=(
                    Q(missing=True, start__isnull=True, end__isnull=True)
                    | Q(missing=False, start__isnull=False, end__isnull=False, start__lt=F("end"))
                ),
                name="errorspan_offsets_or_missing",
            ),
        ]
