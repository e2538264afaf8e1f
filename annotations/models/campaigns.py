"""Campaigns, annotators, and the assignment engine's rows: units, enrolments, assignments."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotations.models.base import TimeStampedModel
from annotations.models.datasets import Dataset, Item, Project, System


class Campaign(TimeStampedModel):
    class Widget(models.TextChoices):
        RADIO = "radio", "Buttons, one per point of the scale"
        SLIDER = "slider", "Slider (must be moved)"
        NUMBER = "number", "Number field"

    name = models.CharField(max_length=200, unique=True)
    # What annotators and crowd workers see as the study's title (join, annotate and batch pages);
    # `name` is the researchers' handle and may say what is compared. Empty: the name is shown.
    public_title = models.CharField(max_length=200, blank=True, default="")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="campaigns")
    # A registered protocol's name (annotations.protocols.registry validates it): no choices and no
    # check constraint, so a protocol is added by registering it, without a migration.
    protocol = models.CharField(max_length=20)
    criteria = models.JSONField(default=list)
    # Inclusive rating scale; both empty for unbounded magnitudes (RankME).
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)
    instructions = models.TextField(blank=True)
    redundancy = models.PositiveSmallIntegerField(default=1)
    # The protocol's own settings ({name: value}), as its class declares them
    # (annotations.protocols.options): checked and completed with the defaults by `campaign_create`.
    options = models.JSONField(default=dict, blank=True)
    # The systems judged; none selected means all systems of the dataset.
    systems = models.ManyToManyField(System, blank=True, related_name="campaigns")
    # One entry per criterion, in the order of `criteria`: {"name", "question",
    # "scale_min", "scale_max", "widget", "min_label", "max_label"}. `criteria`
    # stays the plain list of names (public contract); scales default to the
    # campaign's scale.
    criteria_config = models.JSONField(default=list, blank=True)
    units_per_batch = models.PositiveSmallIntegerField(default=10)
    show_source = models.BooleanField(default=True)
    show_reference = models.BooleanField(default=False)
    # Minutes after which an unfinished assignment goes back to the pool.
    assignment_timeout_minutes = models.PositiveIntegerField(default=60)
    # Seed of the unit plan (grouping and order), recorded for reproducibility.
    seed = models.BigIntegerField(default=0)
    # When the units were planned; null until the first assignment (or creation).
    planned_at = models.DateTimeField(null=True, blank=True)
    # Regular units planned (positions 0 .. n_units-1), set with planned_at: the
    # domain of the annotators' walks. None for units not planned that way.
    n_units = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # A second wave (WMT's human2): the same units judged again by other annotators; its
    # agreement with the first wave is the ceiling a metric is compared to (services/waves.py).
    wave_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="waves")

    class Allocation(models.TextChoices):
        # annotations.allocation: how units are handed out.
        OVERLAP_FIRST = "overlap-first", "Overlap first: complete started units to k before opening new ones"
        SPREAD = "spread", "Spread: each annotator walks their own random order of the units"
        ADAPTIVE = "adaptive", "Adaptive: after a cold start, only units whose system pairs are still undecided"

    class StoppedBy(models.TextChoices):
        NOT_STOPPED = "", "Not stopped"
        RESEARCHER = "researcher", "A researcher"
        ADAPTIVE = "adaptive", "Adaptive allocation's stopping rule"

    allocation = models.CharField(
        max_length=20,
        choices=Allocation.choices,
        default=Allocation.OVERLAP_FIRST,
        db_default=Allocation.OVERLAP_FIRST.value,
    )
    # Adaptive: the knobs of annotations.allocation.adaptive.AdaptiveParams, all filled in.
    allocation_params = models.JSONField(default=dict, blank=True)
    # Adaptive: the last verdict ({"verdict": ..., "checks": n, "at_judgements": n, "checked_at": iso}),
    # recomputed every `check_every` judgements (annotations.allocation.services).
    allocation_state = models.JSONField(default=dict, blank=True)
    # Adaptive: units completed (counted at each submit, to know when the next check is due).
    n_judged = models.PositiveIntegerField(default=0, editable=False)
    # A stopped campaign opens no new units: a researcher's stop hands out nothing more; adaptive's rule
    # lets the units already started reach k.
    stopped_at = models.DateTimeField(null=True, blank=True)
    stopped_by = models.CharField(max_length=20, choices=StoppedBy.choices, default="", blank=True)
    stop_reason = models.TextField(blank=True, default="")
    # Planning on a worker (campaigns above WORKBENCH_CAMPAIGN_PLAN_ASYNC_UNITS units,
    # annotations.services.units): "queued", "running" or "failed" until it ends ("" once
    # planned, and for campaigns planned in the request), with units written so far of the total.
    plan_status = models.CharField(max_length=10, blank=True, default="", editable=False)
    plan_done = models.PositiveIntegerField(default=0, editable=False)
    plan_total = models.PositiveIntegerField(null=True, blank=True, editable=False)
    plan_error = models.TextField(blank=True, default="", editable=False)
    # Span protocols: the outputs come with AI-suggested spans (annotations.models.prefill.SpanPrefill);
    # a flag so the unit submit knows without a query.
    prefilled = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scale_min__isnull=True) | Q(scale_max__isnull=True) | Q(scale_min__lt=F("scale_max")),
                name="campaign_scale_ordered",
            ),
            models.CheckConstraint(condition=Q(redundancy__gte=1), name="campaign_redundancy_positive"),
            models.CheckConstraint(
                condition=Q(allocation__in=["overlap-first", "spread", "adaptive"]), name="campaign_allocation_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def annotator_title(self) -> str:
        """The title annotators see: the public title, else the campaign's name."""
        return self.public_title or self.name

    @property
    def project(self) -> Project:
        return self.dataset.project

    def criterion_config(self, name: str) -> dict:
        """The configuration of one criterion, with the campaign's defaults filled in.

        Default widget: buttons for a whole-number scale of at most 11 points,
        a slider for other bounded scales, a number field for unbounded ones.
        """
        config = {
            "name": name,
            "question": "",
            "scale_min": self.scale_min,
            "scale_max": self.scale_max,
            "widget": "",
            "min_label": "",
            "max_label": "",
        }
        for entry in self.criteria_config or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                config.update({k: v for k, v in entry.items() if v is not None or k in ("scale_min", "scale_max")})
                break
        low, high = config["scale_min"], config["scale_max"]
        if not config["widget"]:
            if low is None or high is None:
                config["widget"] = self.Widget.NUMBER
            elif float(low).is_integer() and float(high).is_integer() and high - low <= 10:
                config["widget"] = self.Widget.RADIO
            else:
                config["widget"] = self.Widget.SLIDER
        return config

    def criteria_configs(self) -> list[dict]:
        return [self.criterion_config(name) for name in self.criteria]

    def criterion_scale(self, name: str) -> tuple[float | None, float | None]:
        config = self.criterion_config(name)
        return config.get("scale_min"), config.get("scale_max")


