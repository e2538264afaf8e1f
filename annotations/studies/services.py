"""Writes of crowd studies: join links, and the visitors who arrive through them."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotations import rows
from annotations.models import Annotator, Campaign
from annotations.models.studies import JoinLink, JoinParticipant
from annotations.quality.services import quality_settings_update

# What a platform id may look like: Prolific ids are 24 hex digits, MTurk ids
# upper-case letters and digits; a generic id a short word. Anything else is refused
# with a message (it is stored and exported, and shown back on the join page).
ID_PATTERN = re.compile(r"^[A-Za-z0-9_.@-]{1,100}$")
CODE_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
# MTurk's hosts (production and sandbox): the only places a completion is posted to.
MTURK_HOSTS = ("www.mturk.com", "workersandbox.mturk.com")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


@dataclass(frozen=True)
class Visitor:
    """The platform ids a visitor came with (from the link's query string)."""

    platform: str = ""
    platform_id: str = ""
    study_id: str = ""
    session_id: str = ""
    submit_to: str = ""
    preview: bool = False  # MTurk's preview of a HIT: show the instructions, take no unit


def visitor_from_params(params) -> Visitor:
    """Read Prolific (PROLIFIC_PID, STUDY_ID, SESSION_ID), MTurk (workerId,
    assignmentId, hitId, turkSubmitTo) or generic (`annotator`) parameters.
    A platform id that is absent gives `platform_id == ""` (the page asks for
    one); a malformed one raises ValidationError."""

    def get(name: str) -> str:
        return str(params.get(name, "") or "").strip()

    def checked(value: str, label: str) -> str:
        if value and not ID_PATTERN.match(value):
            raise ValidationError(f"{label} must be 1 to 100 letters, digits or . _ @ - characters.")
        return value

    if get("assignmentId") or get("workerId") or get("hitId"):
        assignment = get("assignmentId")
        if assignment == MTURK_PREVIEW:
            return Visitor(platform=JoinParticipant.Platform.MTURK, preview=True)
        submit_to = get("turkSubmitTo")
        if submit_to:
            parts = urlsplit(submit_to)
            if parts.scheme != "https" or parts.hostname not in MTURK_HOSTS:
                raise ValidationError("turkSubmitTo must be MTurk's own address.")
            submit_to = f"https://{parts.hostname}"
        return Visitor(
            platform=JoinParticipant.Platform.MTURK,
            platform_id=checked(get("workerId"), "workerId"),
            study_id=checked(get("hitId"), "hitId"),
            session_id=checked(assignment, "assignmentId"),
            submit_to=submit_to,
        )
    if get("PROLIFIC_PID") or get("STUDY_ID") or get("SESSION_ID"):
        return Visitor(
            platform=JoinParticipant.Platform.PROLIFIC,
            platform_id=checked(get("PROLIFIC_PID"), "PROLIFIC_PID"),
            study_id=checked(get("STUDY_ID"), "STUDY_ID"),
            session_id=checked(get("SESSION_ID"), "SESSION_ID"),
        )
    return Visitor(
        platform=JoinParticipant.Platform.GENERIC, platform_id=checked(get("annotator"), "The participant id")
    )


def _check_completion_url(url: str) -> str:
    url = (url or "").strip()
    if not url:
        return ""
    try:
        URLValidator(schemes=["http", "https"])(url.replace("{code}", "CODE"))
    except ValidationError:
        raise ValidationError(
            {
                "completion_url": "The completion URL must be an http(s) address; it may contain "
                "{code} where the completion code goes."
            }
        ) from None
    if len(url) > JoinLink._meta.get_field("completion_url").max_length:
        raise ValidationError({"completion_url": "The completion URL is longer than 1,000 characters."})
    return url


@transaction.atomic
def join_link_create(
    *,
    campaign: Campaign,
    user=None,
    completion_url: str = "",
    max_annotators: int | None = None,
    expires_at: datetime | None = None,
    pass_code: str = "",
    fail_code: str = "",
    one_per_browser: bool = False,
) -> JoinLink:
    """A new study link for `campaign`.

    A link with a completion URL turns the campaign's completion codes on: the
    visitor is sent back to the platform with the pass or fail code (the
    link's own `pass_code` / `fail_code` when given, else the annotator's)."""
    completion_url = _check_completion_url(completion_url)
    pass_code, fail_code = (pass_code or "").strip(), (fail_code or "").strip()
    for name, value in (("pass_code", pass_code), ("fail_code", fail_code)):
        if value and not CODE_PATTERN.match(value):
            raise ValidationError({name: "A completion code is 1 to 40 letters, digits, - or _."})
    if max_annotators is not None and (
        isinstance(max_annotators, bool) or not isinstance(max_annotators, int) or max_annotators < 1
    ):
        raise ValidationError({"max_annotators": "The cap must be a whole number of annotators, at least 1."})
    if expires_at is not None:
        if timezone.is_naive(expires_at):
            raise ValidationError({"expires_at": "Give the expiry with its time zone (e.g. 2026-12-31T23:59:00Z)."})
        if expires_at <= timezone.now():
            raise ValidationError({"expires_at": "The expiry is in the past."})
    link = JoinLink(
        campaign=campaign,
        token=secrets.token_urlsafe(24),
        completion_url=completion_url,
        max_annotators=max_annotators,
        expires_at=expires_at,
        pass_code=pass_code,
        fail_code=fail_code,
        one_per_browser=bool(one_per_browser),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    link.full_clean(exclude=["campaign", "created_by"])
    link.save()
    if completion_url:
        quality_settings_update(campaign=campaign, completion_codes=True)
    return link


@transaction.atomic
def join_link_revoke(*, link: JoinLink) -> JoinLink:
    """Revoke a link: it answers 404 from now on and its visitors' sessions end."""
    if link.revoked_at is None:
        JoinLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        link.refresh_from_db(fields=["revoked_at"])
    return link


class CapReached(Exception):
    """The link has its maximum number of annotators: new visitors are refused."""


def _pseudonym(platform: str) -> str:
    # Random, never derived from the platform id: the name shows on researchers' pages.
    return f"{platform}-{secrets.token_hex(5)}"


def join_participant_enter(*, link: JoinLink, visitor: Visitor) -> JoinParticipant:
    """The participant of `visitor` in the link's campaign, created on the first visit.

    The same platform id coming back (through any link of the campaign) is the
    same participant and annotator; its session ids are updated. A new one is
    refused with CapReached when the link is full (returning ones never are)."""
    if not visitor.platform_id:
        raise ValidationError("A participant id is needed.")
    for _ in range(3):
        try:
            with transaction.atomic():
                # Its commit need not wait for the disk: the Start that enters a visitor hands out their
                # first unit next, in a commit that does wait and so flushes this one's rows with its own;
                # a crash between the two loses a participant who holds nothing yet (they re-enter).
                rows.commit_without_flush_wait()
                return _enter(link=link, visitor=visitor)
        except IntegrityError:
            continue  # the same id arriving twice at once: the other request created it, read it again
    raise ValidationError("The study is busy: try again in a moment.")


def _enter(*, link: JoinLink, visitor: Visitor) -> JoinParticipant:
    campaign = link.campaign
    same = JoinParticipant.objects.select_for_update().filter(campaign=campaign, platform_id=visitor.platform_id)
    if not link.one_per_browser:
        same = same.filter(platform=visitor.platform)
    found = same.order_by("id").first()
    if found is not None:
        changed = {
            name: getattr(visitor, name)
            for name in ("study_id", "session_id", "submit_to")
            if getattr(visitor, name) and getattr(visitor, name) != getattr(found, name)
        }
        for name, value in changed.items():
            setattr(found, name, value)
        found.save(update_fields=[*changed, "last_seen"])
        return found
    if link.max_annotators is not None:
        # The link's row lock serialises newcomers, so the cap is never overshot.
        JoinLink.objects.select_for_update().filter(pk=link.pk).first()
        if JoinParticipant.objects.filter(link=link).count() >= link.max_annotators:
            raise CapReached()
    annotator = Annotator.objects.create(
        project=campaign.dataset.project, name=_pseudonym(visitor.platform), namespace=Annotator.Namespace.IMPORT
    )
    participant = JoinParticipant(
        link=link,
        campaign=campaign,
        annotator=annotator,
        platform=visitor.platform,
        platform_id=visitor.platform_id,
        study_id=visitor.study_id,
        session_id=visitor.session_id,
        submit_to=visitor.submit_to,
    )
    participant.full_clean(exclude=["link", "campaign", "annotator"])
    participant.save()
    return participant
