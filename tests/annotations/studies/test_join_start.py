"""A crowd visitor's Start (the join link's POST: participant, annotator, session and enrolment created,
the first unit handed out) stays lean, and only the hand-out's commit waits for the disk (issue 45 part 3).

Arriving visitors' Starts waited ~1 s inside gunicorn (bench/README.md, "Capacity at a crowd's pace")
where the in-process Start costs ~10-20 ms of CPU: `bench/bench_arrivals.py` found the database's
active time half in WAL flushes, and a Start made four commits, each waiting for one: the participant's,
an empty session's insert (Django's `cycle_key`, after asking whether its new key existed), the hand-out's
and the session's update with the binding. Now a visitor without a stored session gets theirs in one
insert when the response is saved, and only the hand-out's commit waits for the WAL's fsync.
"""

import pytest
from django.conf import settings
from django.contrib.sessions.backends.base import VALID_KEY_CHARS
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.crypto import get_random_string

from annotations.models import Assignment
from annotations.studies.session import SESSION_KEY
from tests.annotations.studies.test_join_links import _start, campaign, link  # noqa: F401 (fixtures)
from workbench.sessions import SessionStore

pytestmark = pytest.mark.django_db

CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK")
RELAXED = "SET LOCAL synchronous_commit TO OFF"
# A new visitor's Start, transaction control and the relaxed commits' SET LOCAL not counted: the link, the
# participant locked (none yet), the annotator and participant inserted; the campaign, the annotator
# and the enrolment read; the enrolment's lock (none yet), the second-wave check, its insert, its lock,
# the pick, the assignment's insert; the session's insert. 17 before (the new key's `exists`, the
# session's update, and the participant looked up before the lock, which only a link with a cap or the
# one-per-browser guard needs). The bound leaves no slack: a statement added to this path shows up here.
START = 14


def _statements(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if not q["sql"].startswith((*CONTROL, RELAXED))]


def _first_start(link) -> None:
    """Another visitor's Start first: the engine expires timed-out units once a minute per campaign and
    process (`EXPIRE_EVERY_S`), in a transaction of its own on the first hand-out, not on every Start."""
    assert _start(Client(), link, {"PROLIFIC_PID": "first-visitor"}).status_code == 302


def test_a_new_visitors_start_takes_fourteen_statements(client, campaign, link):
    _first_start(link)
    with CaptureQueriesContext(connection) as captured:
        answer = _start(client, link)
    assert answer.status_code == 302, answer.content
    assert len(_statements(captured)) <= START, "\n".join(_statements(captured))
    assert Assignment.objects.filter(campaign=campaign, status="pending").count() == 2  # theirs and the first's


@pytest.mark.django_db(transaction=True)
def test_only_the_hand_outs_commit_waits_for_the_disk(client, campaign, link):
    """As in production (no test transaction around the request): the participant's and the session's
    transactions commit without waiting for the WAL's fsync; the hand-out's (the assignment) waits."""
    _first_start(link)
    with CaptureQueriesContext(connection) as captured:
        answer = _start(client, link)
    assert answer.status_code == 302, answer.content
    transactions, current = [], None
    for sql in (q["sql"] for q in captured.captured_queries):
        if sql == "BEGIN":
            current = []
        elif sql == "COMMIT":
            transactions.append(current)
            current = None
        elif current is not None:
            current.append(sql)
    waiting = [t for t in transactions if RELAXED not in t]
    assert len(transactions) == 3, transactions
    assert len(waiting) == 1, waiting
    assert any('INSERT INTO "annotations_assignment"' in sql for sql in waiting[0]), waiting[0]
    assert all(sql != RELAXED for sql in waiting[0])
    stored = Session.objects.get(session_key=client.cookies[settings.SESSION_COOKIE_NAME].value)
    assert stored.get_decoded()[SESSION_KEY]["campaign"] == campaign.pk


def test_a_key_planted_in_the_browser_never_carries_the_binding(client, campaign, link):
    """Session fixation: whether the browser's key is stored (a session of its own) or unknown to the
    store, the Start binds a fresh key, and a stored one is gone."""
    planted = SessionStore()
    planted["anything"] = 1
    planted.create()
    client.cookies[settings.SESSION_COOKIE_NAME] = planted.session_key
    assert _start(client, link).status_code == 302
    fresh = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert fresh != planted.session_key
    assert not Session.objects.filter(session_key=planted.session_key).exists()
    assert Session.objects.get(session_key=fresh).get_decoded()[SESSION_KEY]["campaign"] == campaign.pk

    unknown = get_random_string(32, VALID_KEY_CHARS)
    other = Client()
    other.cookies[settings.SESSION_COOKIE_NAME] = unknown
    assert _start(other, link, {"PROLIFIC_PID": "another-visitor"}).status_code == 302
    fresh = other.cookies[settings.SESSION_COOKIE_NAME].value
    assert fresh != unknown and not Session.objects.filter(session_key=unknown).exists()
    assert Session.objects.get(session_key=fresh).get_decoded()[SESSION_KEY]["campaign"] == campaign.pk


def test_a_new_session_key_that_is_taken_is_drawn_again():
    """The store no longer asks whether a new key exists: the insert refuses a taken key and another
    is drawn, and the session holding it is untouched."""
    taken = SessionStore()
    taken["owner"] = "first"
    taken.create()
    keys = iter([taken.session_key, get_random_string(32, VALID_KEY_CHARS)])

    class Colliding(SessionStore):
        def _get_new_session_key(self):
            return next(keys)

    store = Colliding()
    store["owner"] = "second"
    store.create()
    assert store.session_key != taken.session_key
    assert SessionStore(taken.session_key).load() == {"owner": "first"}
    assert Colliding(store.session_key).load() == {"owner": "second"}  # signed with its class's name
