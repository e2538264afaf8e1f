"""Join links and the visitors who came through them."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotations.models.campaigns import Annotator, Campaign


class JoinLink(models.Model):
    """A shareable study link for one campaign (revocable, optional cap and expiry)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="join_links")
    # secrets.token_urlsafe(24): 192 bits, unguessable; the link's only secret.
    token = models.CharField(max_length=64, unique=True)
    # Where the visitor goes at the end of the batch; "{code}" is replaced by the
    # completion code, else `cc=<code>` is appended (Prolific's parameter).
    completion_url = models.URLField(max_length=1000, blank=True, default="")
    # The study-wide codes a platform expects (Prolific's completion codes), sent instead of the
    # annotator's own code when set: the pass one when quality control passes them, else the fail one.
    pass_code = models.CharField(max_length=40, blank=True, default="")
    fail_code = models.CharField(max_length=40, blank=True, default="")
    max_annotators = models.PositiveIntegerField(null=True, blank=True)
    # The guard against one person joining as several participants: a browser already in the study
    # (its session cookie) may not join as another participant, and a platform id is one
    # participant whichever parameter carries it (PROLIFIC_PID, workerId, annotator).
    one_per_browser = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_annotators__isnull=True) | Q(max_annotators__gte=1), name="joinlink_cap_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"join link {self.pk} of {self.campaign_id}"


class JoinParticipant(models.Model):
    """One visitor of a campaign's join links, by platform id: the same id coming back
    (another browser, another link of the same campaign) is the same annotator."""

    class Platform(models.TextChoices):
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Amazon Mechanical Turk"
        GENERIC = "generic", "Other (annotator parameter)"

    link = models.ForeignKey(JoinLink, on_delete=models.CASCADE, related_name="participants")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="join_participants")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="join_participants")
    platform = models.CharField(max_length=10, choices=Platform.choices)
    # PROLIFIC_PID, MTurk workerId or the generic `annotator` value: personal data,
    # exported only with --real-annotator-ids.
    platform_id = models.CharField(max_length=100)
    study_id = models.CharField(max_length=100, blank=True, default="")  # Prolific STUDY_ID, MTurk hitId
    session_id = models.CharField(max_length=100, blank=True, default="")  # Prolific SESSION_ID, MTurk assignmentId
    # MTurk's turkSubmitTo (checked to be MTurk's own host): where the completion is posted.
    submit_to = models.URLField(max_length=300, blank=True, default="")
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["first_seen", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "platform", "platform_id"], name="joinparticipant_unique_platform_id"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.platform} participant {self.pk}"
