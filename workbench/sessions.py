"""Django's database sessions, read with one prepared statement, written without waiting for the disk.

Every request of the annotate pages loads the session (and then the user, `workbench.auth`): through
the ORM, building and compiling that query cost more CPU than PostgreSQL spent answering it (issue
25's profile of the page path: 13 % of a worker's time). The table, the rows, the expiry rule and
everything else are Django's `django.contrib.sessions.backends.db`; the read differs, and the writes:

- a new key is not looked up first: Django asks whether a random 32-character key exists before
  inserting it, one statement for a collision the insert itself refuses (`must_create`: the unique
  key's IntegrityError becomes CreateError, and `create` draws another key);
- a session's write does not wait for the WAL's fsync (`rows.commit_without_flush_wait`). A crowd
  visitor's Start wrote the session twice, each commit waiting for the disk (issue 45: the arriving
  visitors' Start waited ~1 s inside gunicorn, half the database's active time in WAL flushes). A
  session lost in a crash of the database server (the last few hundred ms of writes) costs a sign-in
  or, for a join visitor, opening the study link again (the same participant, the same pending unit).
"""

from __future__ import annotations

from django.contrib.sessions.backends.base import VALID_KEY_CHARS, CreateError, UpdateError
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import DatabaseError, IntegrityError, router, transaction
from django.utils import timezone
from django.utils.crypto import get_random_string

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

    def _get_new_session_key(self) -> str:
        # No `exists` query: `create` inserts with must_create, and a taken key raises CreateError there.
        return get_random_string(32, VALID_KEY_CHARS)

    def save(self, must_create=False):
        # Django's, with the commit that does not wait for the disk (see the module's docstring).
        if self.session_key is None:
            return self.create()
        data = self._get_session(no_load=must_create)
        obj = self.create_model_instance(data)
        using = router.db_for_write(self.model, instance=obj)
        try:
            with transaction.atomic(using=using):
                rows.commit_without_flush_wait()
                obj.save(force_insert=must_create, force_update=not must_create, using=using)
        except IntegrityError:
            if must_create:
                raise CreateError from None
            raise
        except DatabaseError:
            if not must_create:
                raise UpdateError from None
            raise
