"""One-time login links: how an account made by an owner (no password) first logs in."""

import hashlib

from django.conf import settings
from django.db import models

from annotations.models.base import TimeStampedModel
from annotations.models.datasets import Project


def token_hash(token: str) -> str:
    """What the database keeps of a token. A plain SHA-256 suffices (no salt or slow hash):
    the token is 256 random bits, not a password someone chose."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class LoginLink(TimeStampedModel):
    """A link `/login/<token>/` that logs `user` in once, before `expires_at`.

    Only the SHA-256 of the token is stored: whoever reads the database (a
    backup, an admin page) cannot log in as anyone. The token itself is shown
    once, to the owner who issued it (`annotations.services.login_links`).
    """

    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="login_links")
    # The project the link was issued for (whose owner may re-issue it).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="login_links")
    # None: issued from the command line.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"login link for {self.user} ({'used' if self.used_at else 'unused'})"
