"""Django's model backend, with the user of a session loaded by one prepared statement and kept a few seconds.

Each request with a session cookie loads its user; the ORM's query building was a measurable share
of the annotate page path's CPU (issue 25). The row is then kept by the process for
`WORKBENCH_SESSION_USER_CACHE_SECONDS`, as the API keeps a token's (`annotations.permissions`):
the page path's submit is one statement shorter. Saving or deleting the user drops the copy in
this process at once (`user_rows_on_change`, connected in `annotations.apps`), so a deactivated
account or a changed password (which ends the other sessions) counts at once there and in the
other processes once their copy expires; a logout deletes the session, which is never kept, so it
counts everywhere at once. Logins, permissions and `user_can_authenticate` are Django's own.
Listed in AUTHENTICATION_BACKENDS before Django's ModelBackend, which stays listed so that
sessions recorded with it keep working.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend as DjangoModelBackend
from django.core.exceptions import ValidationError

from annotations import rows

# User rows by primary key, with the time each copy expires.
_USER_ROWS: dict = {}
_USER_ROWS_MAX = 10_000


def user_rows_on_change(sender, instance, **kwargs) -> None:
    """post_save / post_delete of a user (connected in annotations.apps)."""
    _USER_ROWS.pop(instance.pk, None)


class ModelBackend(DjangoModelBackend):
    def get_user(self, user_id):

        User = get_user_model()
        try:
            user_id = User._meta.pk.to_python(user_id)  # as the ORM's lookup would convert it
        except ValidationError:
            return None
        ttl = settings.WORKBENCH_SESSION_USER_CACHE_SECONDS
        now = time.monotonic()
        cached = _USER_ROWS.get(user_id) if ttl > 0 else None
        if cached is not None and cached[0] > now:
            row = cached[1]
        else:
            with rows.cursor() as cursor:
                cursor.execute(
                    f"SELECT {rows.columns(User, 'u')} FROM {rows.table(User)} u "
                    f"WHERE u.{rows.q(User._meta.pk.column)} = %s",
                    [user_id],
                )
                row = cursor.fetchone()
            if row is not None and ttl > 0:  # only users that exist are kept
                if len(_USER_ROWS) >= _USER_ROWS_MAX:
                    _USER_ROWS.clear()
                _USER_ROWS[user_id] = (now + ttl, tuple(row))
        # A fresh instance every request: threads never share a user object.
        user = rows.from_row(User, row) if row is not None else None
        return user if user is not None and self.user_can_authenticate(user) else None
