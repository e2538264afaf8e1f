"""Authentication for the REST API, and its permission checks.

Who may see what is decided in one place, `annotations.selectors`; the checks
(`require_member`, `require_staff`, `require_owner`) live in
`annotations.access`, shared with the pages, and answer:

- anonymous requests: 401 (token) before any of this runs;
- objects of projects the user is not a member of: 404, exactly as for ids
  that do not exist, so ids of other projects leak nothing;
- members without the needed role: 403.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from rest_framework.authentication import SessionAuthentication, TokenAuthentication as DRFTokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import IsAuthenticated

from annotations import rows
from annotations.access import require_member, require_owner, require_staff
from workbench.parsers import StrictJSONParser

__all__ = ["ApiAuthMixin", "TokenAuthentication", "require_member", "require_owner", "require_staff"]


# Token rows (token and user columns) by key, with the time each expires and its user's id:
# the lookup runs on every API request, and an annotation client sends two requests a unit.
# Only tokens that exist are kept (a new token works at once). Saving or deleting a token or
# a user drops their rows in this process at once (`token_rows_on_change`); another process's
# copy lives at most WORKBENCH_TOKEN_CACHE_SECONDS (0: no cache).
_TOKEN_ROWS: dict[str, tuple[float, tuple, int]] = {}
_TOKEN_ROWS_MAX = 10_000


def token_rows_forget(*, key: str | None = None, user_id=None) -> None:
    if key is not None:
        _TOKEN_ROWS.pop(key, None)
    if user_id is not None:
        for cached, (_expires, _row, owner) in list(_TOKEN_ROWS.items()):
            if owner == user_id:
                _TOKEN_ROWS.pop(cached, None)


def token_rows_on_change(sender, instance, **kwargs) -> None:
    """post_save / post_delete of a token or a user (connected in annotations.apps)."""
    if sender._meta.label_lower == "authtoken.token":
        token_rows_forget(key=instance.pk, user_id=instance.user_id)
    else:
        token_rows_forget(user_id=instance.pk)


class TokenAuthentication(DRFTokenAuthentication):
    """DRF's token authentication, same answers, with its one query written as
    SQL (`annotations.rows`) and its row kept a few seconds (`_TOKEN_ROWS`): it runs on
    every API request."""

    def authenticate_credentials(self, key):

        User = get_user_model()
        ttl = settings.WORKBENCH_TOKEN_CACHE_SECONDS
        now = time.monotonic()
        cached = _TOKEN_ROWS.get(key) if ttl > 0 else None
        fetched = cached is None or cached[0] <= now
        if not fetched:
            row = cached[1]
        else:
            with rows.cursor() as cursor:
                cursor.execute(
                    f"SELECT {rows.columns(Token, 't')}, {rows.columns(User, 'u')} FROM {rows.table(Token)} t "
                    f"JOIN {rows.table(User)} u ON u.{rows.q(User._meta.pk.column)} = t.{rows.q('user_id')} "
                    f"WHERE t.{rows.q(Token._meta.pk.column)} = %s",
                    [key],
                )
                row = cursor.fetchone()
        if row is None:
            raise AuthenticationFailed(_("Invalid token."))
        # Fresh instances every request: threads never share a user object.
        token = rows.from_row(Token, row)
        token.user = rows.from_row(User, row, rows.width(Token))
        if fetched and ttl > 0:
            if len(_TOKEN_ROWS) >= _TOKEN_ROWS_MAX:
                _TOKEN_ROWS.clear()
            _TOKEN_ROWS[key] = (now + ttl, tuple(row), token.user.pk)
        if not token.user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)


class ApiAuthMixin:
    """Every API view: token or session authentication, login required.

    Token first, so an anonymous request is answered 401 with
    `WWW-Authenticate: Token` (session authentication alone would give 403).
    """

    authentication_classes = (TokenAuthentication, SessionAuthentication)
    permission_classes = (IsAuthenticated,)
    # Writes are JSON (uploads override this): form encoding cannot express
    # lists or null, and the schema should promise only what works.
    parser_classes = (StrictJSONParser,)