class Annotator(TimeStampedModel):
    """Someone who judges: a workbench account, or a worker id from an imported file.

    The two live in separate namespaces: an imported worker called "annA" is
    never the account annA, unless an import maps it to that account
    explicitly (then its judgements are the account's).
    """

    class Namespace(models.TextChoices):
        ACCOUNT = "account", "Workbench account"
        IMPORT = "import", "Imported worker id"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="annotators")
    name = models.CharField(max_length=200)
    namespace = models.CharField(
        max_length=10, choices=Namespace.choices, default=Namespace.IMPORT, db_default=Namespace.IMPORT.value
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotator_profiles"
    )

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "namespace", "name"], name="annotator_unique_name_in_namespace"),
            models.CheckConstraint(
                condition=Q(namespace="account") | Q(user__isnull=True), name="annotator_import_has_no_account"
            ),
            models.UniqueConstraint(
                fields=["project", "user"], condition=Q(user__isnull=False), name="annotator_unique_user"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Unit(TimeStampedModel):
    """One planned unit of work of a campaign: the outputs shown together on one screen.

    Likert / direct assessment and ESA: one output; RankME: 3-5 outputs of an
    item; pairwise: a planned pair; best-worst: a tuple of a balanced design.
    Units are planned once per campaign (bulk-created), so handing one out is
    a cheap locked pick. Each is judged by exactly `redundancy` different
    annotators: `n_taken` counts its live (pending or done) assignments and
    the database refuses more than `redundancy`.
    """

    class Kind(models.TextChoices):
        REGULAR = "regular", "Regular"
        # Quality control (annotations.quality): units planned for one annotator
        # that look the same as regular ones; see ControlUnit.
        DEGRADED = "degraded", "Control: degraded copy"
        REPEAT = "repeat", "Control: repeat"
        GOLD = "gold", "Control: gold / tutorial"
        RELATIVE = "relative", "Control: relative attention check"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="units")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="units")
    # Output ids of the unit, sorted; the order shown is chosen per assignment.
    outputs = models.JSONField()
    # System ids of those outputs, in the same order (for counterbalancing and progress).
    systems = models.JSONField(default=list)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.REGULAR)
    expected = models.JSONField(null=True, blank=True)
    # Planned order (shuffled with the campaign seed).
    position = models.PositiveIntegerField()
    # The campaign's k, copied so that the database can check the counters.
    redundancy = models.PositiveSmallIntegerField()
    n_taken = models.PositiveSmallIntegerField(default=0)
    n_done = models.PositiveSmallIntegerField(default=0)
    # Whether the unit may be opened (handed out while nobody has it): false once adaptive allocation
    # decided every system pair in it, or the campaign stopped. Started units are completed to k regardless.
    wanted = models.BooleanField(default=True, db_default=True)

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "position"], name="unit_unique_position"),
            models.CheckConstraint(condition=Q(n_taken__lte=F("redundancy")), name="unit_at_most_k_assignments"),
            models.CheckConstraint(condition=Q(n_done__lte=F("n_taken")), name="unit_done_within_taken"),
        ]
        indexes = [
            models.Index(fields=["campaign", "id"], condition=Q(n_taken__lt=F("redundancy")), name="unit_open_slots"),
            # Overlap-first and adaptive picks (annotations.services.assignments): started units short of k,
            # then fresh units, each in the campaign's planned order.
            models.Index(
                fields=["campaign", "position"],
                name="unit_started_by_position",
                condition=Q(n_taken__gt=0, n_taken__lt=F("redundancy"), kind="regular"),
            ),
            models.Index(
                fields=["campaign", "position"],
                name="unit_fresh_by_position",
                condition=Q(n_taken=0, kind="regular", wanted=True),
            ),
        ]


