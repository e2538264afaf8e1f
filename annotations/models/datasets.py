"""Projects and their members; datasets: items, references, systems and outputs."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotations.models.base import TimeStampedModel


class Project(TimeStampedModel):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="projects")

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
    # Documents (issue 41): the document the segment belongs to ("" : none) and its place in it
    # (a non-negative number, unique per document of the dataset; None: no place). A campaign's
    # `context` option shows the neighbouring segments of the same document.
    doc = models.CharField(max_length=200, blank=True, default="")
    doc_pos = models.PositiveIntegerField(null=True, blank=True)
    # Media (issue 41): {"source": {"type": "audio", "path": "..."}, "reference": {...}}, each path
    # relative to settings.WORKBENCH_MEDIA_ROOT (checked at import: annotations.services.imports.media);
    # {} when the item has none. Served by annotations.views.media to those who may see the unit.
    media = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["dataset", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="item_unique_external_id"),
            models.UniqueConstraint(
                fields=["dataset", "doc", "doc_pos"],
                condition=models.Q(doc_pos__isnull=False),
                name="item_unique_doc_pos",
            ),
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


class DatasetCount(models.Model):
    """A dataset's numbers of items, systems, outputs and references, as the project and dataset
    pages show them (issue 45: counting a million outputs took those pages' first loads 0.4-0.6 s).

    Never written by Python: the statement triggers of migration 0029 add the rows each INSERT (or
    COPY) brings and take away those each DELETE removes, in that statement's transaction, so the
    counts are those of a recount whichever path wrote (an import, the API, a script). No row: the
    dataset has nothing yet. Read by `selectors.dataset_counts`."""

    dataset = models.OneToOneField(Dataset, on_delete=models.CASCADE, primary_key=True, related_name="+")
    n_items = models.BigIntegerField(default=0)
    n_systems = models.BigIntegerField(default=0)
    n_outputs = models.BigIntegerField(default=0)
    n_references = models.BigIntegerField(default=0)
