"""Django's model backend, with the user of a session loaded by one prepared statement.

Each request with a session cookie loads its user; the ORM's query building was a measurable share
of the annotate page path's CPU (issue 25). Logins, permissions and `user_can_authenticate` are
Django's own. Listed in AUTHENTICATION_BACKENDS before Django's ModelBackend, which stays listed so
that sessions recorded with it keep working.
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend as DjangoModelBackend
from django.core.exceptions import ValidationError


class ModelBackend(DjangoModelBackend):
    def get_user(self, user_id):
        from annotations import rows

        User = get_user_model()
        try:
            user_id = User._meta.pk.to_python(user_id)  # as the ORM's lookup would convert it
        except ValidationError:
            return None
        with rows.cursor() as cursor:
            cursor.execute(f"SELECT {rows.columns(User, 'u')} FROM {rows.table(User)} u "
                           f"WHERE u.{rows.q(User._meta.pk.column)} = %s", [user_id])
            row = cursor.fetchone()
        user = rows.from_row(User, row) if row is not None else None
        return user if user is not None and self.user_can_authenticate(user) else None