class Enrolment(TimeStampedModel):
    """An annotator's state in one campaign: the seed of their unit order,
    how many units they were given, and how often each system was shown in
    each position (for counterbalancing). Locked for every request of that
    annotator in that campaign, so one annotator's requests run one at a time."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="enrolments")
    annotator = models.ForeignKey("Annotator", on_delete=models.CASCADE, related_name="enrolments")
    seed = models.BigIntegerField()
    n_assigned = models.PositiveIntegerField(default=0)
    n_done = models.PositiveIntegerField(default=0)
    # The next step of the annotator's walk over the campaign's units
    # (annotations.services.walk): the steps before it were handed out or passed.
    walk_step = models.PositiveIntegerField(default=0)
    # {system id: [times shown in position 0, 1, ...]}
    position_counts = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "annotator"], name="enrolment_unique_annotator"),
        ]


class Assignment(TimeStampedModel):
    """One unit of a campaign handed to one annotator."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        # Not finished within the campaign's timeout: back to the pool.
        EXPIRED = "expired", "Abandoned (timed out)"
        # Given back by the annotator (skipped): back to the pool.
        RELEASED = "released", "Released"

    LIVE = (Status.PENDING, Status.DONE)

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    # Null only for assignments made before units existed (migration 0002).
    unit = models.ForeignKey(Unit, null=True, blank=True, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # This annotator's n-th unit in the campaign (0-based), in the order of their seed.
    seq = models.PositiveIntegerField(default=0)
    # Output ids in the order the server decided to show them.
    shown_order = models.JSONField(default=list, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Time on the unit, measured on the server (annotations.services.assignment_work, `assignment_time_ms`):
    # `time_spent_ms` is the total once done; while the unit is open, `active_since` is when it was last
    # handed out or resumed (null: not being worked on) and `server_time_ms` the milliseconds of the
    # earlier stretches (before a release, a timeout, a reload). `client_time_ms` is what the page or
    # API client reported, kept only when plausible (no more than the server's figure).
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    active_since = models.DateTimeField(null=True, blank=True)
    server_time_ms = models.PositiveIntegerField(default=0)
    client_time_ms = models.PositiveIntegerField(null=True, blank=True)
    # Milliseconds of the unit's audio the page played (its player's count, issue 41); null: none
    # reported (no audio, or an API client).
    listened_ms = models.PositiveIntegerField(null=True, blank=True)
    # The half-finished unit, saved by the page while the annotator works.
    draft = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["campaign", "id"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "annotator"], name="assignment_unique_unit_annotator"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "done", "expired", "released"]), name="assignment_status_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["campaign", "expires_at"], condition=Q(status="pending"), name="assignment_pending"),
            models.Index(fields=["annotator", "campaign", "status"], name="assignment_annotator_status"),
            # The newest hand-out or change of a campaign's assignments (the progress figures' cache key).
            models.Index(fields=["campaign", "updated_at"], name="assignment_campaign_updated"),
        ]
