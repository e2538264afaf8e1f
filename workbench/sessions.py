"""Django's database sessions, read with one prepared statement.

Every request of the annotate pages loads the session (and then the user, `workbench.auth`): through
the ORM, building and compiling that query cost more CPU than PostgreSQL spent answering it (issue
25's profile of the page path: 13 % of a worker's time). The table, the rows, the expiry rule and
everything else are Django's `django.contrib.sessions.backends.db`; only the read differs.
"""

from __future__ import annotations

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.utils import timezone

from annotations import rows


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self):
        # As the parent: the session unless missing or expired; then it has no key (a new one is made on save).

        if self.session_key is None:
            return None
        with rows.cursor() as cursor:
            cursor.execute(
                f"SELECT s.session_data FROM {rows.table(self.model)} s "
                "WHERE s.session_key = %s AND s.expire_date > %s",
                [self.session_key, timezone.now()],
            )
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return self.model(session_key=self.session_key, session_data=row[0])
