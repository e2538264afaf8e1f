"""One-time login links: issue (the token shown once, its hash stored) and redeem (once, before expiry)."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from annotations.models import LoginLink, Membership, Project
from annotations.models.login_links import token_hash

# 32 random bytes: guessing is hopeless, and failed attempts are rate limited per address anyway.
TOKEN_BYTES = 32


def login_link_url(*, token: str, base_url: str | None = None) -> str:
    """The absolute link to hand out; `base_url` is the request's host in pages, else WORKBENCH_BASE_URL."""
    base = (base_url or settings.WORKBENCH_BASE_URL).rstrip("/")
    return base + reverse("login-link", args=[token])


def login_link_refusal(*, user: AbstractBaseUser, project: Project, issuer: AbstractBaseUser | None) -> str | None:
    """Why `issuer` may not get a link that logs in as `user`, or None when they may.

    A login link is a way into the account, so an owner may issue one only for
    accounts nobody else answers for: no password (made by an owner, never
    given one), not staff, and a member of no project but those the issuer
    owns. Otherwise an owner could add an administrator, or another project's
    annotator, and log in as them. The command line (issuer None) is the
    server's administrator and only needs the first two rules.
    """
    if not user.is_active:
        return "the account is deactivated"
    if user.is_staff or user.is_superuser:
        return "staff accounts log in with their password"
    if user.has_usable_password():
        return "the account has a password (its owner logs in with it)"
    if issuer is not None:
        owned = Membership.objects.filter(user=issuer, role=Membership.Role.OWNER).values("project")
        others = Membership.objects.filter(user=user).exclude(project=project).exclude(project__in=owned)
        if others.exists():
            return "the account belongs to a project you do not own"
    return None


@transaction.atomic
def login_link_create(
    *, user: AbstractBaseUser, project: Project, created_by: AbstractBaseUser | None = None, days: int | None = None
) -> tuple[LoginLink, str]:
    """A new link for `user` and its token (returned once, never stored). Earlier unused links of
    the same user for the project stop working: the newest link is the one handed out."""
    reason = login_link_refusal(user=user, project=project, issuer=created_by)
    if reason is not None:
        raise ValidationError({"user": f"No login link for {user.get_username()}: {reason}."})
    now = timezone.now()
    LoginLink.objects.filter(user=user, project=project, used_at__isnull=True, expires_at__gt=now).update(
        expires_at=now
    )
    token = secrets.token_urlsafe(TOKEN_BYTES)
    days = settings.WORKBENCH_LOGIN_LINK_DAYS if days is None else days
    link = LoginLink(
        token_hash=token_hash(token),
        user=user,
        project=project,
        created_by=created_by,
        expires_at=now + timedelta(days=days),
    )
    link.full_clean(exclude=["token_hash"])
    link.save()
    return link, token


@transaction.atomic
def login_link_redeem(*, token: str) -> AbstractBaseUser | None:
    """The account the link logs in, spending the link; None when it is unknown, used or expired.

    The row is locked and marked used in one transaction, so two clicks at
    the same moment log in once."""
    link = (
        LoginLink.objects.select_for_update()
        .select_related("user")
        .filter(token_hash=token_hash(token), used_at__isnull=True, expires_at__gt=timezone.now())
        .first()
    )
    if link is None or not link.user.is_active:
        return None
    link.used_at = timezone.now()
    link.save(update_fields=["used_at", "updated_at"])
    return link.user
