"""Reads of crowd studies: links, their state, their visitors, where a finished visitor goes."""

from __future__ import annotations

from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from django.db.models import Count, QuerySet
from django.utils import timezone

from annotations.models import Assignment, Campaign
from annotations.models.quality import QualitySettings
from annotations.models.studies import JoinLink, JoinParticipant


def join_link_list(*, campaign: Campaign) -> QuerySet[JoinLink]:
    return JoinLink.objects.filter(campaign=campaign).annotate(n_participants=Count("participants"))


def join_link_active(*, token: str) -> JoinLink | None:
    """The link of `token` if it can be joined now (not revoked, not expired), else None."""
    link = JoinLink.objects.select_related("campaign__dataset__project").filter(token=token).first()
    if link is None or link.revoked_at is not None:
        return None
    if link.expires_at is not None and link.expires_at <= timezone.now():
        return None
    return link


def join_link_state(link: JoinLink) -> str:
    if link.revoked_at is not None:
        return "revoked"
    if link.expires_at is not None and link.expires_at <= timezone.now():
        return "expired"
    return "active"


def join_link_is_full(*, link: JoinLink) -> bool:
    return link.max_annotators is not None and JoinParticipant.objects.filter(link=link).count() >= link.max_annotators


def participant_of(
    *, campaign: Campaign, platform: str, platform_id: str, any_platform: bool = False
) -> JoinParticipant | None:
    """The participant of a platform id; with `any_platform`, whichever parameter brought it
    (a link's `one_per_browser` guard: the same id as PROLIFIC_PID and workerId is one person)."""
    found = JoinParticipant.objects.filter(campaign=campaign, platform_id=platform_id)
    if not any_platform:
        found = found.filter(platform=platform)
    return found.order_by("id").first()


def completion_redirect_url(*, link: JoinLink, code: str | None) -> str:
    """The link's completion URL with the code: in place of "{code}", else as `cc=<code>`
    (Prolific's parameter). Without a code, the URL as configured."""
    url = link.completion_url
    if not url or not code:
        return url.replace("{code}", "") if url else ""
    if "{code}" in url:
        return url.replace("{code}", quote(code, safe=""))
    parts = urlsplit(url)
    query = f"{parts.query}&{urlencode({'cc': code})}" if parts.query else urlencode({"cc": code})
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def completion_value(*, link: JoinLink, code) -> str | None:
    """What the platform gets back: the link's study-wide pass / fail code when it has
    one for the verdict, else the annotator's own code (None: no code issued)."""
    if code is None:
        return None
    fixed = link.pass_code if code.passed else link.fail_code
    return fixed or code.code


def platform_ids_of(*, campaign: Campaign) -> dict[int, str]:
    """Annotator id -> platform id of the campaign's join visitors (export with --real-annotator-ids only)."""
    return dict(JoinParticipant.objects.filter(campaign=campaign).values_list("annotator_id", "platform_id"))


def join_visit_finished(*, campaign: Campaign, annotator, enrolment, code) -> bool:
    """Whether a join visitor's work is over: nothing pending, and their batch's code issued
    (campaigns with codes) or some units done (campaigns without; a visitor who did
    nothing is sent back to the landing page)."""

    if Assignment.objects.filter(campaign=campaign, annotator=annotator, status=Assignment.Status.PENDING).exists():
        return False
    if code is not None:
        return True
    if QualitySettings.objects.filter(campaign=campaign, completion_codes=True).exists():
        return False
    return enrolment is not None and enrolment.n_done > 0


def platform_counts(*, campaign: Campaign) -> dict[str, int]:
    """How many join-link visitors came from each platform (its label), for the dataset card:
    counts only, never the ids."""
    labels = dict(JoinParticipant.Platform.choices)
    found: dict[str, int] = {}
    for platform in JoinParticipant.objects.filter(campaign=campaign).values_list("platform", flat=True):
        label = labels.get(platform, platform)
        found[label] = found.get(label, 0) + 1
    return found
