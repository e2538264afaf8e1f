"""Datasets, outputs, campaigns and judgements.

Models hold data and the invariants the database can enforce; writes go
through `annotations.services`, reads through `annotations.selectors`.
"""
from django.conf import settings
from django.db import models
from django.db.models import F, Q


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Project(TimeStampedModel):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(TimeStampedModel):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        RESEARCHER = "researcher", "Researcher"
        ANNOTATOR = "annotator", "Annotator"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user"),
            models.CheckConstraint(
                condition=Q(role__in=["owner", "researcher", "annotator"]), name="membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class Dataset(TimeStampedModel):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="datasets")
    # Globally unique: the public commands name datasets without their project.
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    # Digest of the last imported file: re-importing the same file is a no-op.
    source_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Item(TimeStampedModel):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0)
    source = models.TextField(blank=True)
    # Structured input, e.g. [[subject, predicate, object], ...] for data-to-text.
    data = models.JSONField(default=list, blank=True)
    meta = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["dataset", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="item_unique_external_id"),
        ]
        # Pages of a dataset in order without sorting it. (The search's trigram
        # indexes are PostgreSQL-only: migration 0003_search_indexes.)
        indexes = [models.Index(fields=["dataset", "position", "id"], name="item_dataset_position")]

    def __str__(self) -> str:
        return self.external_id


class Reference(TimeStampedModel):
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="references")
    position = models.PositiveSmallIntegerField()
    text = models.TextField()

    class Meta:
        ordering = ["item", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "position"], name="reference_unique_position"),
        ]


class System(TimeStampedModel):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="systems")
    name = models.CharField(max_length=200)

    class Meta:
        ordering = ["dataset", "name"]
        constraints = [models.UniqueConstraint(fields=["dataset", "name"], name="system_unique_name")]

    def __str__(self) -> str:
        return self.name


class Output(TimeStampedModel):
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="outputs")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="outputs")
    text = models.TextField()

    class Meta:
        ordering = ["item", "system__name"]
        constraints = [models.UniqueConstraint(fields=["item", "system"], name="output_unique_system")]


class Campaign(TimeStampedModel):
    class Protocol(models.TextChoices):
        LIKERT = "likert", "Likert / direct assessment"
        RANKME = "rankme", "RankME (magnitude estimation)"
        PAIRWISE = "pairwise", "Side-by-side pairwise"
        BWS = "bws", "Best-worst scaling"

    RATING_PROTOCOLS = (Protocol.LIKERT, Protocol.RANKME)

    name = models.CharField(max_length=200, unique=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="campaigns")
    protocol = models.CharField(max_length=20, choices=Protocol.choices)
    criteria = models.JSONField(default=list)
    # Inclusive rating scale; both empty for unbounded magnitudes (RankME).
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)
    instructions = models.TextField(blank=True)
    redundancy = models.PositiveSmallIntegerField(default=1)
    # RankME: the fixed magnitude of the anchor output.
    anchor_value = models.FloatField(null=True, blank=True)
    # Best-worst scaling: outputs per tuple.
    tuple_size = models.PositiveSmallIntegerField(default=4)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(protocol__in=["likert", "rankme", "pairwise", "bws"]), name="campaign_protocol_valid"
            ),
            models.CheckConstraint(
                condition=Q(scale_min__isnull=True) | Q(scale_max__isnull=True) | Q(scale_min__lt=F("scale_max")),
                name="campaign_scale_ordered",
            ),
            models.CheckConstraint(condition=Q(redundancy__gte=1), name="campaign_redundancy_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def project(self) -> Project:
        return self.dataset.project


class Annotator(TimeStampedModel):
    """Someone who judges: a workbench user, or a worker id from an imported file."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="annotators")
    name = models.CharField(max_length=200)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotator_profiles"
    )

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="annotator_unique_name"),
            models.UniqueConstraint(
                fields=["project", "user"], condition=Q(user__isnull=False), name="annotator_unique_user"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Assignment(TimeStampedModel):
    """One unit of work (an item of a campaign) handed to one annotator."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)

    class Meta:
        ordering = ["campaign", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "annotator", "item"], name="assignment_unique_unit"),
        ]


class JudgementBase(TimeStampedModel):
    class Origin(models.TextChoices):
        BROWSER = "browser", "Collected in the workbench"
        IMPORT = "import", "Imported"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="%(class)ss")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="%(class)ss")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="%(class)ss")
    criterion = models.CharField(max_length=100)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    # Output ids in the order they were shown to the annotator (left to right).
    shown_order = models.JSONField(default=list, blank=True)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.BROWSER)

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
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "annotator", "tuple_key", "criterion"], name="bws_one_per_annotator_unit"
            ),
            models.CheckConstraint(condition=~Q(best=F("worst")), name="bws_best_differs_from_worst"),
        ]


class ImportJob(TimeStampedModel):
    """An uploaded file too large to import during the request, imported by a worker.

    The web process only stores the file and this row; a Celery task
    (`annotations.tasks`) runs the importer and records its progress here,
    which the import page polls.
    """

    class Kind(models.TextChoices):
        DATASET = "dataset", "Dataset"
        JUDGEMENTS = "judgements", "Judgements"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Phase(models.TextChoices):
        WAITING = "waiting", "Waiting for a worker"
        READING = "reading", "Reading and checking the file"
        WRITING = "writing", "Writing to the database"
        DONE = "done", "Done"

    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.DATASET)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="import_jobs")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    # What the importer is called with (a dataset import; a campaign for judgements).
    dataset_name = models.CharField(max_length=200, blank=True)
    campaign = models.ForeignKey(Campaign, null=True, blank=True, on_delete=models.CASCADE, related_name="import_jobs")
    fmt = models.CharField(max_length=10, blank=True)
    filename = models.CharField(max_length=255)
    file = models.FileField(upload_to="imports/%Y/%m/", max_length=500, blank=True)
    size = models.BigIntegerField()

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.WAITING)
    progress = models.FloatField(default=0.0)  # fraction of the current phase done, 0-1
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # On failure: the importer's "line N: reason" list; on success: its JSON summary.
    errors = models.JSONField(default=list, blank=True)
    result = models.JSONField(default=dict, blank=True)
    dataset = models.ForeignKey(Dataset, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "succeeded", "failed"]), name="importjob_status_valid"
            ),
            models.CheckConstraint(condition=Q(progress__gte=0) & Q(progress__lte=1), name="importjob_progress_range"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} import of {self.filename} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)
