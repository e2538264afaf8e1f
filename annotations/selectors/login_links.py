"""Reads of one-time login links."""

from __future__ import annotations

from django.utils import timezone

from annotations.models import LoginLink
from annotations.models.login_links import token_hash


def login_link_usable(*, token: str) -> LoginLink | None:
    """The unused, unexpired link of an active account behind `token`, or None."""
    return (
        LoginLink.objects.select_related("user")
        .filter(token_hash=token_hash(token), used_at__isnull=True, expires_at__gt=timezone.now(), user__is_active=True)
        .first()
    )
