"""The API token: `POST /api/auth/token/` with `username` and `password`.

Anonymous, so the most exposed endpoint: strict JSON or form bodies of at
most WORKBENCH_REQUEST_MAX_BYTES (`workbench.middleware`), throttled per
address and per account, and behind the same lock-out as the login pages
(django-axes, `workbench.security`).
"""

from __future__ import annotations

import hashlib
import unicodedata

from axes.handlers.proxy import AxesProxyHandler
from drf_spectacular.utils import extend_schema
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser
from rest_framework.throttling import SimpleRateThrottle

from workbench.parsers import StrictJSONParser
from workbench.security import client_ip, lockout_response


class LoginAddressThrottle(SimpleRateThrottle):
    """Token requests per client address (`login-address` rate)."""

    scope = "login-address"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_ip(request)}


def throttle_ident(username: str) -> str:
    """The account a token request counts against: the serializer strips the username before
    it logs in, so " w47" and "w47" are one account (the first got round the throttle), and
    look-alike spellings (fullwidth, other case) count as that account too."""
    return unicodedata.normalize("NFKC", username).strip().casefold()


class LoginAccountThrottle(SimpleRateThrottle):
    """Token requests per username, from any address (`login-account` rate)."""

    scope = "login-account"

    def get_cache_key(self, request, view) -> str | None:
        data = request.data
        username = data.get("username") if hasattr(data, "get") else None
        if not isinstance(username, str) or not username:
            return None  # refused by the serializer anyway
        digest = hashlib.sha256(throttle_ident(username).encode("utf-8", "surrogatepass")).hexdigest()
        return self.cache_format % {"scope": self.scope, "ident": digest}


class TokenObtainApi(ObtainAuthToken):
    parser_classes = (StrictJSONParser, FormParser)
    throttle_classes = (LoginAddressThrottle, LoginAccountThrottle)

    @extend_schema(operation_id="auth_token_create")
    def post(self, request, *args, **kwargs):
        """Exchange a username and password for an API token (send it as `Authorization: Token <key>`).

        Throttled per address and per account (429); after repeated failures
        the account and the address are locked out for a while.
        """
        try:
            return super().post(request, *args, **kwargs)
        except ValidationError:
            # Say "locked out" rather than "wrong password" once it is so.
            username = request.data.get("username") if hasattr(request.data, "get") else None
            if AxesProxyHandler.is_locked(request, {"username": username}):
                return lockout_response(request)
            raise
