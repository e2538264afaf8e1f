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

from django.utils.translation import gettext_lazy as _
from rest_framework.authentication import SessionAuthentication
from rest_framework.authentication import TokenAuthentication as DRFTokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import IsAuthenticated

from annotations.access import require_member, require_owner, require_staff
from workbench.parsers import StrictJSONParser

__all__ = ["ApiAuthMixin", "TokenAuthentication", "require_member", "require_owner", "require_staff"]


class TokenAuthentication(DRFTokenAuthentication):
    """DRF's token authentication, same answers, with its one query written as
    SQL (`annotations.rows`): it runs on every API request."""

    def authenticate_credentials(self, key):
        from django.contrib.auth import get_user_model
        from rest_framework.authtoken.models import Token

        from annotations import rows

        User = get_user_model()
        with rows.cursor() as cursor:
            cursor.execute(
                f"SELECT {rows.columns(Token, 't')}, {rows.columns(User, 'u')} FROM {rows.table(Token)} t "
                f"JOIN {rows.table(User)} u ON u.{rows.q(User._meta.pk.column)} = t.{rows.q('user_id')} "
                f"WHERE t.{rows.q(Token._meta.pk.column)} = %s", [key])
            row = cursor.fetchone()
        if row is None:
            raise AuthenticationFailed(_("Invalid token."))
        token = rows.from_row(Token, row)
        token.user = rows.from_row(User, row, rows.width(Token))
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
