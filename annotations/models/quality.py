"""Quality control of annotators: settings, control units, their answers, decisions, codes.

Listed in `annotations.models` with the others; the tables keep their names (`annotations_*`).

A control unit is an ordinary `Unit` (kind degraded / repeat / gold) planned
for one annotator, so that the pages and the API hand it out, autosave and
time it exactly like any other unit. Its outputs are *aliases*: fresh ids
drawn from the same sequence as real output ids (they never collide with an
output and look like one), mapped here to the real output they stand for and
the text to show. Nothing in a page or API response tells a control apart.

Answers to control units never go to the judgement tables (analysis and
export never see them, and a repeat does not clash with the first answer):
they are `ControlJudgement` rows. Judgements imported with a `"control"` flag
land there too.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotations.models.base import TimeStampedModel
from annotations.models.campaigns import Annotator, Assignment, Campaign, Unit
from annotations.models.datasets import Item, Output


class QualitySettings(TimeStampedModel):
    """How a campaign checks its annotators (created with defaults on first use)."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="quality_settings")
    # Shares of each annotator's batch given to degraded copies and to repeats (0 = none).
    degraded_share = models.FloatField(default=0.0)
    repeat_share = models.FloatField(default=0.0)
    # Kinds of damage drawn from (see annotations.quality.degrade) and their strength.
    degrade_kinds = models.JSONField(default=list, blank=True)
    degrade_strength = models.FloatField(default=0.3)
    # Thresholds of the exclusion rules (annotations.quality.rules.Rules as a dict).
    rules = models.JSONField(default=dict, blank=True)
    # Show a completion code at the end of every batch (crowd platforms).
    completion_codes = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(degraded_share__gte=0)
                & Q(repeat_share__gte=0)
                & Q(degraded_share__lte=0.5)
                & Q(repeat_share__lte=0.5),
                name="quality_shares_in_range",
            ),
            models.CheckConstraint(
                condition=Q(degrade_strength__gt=0) & Q(degrade_strength__lte=1), name="quality_strength_in_range"
            ),
        ]


class GoldUnit(TimeStampedModel):
    """An expected answer for some outputs of an item, set by the researcher or imported.

    Loud ones are a tutorial: shown first, and a wrong answer is sent back with
    the explanation until it is right. Silent ones are placed among the other
    units and only recorded.
    """

    class Mode(models.TextChoices):
        LOUD = "loud", "Loud (tutorial: retry with the explanation)"
        SILENT = "silent", "Silent (recorded only)"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="gold_units")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="gold_units")
    # Real output ids shown, sorted.
    outputs = models.JSONField()
    # Expected answer per criterion ("*" for all), see annotations.quality.gold.
    expected = models.JSONField()
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.SILENT)
    explanation = models.TextField(blank=True)
    # Order among the campaign's gold units (tutorials are shown in this order).
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["campaign", "position", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(mode__in=["loud", "silent"]), name="gold_mode_valid"),
        ]


class ControlUnit(TimeStampedModel):
    """What a control `Unit` of one annotator stands for."""

    class Kind(models.TextChoices):
        DEGRADED = "degraded", "Degraded copy"
        REPEAT = "repeat", "Repeat"
        GOLD = "gold", "Gold / tutorial"
        # A screen of several outputs where one is a degraded copy of another (issue 41 part 5).
        RELATIVE = "relative", "Relative attention check"

    unit = models.OneToOneField(Unit, on_delete=models.CASCADE, related_name="control")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="control_units")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="control_units")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # The regular unit copied (degraded, repeat) or the gold unit shown.
    source = models.ForeignKey(Unit, null=True, blank=True, on_delete=models.CASCADE, related_name="controls_made")
    gold = models.ForeignKey(GoldUnit, null=True, blank=True, on_delete=models.CASCADE, related_name="controls")
    # {alias id (str): {"output": real output id, "text": text shown,
    #                   "degraded": {kind, strength, seed, ...} or absent}}
    aliases = models.JSONField()
    # The annotator's batch (0-based) it was planned for.
    batch = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["campaign", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["degraded", "repeat", "gold", "relative"]), name="control_kind_valid"
            ),
        ]
        indexes = [models.Index(fields=["campaign", "annotator", "kind"], name="control_annotator_kind")]

    def real_output(self, alias: int) -> int:
        return self.aliases[str(alias)]["output"]

    @property
    def degraded_alias(self) -> int | None:
        return next((int(a) for a, v in self.aliases.items() if v.get("degraded")), None)


class ControlJudgement(TimeStampedModel):
    """One annotator's answer to a control, for one criterion.

    `answer` is kept as submitted (alias ids for controls shown in the
    workbench; real output ids for imported ones) plus, for imports, the real
    output it concerns (`output`) and the expected answer of an imported gold
    unit (`expected`). `passed` is known at once for gold; degraded and repeat
    controls are compared with the annotator's own judgements when figures are
    computed.
    """

    class Origin(models.TextChoices):
        BROWSER = "browser", "Collected in the workbench's pages"
        API = "api", "Submitted through the REST API"
        IMPORT = "import", "Imported"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="control_judgements")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="control_judgements")
    control = models.ForeignKey(ControlUnit, null=True, blank=True, on_delete=models.CASCADE, related_name="judgements")
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="control_judgements"
    )
    kind = models.CharField(max_length=10, choices=ControlUnit.Kind.choices)
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="control_judgements")
    criterion = models.CharField(max_length=100)
    answer = models.JSONField()
    output = models.ForeignKey(
        Output, null=True, blank=True, on_delete=models.CASCADE, related_name="control_judgements"
    )
    expected = models.JSONField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    # Loud gold units: the n-th try (earlier wrong tries are kept).
    attempt = models.PositiveSmallIntegerField(default=1)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.BROWSER)

    class Meta:
        ordering = ["campaign", "annotator", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["degraded", "repeat", "gold", "relative"]), name="control_judgement_kind_valid"
            ),
            models.UniqueConstraint(
                fields=["control", "criterion", "attempt"],
                condition=Q(control__isnull=False),
                name="control_judgement_once_per_try",
            ),
        ]
        indexes = [
            models.Index(fields=["campaign", "annotator"], name="control_judgement_annotator"),
            models.Index(fields=["campaign", "updated_at"], name="control_judgement_updated"),
        ]


class AnnotatorDecision(TimeStampedModel):
    """A researcher's decision to include or exclude an annotator, with the reason.

    Kept as a history: the latest row per (campaign, annotator) applies;
    `included` null hands the decision back to the rules. Never deletes data.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="annotator_decisions")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="decisions")
    included = models.BooleanField(null=True, blank=True)
    reason = models.TextField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotator_decisions"
    )

    class Meta:
        ordering = ["campaign", "annotator", "-created_at", "-id"]
        constraints = [models.CheckConstraint(condition=~Q(reason=""), name="decision_has_reason")]


class CompletionCode(TimeStampedModel):
    """The code shown at the end of an annotator's batch (see annotations.quality.codes)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="completion_codes")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="completion_codes")
    batch = models.PositiveIntegerField()
    code = models.CharField(max_length=11)
    passed = models.BooleanField()
    # The reasons of the verdict when it was issued.
    reasons = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["campaign", "annotator", "batch"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "annotator", "batch"], name="completion_code_once_per_batch"),
        ]
        indexes = [models.Index(fields=["campaign", "code"], name="completion_code_lookup")]
